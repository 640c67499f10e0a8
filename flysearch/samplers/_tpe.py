"""Optuna's TPE that proposes a feasible config the study has not tried (``tpe-unseen``).

On a discrete space TPE's best candidate is often a config the study already holds: its Parzen
estimator of the good trials peaks there. Replayed, such a suggestion costs no compile but one more
suggestion, and a suggestion costs time linear in the trials so far; on the H200 tables TPE made
about 900 suggestions for 160 compiles (``lab/benchmarks/results/compare_speed.md``), and live studies
on small spaces spent most of their time asking it.

:class:`UnseenTPESampler` is :class:`optuna.samplers.TPESampler` with one change: among the
candidates it draws from the estimator of the good trials (``n_ei_candidates``), those whose
config a trial of the study already has (finished, or running: in flight in a live pipeline), or
that the space's constraints reject (when it is given the feasible configs), get an acquisition of
minus infinity, so the best *new feasible* candidate wins. If no candidate is new and feasible, it
draws up to ``extra_rounds`` more rounds of candidates from the same estimator; if none of those is
either, TPE's own choice stands (and the study records it: a duplicate, or a rejection TPE learns
from).
Until the first extra round, its random stream is drawn exactly as TPE's; the start-up trials,
estimators and constant liar are TPE's.

Example:
    >>> from flysearch.samplers._tpe import UnseenTPESampler
    >>> UnseenTPESampler(seed=0).n_ei_candidates
    24
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from flysearch._optuna import TPEHooks, cached_trials, trial_id

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.study import Study
    from optuna.trial import FrozenTrial

    from flysearch._optuna import ParzenEstimator

__all__ = ["CachedTPESampler", "UnseenTPESampler"]

_Key = tuple[Any, ...]


class CachedTPESampler(TPEHooks):
    """Optuna's TPE, unchanged in what it proposes, that converts each finished trial's parameters
    to TPE's internal representation once, instead of at every suggestion for both of its
    estimators (a conversion over every earlier trial, each time).

    Takes :class:`optuna.samplers.TPESampler`'s arguments.
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._reprs: dict[int, tuple[float, ...] | None] = {}  # trial id -> internal values
        self._repr_names: tuple[str, ...] = ()

    def internal_repr(
        self, trials: list[FrozenTrial], search_space: dict[str, BaseDistribution], study: Study
    ) -> dict[str, np.ndarray]:
        names = tuple(search_space)
        if names != self._repr_names:
            self._reprs.clear()
            self._repr_names = names
        columns: list[list[float]] = [[] for _ in names]
        for trial in trials:
            row = self._reprs.get(trial_id(trial), False) if trial.state.is_finished() else False
            if row is False:
                params = self.trial_params(trial, study)
                row = (tuple(d.to_internal_repr(params[n]) for n, d in search_space.items())
                       if search_space.keys() <= params.keys() else None)
                if trial.state.is_finished():
                    self._reprs[trial_id(trial)] = row
            if row is not None:
                for column, value in zip(columns, row, strict=True):
                    column.append(value)
        return {n: np.asarray(column) for n, column in zip(names, columns, strict=True)}


class UnseenTPESampler(CachedTPESampler):
    """TPE whose suggestion is the best feasible candidate not tried yet (see the module docstring).

    Args:
        feasible: The feasible configs as trial parameters (``SearchContext.encoded()``); ``None``
            when the sampler should not know the constraints (then only tried configs are skipped).
        **kwargs: :class:`optuna.samplers.TPESampler`'s arguments.
    """

    extra_rounds = 8  # rounds of candidates drawn again while none is new and feasible

    def __init__(self, *, feasible: Iterable[Mapping[str, Any]] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._feasible_params = None if feasible is None else [dict(p) for p in feasible]
        self._feasible: set[_Key] | None = None
        self._read: set[int] = set()  # finished trials already in _tried (their params are final)
        self._tried: set[_Key] = set()  # configs of finished trials
        self._running: set[_Key] = set()  # configs of running trials, at this suggestion
        self._names: tuple[str, ...] = ()
        self._space: dict[str, BaseDistribution] = {}

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        names = tuple(sorted(search_space))
        if names != self._names:
            self._read.clear()
            self._tried.clear()
            self._names, self._space = names, dict(search_space)
            self._feasible = None if self._feasible_params is None else {
                tuple(p.get(n) for n in names) for p in self._feasible_params}
        self._running = set()
        for t in cached_trials(study):
            if t.number == trial.number or t.number in self._read or not t.params.keys() >= set(names):
                continue
            key = tuple(t.params[n] for n in names)
            if t.state.is_finished():
                self._read.add(t.number)
                self._tried.add(key)
            else:
                self._running.add(key)
        return super().sample_relative(study, trial, search_space)

    def acquisition(
        self, samples: dict[str, np.ndarray], below: ParzenEstimator, above: ParzenEstimator
    ) -> np.ndarray:
        values = super().acquisition(samples, below, above)
        if set(samples) != set(self._names):
            return values
        skip = self._skip(samples)
        for _ in range(self.extra_rounds):
            if not skip.all():
                break
            # No candidate is new and feasible: draw another round from the same estimator. The
            # caller picks from *samples*, so the new candidates are appended to its arrays.
            more = self.draw_candidates(below)
            for name in samples:
                samples[name] = np.concatenate([samples[name], more[name]])
            values = np.concatenate([values, super().acquisition(more, below, above)])
            skip = np.concatenate([skip, self._skip(more)])
        if skip.all():
            return values  # still none: TPE's own choice stands
        return np.where(skip, -np.inf, values)

    def _skip(self, samples: dict[str, np.ndarray]) -> np.ndarray:
        """Which candidates were tried already or are infeasible."""
        external = [[self._space[n].to_external_repr(v) for v in samples[n]] for n in self._names]
        allowed = self._feasible
        return np.array([key in self._tried or key in self._running
                         or (allowed is not None and key not in allowed)
                         for key in zip(*external, strict=True)], dtype=bool)
