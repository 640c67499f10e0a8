"""Re-timing in interleaved rounds: confirm a race's top, and decide a study's winner.

One timing of a small kernel is noisy (on the H200: 0.15-2% run to run, up to 6% between
machines), so a single measurement cannot tell apart configs 1-3% apart at the top. Both users of
this module time a few configs again, once per round for several rounds, each round in a fresh
random order, so that a slow or fast stretch of the GPU (clocks, temperature, the neighbouring
kernels in the queue) falls on different configs in different rounds:

* **a race** (:func:`interleaved_rounds`, :func:`with_rounds`): after a shape is raced, the configs
  within *within* of its best (at least *min_k*, at most *max_k*, :func:`top_rows`) are re-timed;
  each one's median is stored in the row's ``extra["retime"]``
  (:data:`flysearch.tables.RETIME`) next to the race's time, which is kept.
  :meth:`flysearch.tables.GroundTruth.ranked` and
  :meth:`~flysearch.tables.GroundTruth.confirmed_best` then order the table by the better
  measurement, and exports and summaries use it.
* **a live study** (:func:`retime_finalists`, :func:`decide`): before a study reports its winner,
  its top configs are re-timed. The winner is the config with the lowest median; its spread is
  reported; every config whose median is within the noise of the winner's forms the **tie set**:
  the search cannot tell them apart. The noise is the larger of a floor (1% by default) and the
  winner's own relative spread (``(max - min) / median`` over its rounds).

A config that fails in any round (a crash, a wrong result) is not timed again and is recorded as
failed: it is never confirmed as the best, nor named the winner.

Example:
    >>> from flysearch.tables import Row
    >>> rows = [Row("a", {}, "ok", 1.00), Row("b", {}, "ok", 1.01)]
    >>> times = {"a": iter([1.03, 1.02, 1.04]), "b": iter([1.00, 1.01, 0.99])}
    >>> samples, failed = interleaved_rounds(rows, lambda r: next(times[r.key]), rounds=3, seed=0)
    >>> [r.extra["retime"]["median_ms"] for r in with_rounds(rows, samples, failed)]
    [1.03, 1.0]
    >>> report = decide({"a": [1.00, 1.01, 0.99], "b": [1.005, 1.0, 1.01], "c": [1.2, 1.21, 1.19]})
    >>> report.winner, report.tie_set
    ('a', ['a', 'b'])
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, TypeVar

from flysearch.errors import FlysearchError
from flysearch.tables import RETIME, GroundTruth, Row

__all__ = ["FinalistReport", "FinalistStats", "RetimeSettings", "decide", "interleaved_rounds",
           "retime_finalists", "rounds_record", "top_rows", "with_rounds"]

T = TypeVar("T")


@dataclass(frozen=True)
class RetimeSettings:
    """Which configs a race re-times after a shape, and how often.

    Attributes:
        rounds: Timings per config (each in its own round); at least 2.
        within: Re-time the configs within this fraction of the race's best (0.05: 5%).
        min_k: At least this many configs (the fastest), even beyond *within*.
        max_k: At most this many configs.
        seed: Seed of the rounds' orders.
    """

    rounds: int = 10
    within: float = 0.05
    min_k: int = 8
    max_k: int = 32
    seed: int = 0

    def __post_init__(self) -> None:
        if self.rounds < 2 or self.min_k < 1 or self.max_k < self.min_k or not 0 <= self.within < 1:
            raise FlysearchError(
                f"Bad re-time settings (rounds {self.rounds}, within {self.within}, min {self.min_k}, "
                f"max {self.max_k}): rounds must be >= 2, 1 <= min <= max, and 0 <= within < 1."
            )


def top_rows(table: GroundTruth, within: float, min_k: int, max_k: int) -> list[Row]:
    """The table's fastest correct configs by the race's times: those within *within* of its best,
    clamped to [*min_k*, *max_k*] (fewer when the table has fewer correct configs)."""
    ok = sorted(table.ok_rows(), key=lambda r: (r.time_ms, r.key))
    if not ok:
        return []
    best = ok[0].time_ms or 0.0
    n = sum(1 for r in ok if (r.time_ms or 0.0) <= best * (1 + within))
    return ok[: max(min_k, min(n, max_k))]


def interleaved_rounds(
    items: Sequence[T], time_one: Callable[[T], float | str | None], rounds: int, seed: int = 0, *,
    key: Callable[[T], str] = lambda row: row.key,  # type: ignore[attr-defined]
) -> tuple[dict[str, list[float]], dict[str, str]]:
    """Time each of *items* (table rows, by default) once per round, *rounds* rounds, each round
    in a fresh random order.

    *time_one* times one config and answers its time in ms, or a one-line reason (or ``None``)
    when it failed; a config that fails is dropped from the later rounds.

    Returns:
        The times of each config (by *key*, in round order) and the failure reason of those that
        failed.
    """
    samples: dict[str, list[float]] = {key(item): [] for item in items}
    failed: dict[str, str] = {}
    rng = random.Random(seed)
    for r in range(rounds):
        order = [item for item in items if key(item) not in failed]
        rng.shuffle(order)
        for item in order:
            answer = time_one(item)
            if answer is None or isinstance(answer, str):
                failed[key(item)] = answer or f"failed in re-timing round {r + 1}"
            else:
                samples[key(item)].append(float(answer))
    return samples, failed


def rounds_record(times: Sequence[float], failed: str | None = None) -> dict[str, Any]:
    """What one entry's interleaved rounds leave behind: its times (``rounds_ms``) and their median
    (``median_ms``), or the reason it *failed* (then no median)."""
    record: dict[str, Any] = {"rounds_ms": [round(t, 6) for t in times]}
    if failed is not None:
        record["failed"] = failed
    elif times:
        record["median_ms"] = statistics.median(times)
    return record


def with_rounds(rows: Sequence[Row], samples: dict[str, list[float]], failed: dict[str, str]) -> list[Row]:
    """Copies of *rows* whose ``extra["retime"]`` holds their :func:`rounds_record` (rows with
    neither a time nor a failure are left out)."""
    out = []
    for r in rows:
        times = samples.get(r.key, [])
        if r.key in failed or times:
            out.append(replace(r, extra={**r.extra, RETIME: rounds_record(times, failed.get(r.key))}))
    return out


@dataclass(frozen=True)
class FinalistStats:
    """One finalist's re-timed rounds."""

    key: str
    median_ms: float
    min_ms: float
    max_ms: float
    rounds: int
    search_ms: float | None = None

    @property
    def spread(self) -> float:
        """``(max - min) / median`` over the rounds."""
        return (self.max_ms - self.min_ms) / self.median_ms if self.median_ms > 0 else 0.0


