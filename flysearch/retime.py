"""Confirming a race's top: re-time the fastest configs in interleaved rounds.

An exhaustive race times each config once. At the top of a table, where configs differ by 1-3%,
that one measurement decides which config is "the best" and which are "within 1%", and a single
timing can sit several percent from the config's typical time (clock and thermal state, the
neighbouring kernels in the queue). So after a shape is raced, the configs within *within* of its
best (at least *min_k*, at most *max_k*) are timed again, once per round for *rounds* rounds, in a
fresh random order each round, so that a slow or fast stretch of the GPU falls on different configs
in different rounds. Each one's median over the rounds is its confirmed time; it is stored in the
row's ``extra["retime"]`` (:data:`flysearch.tables.RETIME`) next to the race's time, which is kept.
:meth:`flysearch.tables.GroundTruth.ranked` and :meth:`~flysearch.tables.GroundTruth.confirmed_best`
then order the table by the better measurement, and exports and summaries use it.

A config that fails in any round (a crash, a wrong result) is not timed again and is recorded as
failed: it is never confirmed as the best.

Example:
    >>> from flysearch.tables import Row
    >>> rows = [Row("a", {}, "ok", 1.00), Row("b", {}, "ok", 1.01)]
    >>> times = {"a": iter([1.03, 1.02, 1.04]), "b": iter([1.00, 1.01, 0.99])}
    >>> samples, failed = interleaved_rounds(rows, lambda r: next(times[r.key]), rounds=3, seed=0)
    >>> [r.extra["retime"]["median_ms"] for r in with_rounds(rows, samples, failed)]
    [1.03, 1.0]
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from flysearch.errors import FlysearchError
from flysearch.tables import RETIME, GroundTruth, Row

__all__ = ["RetimeSettings", "interleaved_rounds", "top_rows", "with_rounds"]


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
    rows: Sequence[Row], time_one: Callable[[Row], float | str], rounds: int, seed: int = 0,
) -> tuple[dict[str, list[float]], dict[str, str]]:
    """Time each of *rows* once per round, *rounds* rounds, each round in a fresh random order.

    *time_one* times one config and answers its time in ms, or a one-line reason when it failed;
    a config that fails is dropped from the later rounds.

    Returns:
        The times of each config (by key, in round order) and the failure reason of those that
        failed.
    """
    samples: dict[str, list[float]] = {r.key: [] for r in rows}
    failed: dict[str, str] = {}
    rng = random.Random(seed)
    for _ in range(rounds):
        order = [r for r in rows if r.key not in failed]
        rng.shuffle(order)
        for r in order:
            answer = time_one(r)
            if isinstance(answer, str):
                failed[r.key] = answer
            else:
                samples[r.key].append(float(answer))
    return samples, failed


def with_rounds(rows: Sequence[Row], samples: dict[str, list[float]], failed: dict[str, str]) -> list[Row]:
    """Copies of *rows* whose ``extra["retime"]`` holds their rounds and median, or the failure."""
    out = []
    for r in rows:
        times = samples.get(r.key, [])
        record: dict[str, object] = {"rounds_ms": [round(t, 6) for t in times]}
        if r.key in failed:
            record["failed"] = failed[r.key]
        elif times:
            record["median_ms"] = statistics.median(times)
        else:
            continue
        out.append(replace(r, extra={**r.extra, RETIME: record}))
    return out
