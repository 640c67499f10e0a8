"""``cmaes``: Optuna's CMA-ES with margin, restarted with a doubled population when it has converged.

Plain CMA-ES on integer (ordinal) parameters shrinks its step size until every sample rounds to a
config the study already compiled: the study then answers one duplicate after another and stops
after ``max_idle`` suggestions in a row without a new compile, far short of its budget. Two things
keep it spending the budget:

* **CMA-ES with margin** (``CmaEsSampler(with_margin=True)``) keeps the probability of leaving the
  current integer value from vanishing, so a discrete coordinate is not frozen early.
* **Restarts with an increasing population** (IPOP): when ``patience`` suggestions in a row brought
  no new feasible config, the search has converged; a new CMA-ES starts again from the centre of
  the space, with a seed of its own and twice the previous population (at most 16 times the
  default). Optuna dropped its own ``restart_strategy`` in 4.4, so the restarts are done here: each
  restart is a ``CmaEsSampler`` whose state lives under system attributes of its own
  (``cmawm:r<n>:``). Starting a restart at a random feasible config instead (Optuna's ``x0``,
  deprecated since 4.9) made no difference on six H200 tables (8 seeds, budget 100).

Whether a restart is due is computed from the study's finished trials alone, in trial order, so a
resumed study and every worker of a shared study find the same restarts, and a seed gives the same
suggestions run after run.

Example:
    >>> from flysearch.samplers._cmaes import RestartingCmaEsSampler
    >>> RestartingCmaEsSampler(seed=0).restarts
    0
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
import optuna
from optuna.distributions import FloatDistribution, IntDistribution
from optuna.samplers import BaseSampler

from flysearch._optuna import CmaEsHooks, cached_trials, study_id, study_storage

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.study import Study
    from optuna.trial import FrozenTrial, TrialState

    from flysearch.space import Encoding, Space

__all__ = ["FinishedOnceCmaEsSampler", "PlainMarginCmaEsSampler", "RestartingCmaEsSampler"]


class Context(Protocol):
    """What the sampler reads of :class:`flysearch.samplers.SearchContext` (named here by its
    parts, so that this module does not import the module that builds the samplers)."""

    @property
    def space(self) -> Space: ...
    @property
    def encoding(self) -> Encoding: ...
    @property
    def distributions(self) -> Mapping[str, BaseDistribution]: ...
    @property
    def keys(self) -> list[str]: ...


PATIENCE = 100
"""Suggestions in a row without a new feasible config after which CMA-ES restarts: well below a
study's default ``max_idle`` (1000), so that a restart comes before the study gives up, and about
ten generations of the default population (a search that still moves finds a new config sooner)."""

MAX_DOUBLINGS = 4
"""A restart's population is the default one times ``2**min(restart, MAX_DOUBLINGS)``, so that its
patience (at least two generations) stays below a study's default ``max_idle``."""


