"""The arithmetic of a sampler comparison: compiles to reach the optimum, the random reference, scores.

Every run is reduced to a :class:`Trajectory`: after each *unique compile* ``i`` (1-based), the best
successful time so far and the simulated seconds spent. From trajectories of many seeds follow:

* compiles (and simulated seconds) to first reach within ``eps`` of the table optimum, summarized
  by median, inter-quartile range, 90th percentile and success rate within the budget. A run that
  never reaches the target is *censored*: it counts as ``inf`` in the quantiles, so a median of
  ``inf`` means that fewer than half the seeds succeeded;
* the fraction of the optimum reached after 25, 50, 100 and 200 compiles (``optimum / best``);
* the analytic reference of random sampling without replacement (:func:`expected_draws`);
* seeded bootstrap confidence intervals (:func:`bootstrap_ci`);
* the performance score of Willemsen et al. (:func:`performance_score`).

Example:
    >>> expected_draws(n=10, g=1)
    5.5
    >>> t = Trajectory(best_ms=(4.0, 2.0, 1.0), cost_s=(1.0, 2.0, 3.0))
    >>> t.compiles_to(1.0 * 1.01), t.seconds_to(2.0)
    (3, 2.0)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "CURVE_AT",
    "EPSILONS",
    "MILESTONES",
    "QuantileStats",
    "Trajectory",
    "bootstrap_ci",
    "expected_draws",
    "expected_seconds",
    "performance_score",
    "prob_found_within",
    "quantile_stats",
    "random_baseline_curve",
    "strategy_curve",
    "transfer_matrix",
]

EPSILONS: tuple[float, ...] = (0.0, 0.01, 0.02, 0.05)
MILESTONES: tuple[int, ...] = (25, 50, 100, 200)
# The early part of the curve (regret after 1, 2, 4, ... compiles), in the CSV summaries only.
CURVE_AT: tuple[int, ...] = (1, 2, 4, 8, 16, 32)
# Two times that differ by less than this relative amount are the same time (float noise of a
# replayed table: the optimum is compared with itself after a JSON round trip).
_REL_TOL = 1e-9


@dataclass(frozen=True)
class Trajectory:
    """One run, compile by compile.

    Attributes:
        best_ms: Best successful time after each unique compile (``nan`` while none succeeded).
        cost_s: Cumulative simulated seconds after each unique compile with a cold compile cache:
            each compiled config's compile seconds (as the race measured them) plus its timing
            seconds.
        warm_s: The same with a warm compile cache: the timing seconds alone (``None`` for a run
            stored before flysearch recorded them).
    """

    best_ms: tuple[float, ...]
    cost_s: tuple[float, ...]
    warm_s: tuple[float, ...] | None = None

    @property
    def compiles(self) -> int:
        return len(self.best_ms)

    def compiles_to(self, target_ms: float) -> int | None:
        """The first unique compile after which the best time is at most *target_ms* (``None``: never)."""
        limit = target_ms * (1.0 + _REL_TOL)
        for i, best in enumerate(self.best_ms):
            if best <= limit:  # nan compares false
                return i + 1
        return None

    def seconds_to(self, target_ms: float) -> float | None:
        """Simulated seconds spent when :meth:`compiles_to` *target_ms* is reached (``None``: never)."""
        i = self.compiles_to(target_ms)
        return None if i is None else self.cost_s[i - 1]

    def warm_seconds_to(self, target_ms: float) -> float | None:
        """Seconds with a warm compile cache when :meth:`compiles_to` *target_ms* is reached
        (``None``: never, or not recorded: :meth:`warm_recorded` tells which)."""
        i = self.compiles_to(target_ms)
        return None if i is None or self.warm_s is None else self.warm_s[i - 1]

    @property
    def warm_recorded(self) -> bool:
        return self.warm_s is not None

    def best_at(self, k: int) -> float:
        """Best time after *k* compiles; a run that stopped earlier keeps its last value."""
        if not self.best_ms or k < 1:
            return math.nan
        return self.best_ms[min(k, self.compiles) - 1]

    def fraction_at(self, k: int, optimum_ms: float) -> float:
        """``optimum / best`` after *k* compiles (0 while nothing succeeded)."""
        best = self.best_at(k)
        return 0.0 if math.isnan(best) else optimum_ms / best

    @classmethod
    def from_steps(cls, steps: Sequence[tuple[float | None, float]]) -> Trajectory:
        """Build from ``(time_ms or None, cumulative cost_s)`` per unique compile, in compile order."""
        best, out_best, out_cost = math.inf, [], []
        for time_ms, cost in steps:
            if time_ms is not None and time_ms < best:
                best = time_ms
            out_best.append(best if best < math.inf else math.nan)
            out_cost.append(float(cost))
        return cls(tuple(out_best), tuple(out_cost))


# -- summaries over seeds -------------------------------------------------------------------------


@dataclass(frozen=True)
class QuantileStats:
    """Quantiles of a censored sample (``inf`` = not reached within the budget).

    Attributes:
        n: Runs.
        success: Fraction of runs that reached the target.
        median, q25, q75, p90: Quantiles (``inf`` where more runs failed than the quantile allows).
        ci_low, ci_high: Bootstrap 95% confidence interval of the median.
    """

    n: int
    success: float
    median: float
    q25: float
    q75: float
    p90: float
    ci_low: float
    ci_high: float


def quantile_stats(values: Sequence[float | None], *, seed: int = 0, resamples: int = 2000) -> QuantileStats:
    """Median, IQR, 90th percentile, success rate and a bootstrap CI of the median.

    Args:
        values: One value per run; ``None`` (or ``inf``) for a run that did not succeed.
        seed: Seed of the bootstrap.
        resamples: Bootstrap resamples.
    """
    arr = np.array([math.inf if v is None else float(v) for v in values], dtype=float)
    if arr.size == 0:
        nan = math.nan
        return QuantileStats(0, nan, nan, nan, nan, nan, nan, nan)
    low, high = bootstrap_ci(arr, _median, seed=seed, resamples=resamples)
    return QuantileStats(
        n=int(arr.size),
        success=float(np.isfinite(arr).mean()),
        median=_median(arr),
        q25=_order_quantile(arr, 0.25),
        q75=_order_quantile(arr, 0.75),
        p90=_order_quantile(arr, 0.90),
        ci_low=low,
        ci_high=high,
    )


def _order_quantile(arr: np.ndarray, q: float) -> float:
    """Linear-interpolated quantile over sorted values, where any ``inf`` involved gives ``inf``."""
    s = np.sort(arr)
    pos = q * (s.size - 1)
    lo, hi = math.floor(pos), math.ceil(pos)
    if not (math.isfinite(s[lo]) and math.isfinite(s[hi])):
        return math.inf
    return float(s[lo] + (s[hi] - s[lo]) * (pos - lo))


def _median(arr: np.ndarray) -> float:
    return _order_quantile(np.asarray(arr, dtype=float), 0.5)


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    statistic: Callable[[np.ndarray], float],
    *,
    seed: int = 0,
    resamples: int = 2000,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval of *statistic* (seeded, so it re-runs identically).

    ``inf`` values (censored runs) are resampled like any other; a bound is ``inf`` when that
    share of resamples has an infinite statistic.
    """
    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, arr.size, size=(resamples, arr.size))
    stats = np.sort(np.array([statistic(arr[row]) for row in idx]))
    alpha = (1.0 - level) / 2.0
    return _order_quantile(stats, alpha), _order_quantile(stats, 1.0 - alpha)


