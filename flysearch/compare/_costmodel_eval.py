"""Evaluation of the cost model: leave-one-table-out ranking and the sampler that uses it.

For each held-out table, a prior is trained on the *other* tables of the same kernel (never on the
held-out one) and

* **prior alone**: the held-out table's configs are ranked by the prior; the rank of the first
  config within 1% (and 5%) of the table's optimum is the number of compiles the prior alone needs;
  ``hit@16`` says whether that rank is at most 16;
* **with the sampler**: :class:`~flysearch.samplers._costmodel.CostModelSampler` runs as a replayed study
  for several seeds; the unique compiles to first reach within 1% and 5% are recorded (``None``
  when the budget ran out first);
* **against re-timed tops** (optional): a race times each config once, so which configs lie within
  1% of the optimum is itself measured with noise; given the keys of the configs within 1% of a
  table's *re-timed* optimum (``lab/benchmarks/retime_top.py``), the compiles until the search first
  measures one of them are recorded too.

Example::

    flysearch model eval --table-dir lab/benchmarks/data/h200 --seeds 5 --budget 64
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import optuna

from flysearch.compare._metrics import expected_draws
from flysearch.costmodel import Prior, fit_prior, table_arch, table_target
from flysearch.errors import FlysearchError
from flysearch.evaluators import ReplayEvaluator
from flysearch.study import StudySpec, run_study, trial_records
from flysearch.tables import GroundTruth, Row, space_for_table

__all__ = [
    "EPSILONS",
    "HeldOut",
    "compiles_to_keys",
    "compiles_to_within",
    "evaluate_held_out",
    "leave_one_out",
    "prior_order",
    "prior_ranks",
    "random_expectation",
]

EPSILONS = (0.01, 0.05)


@dataclass
class HeldOut:
    """The result for one held-out table."""

    table: str
    configs: int
    trained_on: list[str]
    prior_rank: dict[float, int | None]
    sampler: dict[float, list[int | None]] = field(default_factory=dict)
    random_expected: dict[float, float] = field(default_factory=dict)
    #: Per seed, the compiles to first measure a config within 1% of the re-timed optimum (empty
    #: when the table has no re-timed top).
    retimed: list[int | None] = field(default_factory=list)

    @property
    def hit16(self) -> bool:
        rank = self.prior_rank.get(0.01)
        return rank is not None and rank <= 16

    def sampler_median(self, eps: float) -> float | None:
        """Median compiles over seeds (a failed seed counts as the budget + 1); ``None`` if none ran."""
        return _median(self.sampler.get(eps) or [])

    def retimed_median(self) -> float | None:
        """:meth:`sampler_median` of :attr:`retimed` (``None`` without a re-timed top)."""
        return _median(self.retimed)


def _median(runs: Sequence[int | None]) -> float | None:
    return statistics.median([r if r is not None else np.inf for r in runs]) if runs else None


def _first_within(times: Sequence[float | None], best: float, eps: float) -> int | None:
    for i, t in enumerate(times, 1):
        if t is not None and t <= best * (1 + eps):
            return i
    return None


def prior_order(prior: Prior, table: GroundTruth) -> list[Row]:
    """The table's rows in the prior's order (best predicted first)."""
    rows = list(table.rows.values())
    scores = prior.at(table_target(table)).score([r.params for r in rows], table.meta.problem,
                                                 table_arch(table))
    return [rows[j] for j in np.argsort(scores, kind="stable")]


def prior_ranks(prior: Prior, table: GroundTruth) -> dict[float, int | None]:
    """Rank (1-based) of the first config within each epsilon of the optimum, in the prior's order."""
    times = [r.time_ms if r.ok else None for r in prior_order(prior, table)]
    best = table.best().time_ms or 0.0
    return {eps: _first_within(times, best, eps) for eps in EPSILONS}


def random_expectation(table: GroundTruth) -> dict[float, float]:
    """Per epsilon, the compiles random sampling without replacement needs on average to first
    reach within it of *table*'s optimum (a failed config costs a compile too)."""
    best = table.best().time_ms or 0.0
    times = [r.time_ms for r in table.rows.values() if r.ok and r.time_ms is not None]
    return {eps: expected_draws(len(table.rows), sum(t <= best * (1 + eps) for t in times))
            for eps in EPSILONS}


def compiles_to_within(study: optuna.Study, best_ms: float) -> dict[float, int | None]:
    """Unique compiles a finished study needed to first reach within each epsilon of *best_ms*."""
    times = [r.time_ms for _, r in trial_records(study) if r.compile_index is not None]
    return {eps: _first_within(times, best_ms, eps) for eps in EPSILONS}


def compiles_to_keys(study: optuna.Study, keys: Collection[str]) -> int | None:
    """Unique compiles a finished study needed to first measure a config whose key is in *keys*."""
    compiled = [r.key for _, r in trial_records(study) if r.compile_index is not None]
    return next((i for i, key in enumerate(compiled, 1) if key in keys), None)


def _searches(table: GroundTruth, sampler: str, prior: Prior | None, seeds: Sequence[int],
              budget: int) -> Iterator[optuna.Study]:
    """Each seed's finished replayed study of *table* with *sampler* (in memory)."""
    space = space_for_table(table)
    for seed in seeds:
        storage = optuna.storages.InMemoryStorage()
        settings = StudySpec(sampler=sampler, budget=budget, seed=seed, space=space.name, table=table.name)
        run_study("eval", space, ReplayEvaluator(table), settings, shape=table.meta.shape(),
                  arch=table_arch(table), storage=storage, prior=prior, problem=table.meta.problem)
        yield optuna.load_study(study_name="eval", storage=storage)


