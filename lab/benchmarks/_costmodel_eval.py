"""The cost model's evaluations that only the lab runs, over flysearch's public API: a fixed test set
(:func:`evaluate_test_set`), one sampler's compiles on one table (:func:`sampler_compiles`), and how
far another GPU's or shape's measurements put a table's optimum (:func:`transfer_ranks`).

The leave-one-table-out evaluation users run (``flysearch model eval``) is
:func:`flysearch.compare.leave_one_out`; these reuse its one held-out table,
:func:`flysearch.compare.evaluate_held_out`.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import numpy as np

from flysearch.compare import EPSILONS, HeldOut, evaluate_held_out, prior_ranks
from flysearch.costmodel import Prior, fit_prior
from flysearch.tables import GroundTruth

__all__ = ["evaluate_test_set", "sampler_compiles", "transfer_ranks"]


def _first_within(times: Sequence[float | None], best: float, eps: float) -> int | None:
    """1-based index of the first of *times* within *eps* of *best* (``None``: none is)."""
    return next((i for i, t in enumerate(times, 1) if t is not None and t <= best * (1 + eps)), None)


def evaluate_test_set(
    train: Sequence[GroundTruth], tests: Sequence[GroundTruth], *, seeds: Sequence[int] = (0, 1, 2, 3, 4),
    budget: int = 64, sampler: str | None = "costmodel", objective: str = "rank",
    progress: Callable[[str], None] | None = None, workers: int = 1,
    retimed: Mapping[str, Collection[str]] | None = None, **model_params: Any,
) -> list[HeldOut]:
    """Train one prior per kernel on *train*; rank and search each table of *tests* with it.

    The tables of *tests* are a test set: no prior is trained on any of them (a table named in both
    is left out of the training), and a test table whose kernel has no other table in *train* is
    skipped. The results are the same with any *workers*. *retimed* maps a table's name to the keys
    within 1% of its re-timed optimum (default: the table's own re-timed top, if its race made one).
    """
    test_names = {t.name for t in tests}
    priors: dict[str, tuple[Prior, list[GroundTruth]]] = {}
    jobs = []
    for held in tests:
        kernel = held.meta.kernel
        if kernel not in priors:
            same = [t for t in train if t.meta.kernel == kernel and t.name not in test_names]
            if not same:
                continue
            priors[kernel] = (fit_prior(same, objective=objective, **model_params), same)
        prior, same = priors[kernel]
        keys = (retimed or {}).get(held.name)
        jobs.append((prior, held, same, list(seeds), budget, sampler,
                     list(keys) if keys else (held.within_retimed(0.01) or None)))
    if workers < 2 or len(jobs) < 2:
        outcomes = (evaluate_held_out(*job) for job in jobs)
        return _reported(outcomes, jobs, progress)
    with ProcessPoolExecutor(min(workers, len(jobs))) as pool:
        futures = [pool.submit(evaluate_held_out, *job) for job in jobs]
        return _reported((f.result() for f in futures), jobs, progress)


def _reported(outcomes: Any, jobs: Sequence[tuple[Any, ...]],
              progress: Callable[[str], None] | None) -> list[HeldOut]:
    """The results in the order of *jobs*, calling *progress* with each held-out table's name."""
    results = []
    for job, result in zip(jobs, outcomes, strict=True):
        results.append(result)
        if progress is not None:
            progress(job[1].name)
    return results


def sampler_compiles(table: GroundTruth, sampler: str, *, prior: Prior, seeds: Sequence[int],
                     budget: int) -> dict[float, list[int | None]]:
    """Run *sampler* on *table* (replayed, in memory) per seed; compiles to each epsilon."""
    return evaluate_held_out(prior, table, [], seeds, budget, sampler).sampler


def transfer_ranks(held: GroundTruth, others: Sequence[GroundTruth],
                   prior: Prior | None = None) -> dict[str, dict[float, int | None]]:
    """How far another GPU's (or shape's) measurements put *held*'s optimum: per epsilon, the rank
    (1-based) of *held*'s first config within it when *held*'s configs are ordered

    * by the times measured on each table of *others* (keyed by that table's name): what copying
      that table's order would give;
    * ``"consensus"``: by the mean over *others* of log(time / that table's best);
    * ``"prior"``: by *prior* (when given), e.g. one trained on *others*.

    A config that failed on, or is missing from, a table goes last in the orders that use it.
    """
    keys = list(held.rows)
    target = [held.rows[k].time_ms if held.rows[k].ok else None for k in keys]
    best = held.best().time_ms or 0.0

    def ranks(scores: dict[str, float]) -> dict[float, int | None]:
        order = sorted(range(len(keys)), key=lambda i: (keys[i] not in scores, scores.get(keys[i], 0.0)))
        return {eps: _first_within([target[i] for i in order], best, eps) for eps in EPSILONS}

    out: dict[str, dict[float, int | None]] = {}
    logs: dict[str, list[float]] = {k: [] for k in keys}
    for other in others:
        measured = {r.key: r.time_ms for r in other.rows.values() if r.ok and r.time_ms}
        out[other.name] = ranks(measured)
        floor = min(measured.values())
        for k in keys:
            logs[k].append(float(np.log(measured[k] / floor)) if k in measured else np.inf)
    out["consensus"] = ranks({k: float(np.mean(v)) for k, v in logs.items() if v and np.isfinite(v).all()})
    if prior is not None:
        out["prior"] = prior_ranks(prior, held)
    return out
