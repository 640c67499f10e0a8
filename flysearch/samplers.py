"""Samplers by name, all seeded, plus flysearch's own :class:`FeasibleGridSampler`.

``grid`` is an exhaustive race of the *feasible* candidates, in an order fixed by the seed (a grid
over the raw cartesian product would spend trials on configs the constraints reject). The others
are Optuna's samplers; ``tpe`` and ``gp`` read the constraint each trial sets (a rejected or failed
config is infeasible), so they learn which regions not to propose.

Example:
    >>> from flysearch.samplers import make_sampler
    >>> type(make_sampler("tpe", seed=0)).__name__
    'TPESampler'
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import optuna
from optuna.samplers import BaseSampler

from flysearch.errors import UnknownSamplerError

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.study import Study
    from optuna.trial import FrozenTrial

__all__ = ["SAMPLERS", "FeasibleGridSampler", "make_sampler"]

SAMPLERS: tuple[str, ...] = ("grid", "random", "tpe", "gp", "cmaes", "qmc")

def _params_key(params: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(params.items()))


class FeasibleGridSampler(BaseSampler):
    """Proposes every feasible candidate exactly once, in the order given.

    Args:
        candidates: Trial parameters (encoded as the study's distributions) of each feasible config.
        distributions: The study's distributions.

    Candidates that the study already holds (after a resume) are skipped. Once all were proposed,
    it proposes the first one again; the study loop stops before that, when the space is exhausted.
    """

    def __init__(
        self,
        candidates: Sequence[Mapping[str, Any]],
        distributions: Mapping[str, BaseDistribution],
    ) -> None:
        self._candidates = [dict(c) for c in candidates]
        self._distributions = dict(distributions)
        self._seen: set[tuple[tuple[str, Any], ...]] = set()
        self._n_trials_read = 0
        self._next = 0

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return dict(self._distributions)

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        trials = study.get_trials(deepcopy=False)
        for t in trials[self._n_trials_read:]:
            if t.params:
                self._seen.add(_params_key(t.params))
        self._n_trials_read = len(trials)
        while self._next < len(self._candidates):
            candidate = self._candidates[self._next]
            self._next += 1
            if _params_key(candidate) not in self._seen:
                return candidate
        return self._candidates[0] if self._candidates else {}

    def sample_independent(
        self,
        study: Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        raise RuntimeError(f"FeasibleGridSampler has no value for undeclared parameter {param_name!r}.")


def make_sampler(
    name: str,
    *,
    seed: int | None = None,
    candidates: Sequence[Mapping[str, Any]] | None = None,
    distributions: Mapping[str, BaseDistribution] | None = None,
) -> BaseSampler:
    """Build the sampler called *name*.

    Args:
        name: One of :data:`SAMPLERS`.
        seed: Seed of the sampler's random state (``grid`` takes its order from the candidates).
        candidates: Encoded feasible candidates, in the order ``grid`` should race them.
        distributions: The study's distributions (needed by ``grid``).

    Raises:
        UnknownSamplerError: *name* is not a known sampler.
    """
    name = name.strip().lower()
    if name == "grid":
        if candidates is None or distributions is None:
            raise ValueError("The grid sampler needs the feasible candidates and distributions.")
        return FeasibleGridSampler(candidates, distributions)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed)
    if name == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False)
    if name == "qmc":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.QMCSampler(
                seed=seed, scramble=True, warn_independent_sampling=False
            )
    raise UnknownSamplerError(f"Unknown sampler {name!r}; choose one of: {', '.join(SAMPLERS)}.")