def _search_counts(table: GroundTruth, sampler: str, prior: Prior | None, seeds: Sequence[int], budget: int,
                   retimed: Collection[str] | None = None) -> tuple[dict[float, list[int | None]],
                                                                   list[int | None]]:
    """Per seed, the compiles to each epsilon and (with the keys *retimed*) to the first of them."""
    best = table.best().time_ms or 0.0
    to_eps: dict[float, list[int | None]] = {eps: [] for eps in EPSILONS}
    to_keys: list[int | None] = []
    for study in _searches(table, sampler, prior, seeds, budget):
        for eps, reached in compiles_to_within(study, best).items():
            to_eps[eps].append(reached)
        if retimed:
            to_keys.append(compiles_to_keys(study, retimed))
    return to_eps, to_keys


def _same_kernel(held: GroundTruth, other: GroundTruth) -> bool:
    return other.name != held.name and other.meta.kernel == held.meta.kernel


def evaluate_held_out(prior: Prior, held: GroundTruth, train: Sequence[GroundTruth], seeds: Sequence[int],
                      budget: int, sampler: str | None, retimed: Collection[str] | None = None) -> HeldOut:
    """Rank *held* with *prior* (trained on *train*, named in the result) and, with a *sampler*,
    search it once per seed (and, with the keys *retimed* within 1% of its re-timed optimum, count
    the compiles to one of them): one held-out table of :func:`leave_one_out`."""
    result = HeldOut(held.name, len(held.rows), [t.name for t in train], prior_ranks(prior, held),
                     random_expected=random_expectation(held))
    if sampler is not None:
        result.sampler, result.retimed = _search_counts(
            held, sampler, prior if sampler == "costmodel" else None, seeds, budget, retimed)
    return result


def _hold_out(held: GroundTruth, train: Sequence[GroundTruth], seeds: Sequence[int], budget: int,
              sampler: str | None, retimed: Collection[str] | None, objective: str,
              model_params: dict[str, Any]) -> HeldOut:
    """Train a prior on *train*, rank *held* with it and, with a *sampler*, search it."""
    prior = fit_prior(train, objective=objective, **model_params)
    return evaluate_held_out(prior, held, train, seeds, budget, sampler, retimed)


def _run(fn: Callable[..., HeldOut], jobs: Sequence[tuple[Any, ...]], held: Sequence[GroundTruth],
         workers: int, progress: Callable[[str], None] | None) -> list[HeldOut]:
    """``fn(*job)`` for each job, in order (in *workers* processes when there are several), calling
    *progress* with the name of each job's held-out table as its result arrives."""
    def outcomes() -> Iterator[HeldOut]:
        if workers < 2 or len(jobs) < 2:
            yield from (fn(*job) for job in jobs)
            return
        from concurrent.futures import ProcessPoolExecutor

        from flysearch._lifeline import Lifeline

        # the workers end with this process, however it ends
        with ProcessPoolExecutor(min(workers, len(jobs)), initializer=Lifeline()) as pool:
            futures = [pool.submit(fn, *job) for job in jobs]
            yield from (future.result() for future in futures)

    results = []
    for table, result in zip(held, outcomes(), strict=True):
        results.append(result)
        if progress is not None:
            progress(table.name)
    return results


def _retimed(table: GroundTruth, retimed: Mapping[str, Collection[str]] | None) -> list[str] | None:
    """The keys within 1% of *table*'s re-timed optimum: *retimed*'s entry, else the table's own."""
    keys = (retimed or {}).get(table.name)
    return list(keys) if keys else (table.within_retimed(0.01) or None)


def leave_one_out(
    tables: Sequence[GroundTruth], *, seeds: Sequence[int] = (0, 1, 2, 3, 4), budget: int = 64,
    sampler: str | None = "costmodel", objective: str = "rank",
    progress: Callable[[str], None] | None = None, workers: int = 1,
    extra: Sequence[GroundTruth] = (), retimed: Mapping[str, Collection[str]] | None = None,
    **model_params: Any,
) -> list[HeldOut]:
    """Hold out each table in turn; train on the others of its kernel; rank and search it.

    The tables of *extra* are training data only: each prior trains on those of the held-out
    table's kernel too, and none of them is held out. *retimed* maps a table's name to the keys of
    the configs within 1% of its re-timed optimum; each search of that table also records the
    compiles to the first of them (:attr:`HeldOut.retimed`). A table not in *retimed* whose top
    was re-timed by its race (:meth:`GroundTruth.within_retimed`) gives its own keys.
    With *workers* > 1 the held-out tables run in that many processes; the results are the same
    and in the same order.
    """
    held_names = {t.name for t in tables}
    pool = list(tables) + [t for t in extra if t.name not in held_names]
    jobs = [(held, [t for t in pool if _same_kernel(held, t)]) for held in tables]
    jobs = [(held, train) for held, train in jobs if train]
    if not jobs:
        raise FlysearchError(
            f"Leave-one-table-out needs two tables of one kernel; the {len(tables)} given have none "
            "to train on."
        )
    return _run(_hold_out, [(held, train, list(seeds), budget, sampler, _retimed(held, retimed), objective,
                             model_params) for held, train in jobs], [held for held, _ in jobs],
                workers, progress)
