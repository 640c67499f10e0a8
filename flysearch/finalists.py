"""Finalists: re-time a study's best configs in fresh interleaved rounds before naming a winner.

One timing of a small kernel is noisy (on the H200: 0.15-2% run to run, up to 6% between
machines), so the config a search found fastest may only have been lucky. Before a study reports
its winner, its top *k* configs are re-timed in *rounds* rounds; every round times each finalist
once, in a fresh random order, so drift (clocks, temperature) hits them all alike. The winner is the
config with the lowest median; its spread is reported; every config whose median is within the
noise of the winner's forms the **tie set**: the search cannot tell them apart.

The noise is the larger of a floor (1% by default) and the winner's own relative spread
(``(max - min) / median`` over its rounds).

Example:
    >>> from flysearch.finalists import decide
    >>> report = decide({"a": [1.00, 1.01, 0.99], "b": [1.005, 1.0, 1.01], "c": [1.2, 1.21, 1.19]})
    >>> report.winner, report.tie_set
    ('a', ['a', 'b'])
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["FinalistReport", "FinalistStats", "decide", "retime"]


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


def retime(keys: Sequence[str], time_one: Callable[[str], float | None], *, rounds: int = 5,
           seed: int | None = 0, noise_floor: float = 0.01,
           search_ms: Mapping[str, float] | None = None) -> FinalistReport:
    """Re-time *keys* in *rounds* interleaved rounds with ``time_one(key) -> ms`` and decide.

    ``time_one`` returns ``None`` for a failed timing; a finalist that fails in any round is left
    out (listed in ``failed``), since a config that fails sometimes cannot win.
    """
    rng = random.Random(seed)
    samples: dict[str, list[float]] = {k: [] for k in keys}
    failed: dict[str, str] = {}
    for r in range(rounds):
        order = [k for k in keys if k not in failed]
        rng.shuffle(order)
        for key in order:
            ms = time_one(key)
            if ms is None:
                failed[key] = f"failed in re-timing round {r + 1}"
                samples.pop(key, None)
            else:
                samples[key].append(ms)
    report = decide(samples, noise_floor=noise_floor, search_ms=search_ms)
    report.failed = failed
    return report