# -- random sampling without replacement: the analytic reference ----------------------------------


def expected_draws(n: int, g: int) -> float:
    """Expected draws without replacement until the first of *g* good items among *n*.

    The position of the first good item is a negative-hypergeometric variable: the ``n - g`` bad
    items fall into ``g + 1`` gaps around the good ones, each equally likely, so the first gap holds
    ``(n - g) / (g + 1)`` of them on average and ``E = (n - g) / (g + 1) + 1 = (n + 1) / (g + 1)``.
    """
    if not 0 < g <= n:
        raise ValueError(f"Need 0 < g <= n good items, got g={g}, n={n}.")
    return (n + 1) / (g + 1)


def prob_found_within(n: int, g: int, k: int) -> float:
    """Probability that *k* draws without replacement from *n* include one of the *g* good items.

    ``1 - C(n - g, k) / C(n, k)``, computed as a product to stay exact for large *n*.
    """
    if not 0 < g <= n:
        raise ValueError(f"Need 0 < g <= n good items, got g={g}, n={n}.")
    if k >= n - g + 1:
        return 1.0
    miss = 1.0
    for i in range(k):
        miss *= (n - g - i) / (n - i)
    return 1.0 - miss


def expected_seconds(bad_costs: Sequence[float], good_costs: Sequence[float]) -> float:
    """Expected simulated seconds of random sampling without replacement until the first good item.

    Each bad item precedes the first good one with probability ``1 / (g + 1)`` (it is equally likely
    to fall in any of the ``g + 1`` gaps), and the first good item is any good one with equal
    probability: ``E[T] = sum(bad) / (g + 1) + mean(good)``.
    """
    g = len(good_costs)
    if g == 0:
        raise ValueError("Need at least one good item.")
    return float(sum(bad_costs)) / (g + 1) + float(sum(good_costs)) / g


