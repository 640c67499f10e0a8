"""What a study's trials tell a sampler that ranks a fixed list of feasible candidates.

:class:`CandidateHistory` reads the trials' ``"flysearch"`` records incrementally and keeps, per
candidate index: the measured log time of its first compile (NaN for a failure), whether any trial
evaluated it, and (per call) which candidates running trials hold: asked and not told yet, in a
batch or by another worker. :class:`CandidateSampler` is the Optuna sampler interface those
samplers share, and :class:`ChoosingSampler` the one of those that pick one free candidate per
suggestion from that history alone; :func:`candidate_features` and :func:`candidate_ordinals` are
the candidates as the forests see them. Used by the cost-model, GP, spread-forest, ranker and
opening samplers.
"""

from __future__ import annotations

import json
import math
from typing import TYPE_CHECKING, Any

import numpy as np
from optuna.samplers import BaseSampler

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.study import Study
    from optuna.trial import FrozenTrial

    from flysearch.costmodel import Columns
    from flysearch.samplers._context import SearchContext

__all__ = ["CandidateHistory", "CandidateSampler", "ChoosingSampler", "candidate_feature_columns",
           "candidate_features", "candidate_ordinals", "clear_candidate_features", "steps_from"]

RECORD_ATTR = "flysearch"  # the user attribute holding each trial's record (flysearch.study)


class CandidateHistory:
    """Measurements and evaluated candidates of one study, by index into ``context.feasible``.

    Attributes:
        observed: Candidate index -> log time of its compile (NaN: it failed), in measurement order.
        seen: Candidates any finished trial evaluated (compiled, duplicated or rejected).
    """

    def __init__(self, context: SearchContext) -> None:
        self._context = context
        self.index = {key: i for i, key in enumerate(context.keys)}
        self.observed: dict[int, float] = {}
        self.seen: set[int] = set()
        self._n_read = 0
        self._read: set[int] = set()

    def update(self, study: Study) -> set[int]:
        """Fold newly finished trials in; return the candidates running trials hold."""
        pending: set[int] = set()
        trials = study.get_trials(deepcopy=False)
        for t in trials[self._n_read:]:
            if not t.state.is_finished():
                if t.params:
                    i = self.index.get(self._key_of(t.params))
                    if i is not None:
                        pending.add(i)
                continue
            if t.number in self._read:
                continue
            self._read.add(t.number)
            record = t.user_attrs.get(RECORD_ATTR)
            if not isinstance(record, dict):
                continue
            i = self.index.get(record.get("key", ""))
            if i is None:
                continue
            self.seen.add(i)
            first = record.get("duplicate_of") is None and i not in self.observed
            if first and record.get("outcome") != "rejected":
                time_ms = record.get("time_ms")
                self.observed[i] = math.log(time_ms) if time_ms else math.nan
        while self._n_read < len(trials) and trials[self._n_read].number in self._read:
            self._read.discard(trials[self._n_read].number)
            self._n_read += 1
        return pending

    def free_mask(self, pending: set[int]) -> np.ndarray:
        """Candidates neither evaluated nor held by a running trial in *pending* (every candidate,
        once none is left)."""
        free = np.ones(len(self._context.feasible), bool)
        free[list(self.seen | pending)] = False
        if not free.any():
            free[:] = True
        return free

    def _key_of(self, params: dict[str, Any]) -> str:
        try:
            return self._context.space.decode(params, self._context.encoding).key
        except (KeyError, ValueError, IndexError):
            return ""


def candidate_feature_columns(context: SearchContext) -> Columns:
    """The analytic features of every feasible config (:func:`~flysearch.costmodel.feature_columns`,
    in ``context.feasible`` order): what a prior scores before compiling.

    The last few candidate sets' features are kept per process: another study of the same
    (configs, problem, arch), in any order (another seed's shuffle), reorders them instead of
    computing them again.
    """
    from flysearch.costmodel import feature_columns
    from flysearch.space import keep_recent

    problem = dict(context.problem or {})
    key = (json.dumps(problem, sort_keys=True, default=str), context.arch, frozenset(context.keys))
    row_of, columns = keep_recent(_KEPT_FEATURES, key, lambda: (
        {k: i for i, k in enumerate(context.keys)},
        feature_columns([c.as_dict() for c in context.feasible], problem, context.arch)))
    rows = np.fromiter((row_of[k] for k in context.keys), dtype=np.intp, count=len(context.keys))
    return {name: col[rows] for name, col in columns.items()}


_KEPT_FEATURES: dict[tuple[Any, ...], tuple[dict[str, int], Columns]] = {}


def clear_candidate_features() -> None:
    """Forget the candidate sets' features this process keeps (:func:`candidate_feature_columns`):
    the next study of any candidates computes them again, as a fresh worker's first study does."""
    _KEPT_FEATURES.clear()


def candidate_features(context: SearchContext, columns: Columns | None = None) -> np.ndarray:
    """The analytic features of every feasible config (rows in ``context.feasible`` order; *columns*
    from :func:`candidate_feature_columns`, computed when not given), missing values as -1."""
    from flysearch.costmodel import columns_matrix

    columns = candidate_feature_columns(context) if columns is None else columns
    return np.nan_to_num(columns_matrix(columns, sorted(columns), len(context.feasible)), nan=-1.0)


def candidate_ordinals(context: SearchContext) -> np.ndarray:
    """Each feasible config's value indices of the space's free parameters (one column each)."""
    params = context.space.free_params()
    index_of = [(p.name, {value: i for i, value in enumerate(p.values)}) for p in params]
    ordinal = []
    for config in context.feasible:
        values = dict(config.items)
        ordinal.append([index[values[name]] for name, index in index_of])
    return np.array(ordinal, dtype=np.int32).reshape(len(context.feasible), len(params))


def steps_from(ordinal: np.ndarray, centre: int) -> np.ndarray:
    """Each candidate's distance from candidate *centre* in value steps (the L1 distance of their
    :func:`candidate_ordinals`): 1 for the configs one parameter step away, the local moves."""
    return np.abs(ordinal - ordinal[centre]).sum(axis=1)


class CandidateSampler(BaseSampler):
    """What flysearch's samplers over the feasible configs share: every parameter is sampled
    jointly (the relative search space is the whole space), never one at a time, and an unseeded
    reseed draws a fresh random stream."""

    def __init__(self, context: SearchContext, seed: int | None) -> None:
        self._context = context
        self._seed = seed
        self._rng = np.random.default_rng(seed)

    def reseed_rng(self) -> None:
        self._rng = np.random.default_rng()

    def _seed_after(self, n: int) -> int:
        """A model's seed after *n* measurements: the run's seed, varied per fit."""
        base = 0 if self._seed is None else self._seed
        return (base * 1_000_003 + n) % (2**31)

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return dict(self._context.distributions)

    def sample_independent(self, study: Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        raise RuntimeError(f"{type(self).__name__} has no value for undeclared parameter {param_name!r}.")


class ChoosingSampler(CandidateSampler):
    """A candidate sampler whose every suggestion is one free candidate, chosen by ``_choose``
    from the study's history (read incrementally into ``self._history``)."""

    def __init__(self, context: SearchContext, seed: int | None) -> None:
        super().__init__(context, seed)
        self._history = CandidateHistory(context)

    def sample_relative(self, study: Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        pick = self._choose(self._history.free_mask(self._history.update(study)))
        return self._context.space.encode(self._context.feasible[pick], self._context.encoding)

    def _choose(self, free: np.ndarray) -> int:
        """The candidate to suggest, given the mask of *free* (unevaluated, not running) configs."""
        raise NotImplementedError