@dataclass
class FinalistReport:
    """The winner, its spread, and the configs tied with it."""

    winner: str
    winner_ms: float
    spread: float
    noise: float
    tie_set: list[str]
    finalists: list[FinalistStats] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["finalists"] = [{**asdict(f), "spread": f.spread} for f in self.finalists]
        return out


def decide(samples: Mapping[str, Sequence[float]], *, noise_floor: float = 0.01,
           search_ms: Mapping[str, float] | None = None) -> FinalistReport:
    """Winner, spread and tie set from each finalist's re-timed samples (ms).

    Raises:
        ValueError: no finalist has a sample.
    """
    stats = [
        FinalistStats(key, statistics.median(v), min(v), max(v), len(v), (search_ms or {}).get(key))
        for key, v in samples.items() if v
    ]
    if not stats:
        raise ValueError("No finalist has a timing; nothing to decide.")
    stats.sort(key=lambda s: (s.median_ms, s.key))
    best = stats[0]
    noise = max(noise_floor, best.spread)
    ties = [s.key for s in stats if s.median_ms <= best.median_ms * (1.0 + noise)]
    return FinalistReport(best.key, best.median_ms, best.spread, noise, ties, stats)


def retime_finalists(keys: Sequence[str], time_one: Callable[[str], float | None], *, rounds: int = 5,
                     seed: int | None = 0, noise_floor: float = 0.01,
                     search_ms: Mapping[str, float] | None = None) -> FinalistReport:
    """Re-time a study's finalists *keys* in *rounds* interleaved rounds with
    ``time_one(key) -> ms`` (``None`` for a failed timing) and :func:`decide`.

    A finalist that fails in any round is left out (listed in ``failed``), since a config that fails
    sometimes cannot win.
    """
    samples, failed = interleaved_rounds(keys, time_one, rounds, seed, key=lambda k: k)  # type: ignore[arg-type]
    for k in failed:
        samples.pop(k, None)
    report = decide(samples, noise_floor=noise_floor, search_ms=search_ms)
    report.failed = failed
    return report