# -- the performance score of Willemsen et al. (2024) -----------------------------------------------


def random_baseline_curve(times_ms: Sequence[float], ks: Sequence[int]) -> np.ndarray:
    """The calculated random-search curve of the autotuning methodology (best time after k draws).

    With the N valid times sorted worst first, the expected rank of the best of ``k`` draws without
    replacement is ``k (N + 1) / (k + 1)``; the curve takes the time at that (rounded, 0-based,
    capped at ``N - 1``) index. Source: ``RandomSearchCalculatedBaseline._redwhite_index`` in
    AutoTuningAssociation/autotuning_methodology, ``src/autotuning_methodology/baseline.py``.
    """
    worst_first = np.sort(np.asarray(times_ms, dtype=float))[::-1]
    n = worst_first.size
    idx = [min(n - 1, round(k * (n + 1) / (k + 1))) for k in ks]
    return worst_first[idx]


def strategy_curve(
    trajectories: Sequence[Trajectory], times_ms: Sequence[float], ks: Sequence[int]
) -> np.ndarray:
    """The methodology's curve of a stochastic strategy: at each k, the time at the median rank.

    Each run's best time after ``k`` compiles is placed in the distribution of valid times (best
    first); the median index over runs (rounded) is looked up again. A run without a success yet
    sits at the worst rank. Source: ``StochasticOptimizationAlgorithm.get_curve_over_fevals`` in
    autotuning_methodology's ``curves.py``.
    """
    best_first = np.sort(np.asarray(times_ms, dtype=float))
    out = np.empty(len(ks))
    for j, k in enumerate(ks):
        vals = np.array([t.best_at(k) for t in trajectories], dtype=float)
        vals = np.where(np.isnan(vals), best_first[-1], vals)
        ranks = np.searchsorted(best_first, vals * (1.0 - _REL_TOL), side="left")
        out[j] = best_first[min(int(np.round(np.median(ranks))), best_first.size - 1)]
    return out


def performance_score(trajectories: Sequence[Trajectory], times_ms: Sequence[float], budget: int) -> float:
    """The performance score of Willemsen, van Nieuwpoort and van Werkhoven (2024), over compiles.

    Source: "A methodology for comparing optimization algorithms for auto-tuning", Future Generation
    Computer Systems 159 (2024), as implemented in AutoTuningAssociation/autotuning_methodology
    (``baseline.py`` ``Baseline.get_standardised_curves``; ``report_experiments.py``
    ``get_strategy_scores``). The strategy curve ``s`` (:func:`strategy_curve`) is standardised
    against the calculated random-search curve ``r`` (:func:`random_baseline_curve`) and the optimum
    ``o``: ``P(k) = (s - r) / (o - r)``, so 0 is random search, 1 the optimum, negative worse than
    random; the score is the mean of ``P`` over the range. Here the range is unique compiles
    ``1..budget`` (the methodology's feval axis) rather than the time range between its cutoff
    percentiles; points where random search already sits at the optimum (``o == r``) are skipped.
    Scores of several tables aggregate by their mean, as in the methodology.
    """
    ks = list(range(1, budget + 1))
    r = random_baseline_curve(times_ms, ks)
    s = strategy_curve(trajectories, times_ms, ks)
    o = float(np.min(np.asarray(times_ms, dtype=float)))
    keep = np.abs(o - r) > abs(o) * _REL_TOL
    if not keep.any():
        return math.nan
    return float(np.mean((s[keep] - r[keep]) / (o - r[keep])))


# -- the key mistake: one shape's winner run on another shape ----------------------------------------


def transfer_matrix(winners: Sequence[str], times: Sequence[dict[str, float | None]]) -> np.ndarray:
    """Slowdowns of running each table's winner on every other table.

    Args:
        winners: The best config key of each table.
        times: Per table, the time of each config key (``None`` for a failed config).

    Returns:
        ``m[i, j] = times[j][winners[i]] / min(times[j])``: the cost of running on table ``j`` the
        config tuned for table ``i`` (1 on the diagonal; ``inf`` where that config failed or was not
        valid on table ``j``).

    Example:
        >>> transfer_matrix(["a", "b"], [{"a": 1.0, "b": 2.0}, {"a": 3.0, "b": 1.5}]).tolist()
        [[1.0, 2.0], [2.0, 1.0]]
    """
    n = len(winners)
    out = np.full((n, n), math.inf)
    for j, table in enumerate(times):
        ok = [t for t in table.values() if t is not None]
        best = min(ok)
        for i, key in enumerate(winners):
            t = table.get(key)
            if t is not None:
                out[i, j] = t / best
    return out