class FinishedOnceCmaEsSampler(CmaEsHooks):
    """Optuna's ``CmaEsSampler``, unchanged in what it proposes, that sorts each finished trial once.

    At every suggestion Optuna's sampler walks every trial of the study twice: for the completed
    ones, then for those of the current generation. A converged CMA-ES answers duplicates for
    thousands of trials (until the study's ``max_idle``), so a run costs time quadratic in its
    trials: 67 s for one run of 4,728 trials on a split-K table, 58% of it in those two walks. A
    finished trial never changes, so this sampler files each one once, in trial order, under its
    generation, and hands Optuna the same lists (the trials after the first unfinished one are read
    afresh, as a shared study may finish them in any order). Takes ``CmaEsSampler``'s arguments.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._study_key: tuple[int, int] | None = None
        self._read = 0  # trials before this position are finished and filed
        self._complete: list[FrozenTrial] = []
        self._generations: dict[Any, list[FrozenTrial]] = {}
        self._last: tuple[list[FrozenTrial], list[FrozenTrial]] | None = None  # (list handed out, its tail)

    def completed_trials(self, study: Study) -> list[FrozenTrial]:
        if self.consider_pruned_trials:
            return super().completed_trials(study)
        from optuna.trial import TrialState

        trials = cached_trials(study)
        key = (id(study_storage(study)), study_id(study))
        if key != self._study_key or len(trials) < self._read:
            self._study_key, self._read, self._complete, self._generations = key, 0, [], {}
        attr = self.generation_attr
        while self._read < len(trials) and trials[self._read].state.is_finished():
            t = trials[self._read]
            if t.state == TrialState.COMPLETE:
                self._complete.append(t)
                self._generations.setdefault(t.system_attrs.get(attr, -1), []).append(t)
            self._read += 1
        tail = [t for t in trials[self._read:] if t.state == TrialState.COMPLETE]
        complete = self._complete + tail
        self._last = (complete, tail)
        return complete

    def generation_trials(self, trials: list[FrozenTrial], generation: int) -> list[FrozenTrial]:
        if self._last is None or trials is not self._last[0]:
            return super().generation_trials(trials, generation)
        attr = self.generation_attr
        return self._generations.get(generation, []) + [
            t for t in self._last[1] if t.system_attrs.get(attr, -1) == generation]


class RestartingCmaEsSampler(BaseSampler):
    """CMA-ES with margin that restarts, with a doubled population, when it stops finding configs.

    Args:
        context: The search context; its feasible configs tell a new config from a duplicate or a
            config the constraints reject, and its distributions give the default population.
            Without it, a suggestion is new when its parameters were never suggested before, and
            restarts keep the default population.
        seed: Seed of the first CMA-ES; each restart's seed derives from it.
        patience: Suggestions in a row without a new config after which the search restarts (at
            least two generations of the current population).
    """

    def __init__(
        self, context: Context | None = None, *, seed: int | None = None, patience: int = PATIENCE
    ) -> None:
        self._context = context
        self._seed = seed
        self._patience = patience
        self._feasible = frozenset(context.keys) if context is not None else None
        cma_dims = 0
        if context is not None:
            cma_dims = sum(_is_cma_dimension(d) for d in context.distributions.values())
        # CMA-ES's default population for this many dimensions (the one Optuna's sampler uses).
        self._default_popsize = 4 + math.floor(3 * math.log(cma_dims)) if cma_dims else None
        self._optimizers: dict[int, FinishedOnceCmaEsSampler] = {}
        self._n_trials_read = 0
        self._seen: set[Any] = set()
        self._idle = 0
        self.restarts = 0
        """Restarts so far (0: the first CMA-ES is still searching)."""

    # -- restarts -----------------------------------------------------------------------------

    def _popsize(self, restart: int) -> int | None:
        if self._default_popsize is None or restart == 0:
            return None
        return self._default_popsize * 2 ** min(restart, MAX_DOUBLINGS)

    def _restart_patience(self) -> int:
        popsize = self._popsize(self.restarts) or self._default_popsize or 0
        return max(self._patience, 2 * popsize)

    def _key(self, params: Mapping[str, Any]) -> Any:
        if self._context is None:
            return tuple(sorted(params.items()))
        return self._context.space.decode(params, self._context.encoding).key

    def _read(self, study: Study) -> None:
        """Count the finished trials not read yet, in trial order, and restart when the current
        CMA-ES went ``patience`` suggestions without a new feasible config."""
        trials = study.get_trials(deepcopy=False)
        for t in trials[self._n_trials_read:]:
            if not t.state.is_finished():
                break  # read again from here next time: the order of trials decides, not timing
            self._n_trials_read += 1
            if not t.params:
                continue
            key = self._key(t.params)
            new = key not in self._seen and (self._feasible is None or key in self._feasible)
            self._seen.add(key)
            self._idle = 0 if new else self._idle + 1
            if self._idle >= self._restart_patience():
                self.restarts += 1
                self._idle = 0

    def _optimizer(self, restart: int) -> FinishedOnceCmaEsSampler:
        """The CMA-ES of restart number *restart* (0: the first), made once."""
        if restart in self._optimizers:
            return self._optimizers[restart]
        seed = self._seed
        if restart > 0 and seed is not None:
            seed = int(np.random.SeedSequence([seed, restart]).generate_state(1)[0])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = FinishedOnceCmaEsSampler(
                seed=seed, popsize=self._popsize(restart), with_margin=True,
                warn_independent_sampling=False,
            )
        # Each restart keeps its optimizer and generations under attributes of its own, so that it
        # starts afresh instead of restoring the converged one (Optuna reads them by this prefix).
        sampler.attr_prefix = f"cmawm:r{restart}:"
        self._optimizers[restart] = sampler
        return sampler

    # -- BaseSampler ----------------------------------------------------------------------------

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        self._read(study)
        self._optimizer(self.restarts).before_trial(study, trial)

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return self._optimizer(self.restarts).infer_relative_search_space(study, trial)

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        self._read(study)
        return self._optimizer(self.restarts).sample_relative(study, trial, search_space)

    def sample_independent(
        self,
        study: Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        return self._optimizer(self.restarts).sample_independent(
            study, trial, param_name, param_distribution
        )

    def after_trial(
        self, study: Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        self._optimizer(self.restarts).after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        for sampler in self._optimizers.values():
            sampler.reseed_rng()


def _is_cma_dimension(dist: BaseDistribution) -> bool:
    """Whether CMA-ES searches this distribution (numeric with several values; categorical ones are
    sampled independently)."""
    return isinstance(dist, IntDistribution | FloatDistribution) and not dist.single()


class PlainMarginCmaEsSampler(FinishedOnceCmaEsSampler):
    """Optuna's CMA-ES with margin as it comes (``cmaes-margin``, an anchor), except that a search
    whose mean has diverged does not end the study: the ``cmaes`` library refuses values beyond
    1e32 with an ``AssertionError``, and from then on every suggestion is the independent sampler's
    (Optuna's random sampler), as for a parameter CMA-ES does not model."""

    def __init__(self, *, seed: int | None = None, **options: Any) -> None:
        # options: CmaEsSampler's other keyword arguments (sigma0, popsize, n_startup_trials, ...).
        super().__init__(seed=seed, with_margin=True, warn_independent_sampling=False, **options)
        self.diverged = False

    def sample_relative(self, study: Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        if not self.diverged:
            try:
                return super().sample_relative(study, trial, search_space)
            except AssertionError:
                self.diverged = True
        return {}
