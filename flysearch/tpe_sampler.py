"""Optuna's TPE that proposes a feasible config the study has not tried (``tpe-unseen``).

On a discrete space TPE's best candidate is often a config the study already holds: its Parzen
estimator of the good trials peaks there. Replayed, such a suggestion costs no compile but one more
suggestion, and a suggestion costs time linear in the trials so far; on the H200 tables TPE made
about 900 suggestions for 160 compiles (``benchmarks/results/compare_speed.md``), and live studies
on small spaces spent most of their time asking it.

:class:`UnseenTPESampler` is :class:`optuna.samplers.TPESampler` with one change: among the
candidates it draws from the estimator of the good trials (``n_ei_candidates``), those whose
config a trial of the study already has (finished, or running: in flight in a live pipeline), or
that the space's constraints reject (when it is given the feasible configs), get an acquisition of
minus infinity, so the best *new feasible* candidate wins. If no candidate is new and feasible,
TPE's own choice stands (and the study records it: a duplicate, or a rejection TPE learns from).
Its random stream is drawn exactly as TPE's, so everything else (start-up trials, estimators,
constant liar) is unchanged.

Example:
    >>> from flysearch.tpe_sampler import UnseenTPESampler
    >>> UnseenTPESampler(seed=0)._n_ei_candidates
    24
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import optuna

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.samplers._tpe.parzen_estimator import _ParzenEstimator
    from optuna.study import Study
    from optuna.trial import FrozenTrial

__all__ = ["UnseenTPESampler"]

_Key = tuple[Any, ...]


class UnseenTPESampler(optuna.samplers.TPESampler):
    """TPE whose suggestion is the best feasible candidate not tried yet (see the module docstring).

    Args:
        feasible: The feasible configs as trial parameters (``SearchContext.encoded()``); ``None``
            when the sampler should not know the constraints (then only tried configs are skipped).
        **kwargs: :class:`optuna.samplers.TPESampler`'s arguments.
    """

    def __init__(self, *, feasible: Iterable[Mapping[str, Any]] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._feasible_params = None if feasible is None else [dict(p) for p in feasible]
        self._feasible: set[_Key] | None = None
        self._tried: dict[int, _Key] = {}  # trial number -> config (of finished trials: final)
        self._names: tuple[str, ...] = ()
        self._space: dict[str, BaseDistribution] = {}
        self._exclude: set[_Key] = set()

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        names = tuple(sorted(search_space))
        if names != self._names:
            self._tried.clear()
            self._names, self._space = names, dict(search_space)
            self._feasible = None if self._feasible_params is None else {
                tuple(p.get(n) for n in names) for p in self._feasible_params}
        running: set[_Key] = set()
        for t in study._get_trials(deepcopy=False, use_cache=True):
            if t.number == trial.number or t.number in self._tried or not t.params.keys() >= set(names):
                continue
            key = tuple(t.params[n] for n in names)
            if t.state.is_finished():
                self._tried[t.number] = key
            else:
                running.add(key)
        self._exclude = set(self._tried.values()) | running
        try:
            return super().sample_relative(study, trial, search_space)
        finally:
            self._exclude = set()

    def _compute_acquisition_func(
        self,
        samples: dict[str, np.ndarray],
        mpe_below: _ParzenEstimator,
        mpe_above: _ParzenEstimator,
    ) -> np.ndarray:
        values = super()._compute_acquisition_func(samples, mpe_below, mpe_above)
        if set(samples) != set(self._names):
            return values
        external = [[self._space[n].to_external_repr(v) for v in samples[n]] for n in self._names]
        keys = list(zip(*external, strict=True))
        allowed = self._feasible
        skip = np.array([key in self._exclude or (allowed is not None and key not in allowed)
                         for key in keys])
        if skip.all():
            return values  # no candidate is new and feasible: TPE's own choice stands
        return np.where(skip, -np.inf, values)
