"""Model-based samplers: the cost-model sampler (with a prior) and its cold-start twin.

:class:`CostModelSampler` scores every feasible config the study has not evaluated yet and proposes
the best-scored one; it never proposes an infeasible or already-evaluated config.

* **Prior**: a :class:`~flysearch.costmodel.Prior` trained on other tables ranks the candidates
  before anything is compiled; with no measurement yet, the first suggestion is the prior's best.
* **Online correction**: after each measurement it fits a small random forest (extremely
  randomized trees) on the study's own results — log time against the features *and the prior's
  score* — and ranks by a lower confidence bound ``mean - kappa * std`` over the trees. A prior
  that is right keeps winning the forest's splits; a wrong one (the A100 convolution case) stops
  mattering once the study's own measurements contradict it.
* **Exploration**: with probability *epsilon* a suggestion is a uniformly random unevaluated config.

Without a prior (``"surrogate"``, cold start, in the spirit of SMAC) the first *n_startup*
suggestions are random, then the forest on the features alone takes over.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from optuna.samplers import BaseSampler
from sklearn.ensemble import ExtraTreesRegressor

from flysearch.features import config_features, feature_matrix

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.study import Study
    from optuna.trial import FrozenTrial

    from flysearch.costmodel import Prior
    from flysearch.samplers import SearchContext

__all__ = ["CostModelSampler"]

_ATTR = "flysearch"


class CostModelSampler(BaseSampler):
    """Proposes the unevaluated feasible config with the best corrected score.

    Args:
        context: The space, its feasible configs, shape and arch.
        prior: A trained prior, or ``None`` for a cold start.
        seed: Seed of the exploration draws and of the forest.
        epsilon: Share of suggestions drawn uniformly at random among unevaluated configs.
        kappa: Weight of the forest's spread in the lower confidence bound.
        n_startup: Random suggestions before the forest is used (cold start only).
        n_trees: Trees of the correcting forest.
    """

    def __init__(self, context: SearchContext, prior: Prior | None = None, *, seed: int | None = None,
                 epsilon: float = 0.05, kappa: float = 1.0, n_startup: int = 8, n_trees: int = 32) -> None:
        self._context = context
        self._prior = prior
        self._rng = np.random.default_rng(seed)
        self._seed = seed
        self._epsilon, self._kappa = epsilon, kappa
        self._n_startup = n_startup if prior is None else 0
        self._n_trees = n_trees
        self._keys = [c.key for c in context.feasible]
        self._index = {k: i for i, k in enumerate(self._keys)}
        problem = dict(context.problem or {})
        feats = [config_features(c.as_dict(), problem, context.arch) for c in context.feasible]
        schema = sorted({name for row in feats for name in row})
        self._X = np.nan_to_num(feature_matrix(feats, schema), nan=-1.0)
        if prior is not None:
            self._prior_score = prior.score([c.as_dict() for c in context.feasible], problem, context.arch)
            self._X = np.column_stack([self._X, self._prior_score])
        else:
            self._prior_score = np.zeros(len(self._keys))
        self._observed: dict[int, float] = {}
        self._seen: set[int] = set()
        self._n_read = 0

    def reseed_rng(self) -> None:
        self._rng = np.random.default_rng()

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return dict(self._context.distributions)

    def _read_history(self, study: Study) -> None:
        trials = study.get_trials(deepcopy=False)
        for t in trials[self._n_read:]:
            if not t.state.is_finished():
                break  # read it once it is finished (its record is written just before)
            self._n_read += 1
            record = t.user_attrs.get(_ATTR)
            if not isinstance(record, dict):
                continue
            i = self._index.get(record.get("key", ""))
            if i is None:
                continue
            self._seen.add(i)
            if record.get("duplicate_of") is None and record.get("outcome") != "rejected":
                time_ms = record.get("time_ms")
                self._observed[i] = float(np.log(time_ms)) if time_ms else np.nan

    def _targets(self) -> tuple[np.ndarray, np.ndarray]:
        idx = np.fromiter(self._observed, dtype=int)
        y = np.fromiter(self._observed.values(), dtype=float)
        finite = np.isfinite(y)
        penalty = (y[finite].max() + np.log(2.0)) if finite.any() else 0.0
        return idx, np.where(finite, y, penalty)

    def _scores(self, free: np.ndarray) -> np.ndarray:
        if len(self._observed) < 2:
            return self._prior_score[free]
        idx, y = self._targets()
        forest = ExtraTreesRegressor(n_estimators=self._n_trees, min_samples_leaf=1, max_features=0.7,
                                     random_state=self._seed, n_jobs=1).fit(self._X[idx], y)
        per_tree = np.stack([tree.predict(self._X[free]) for tree in forest.estimators_])
        return per_tree.mean(axis=0) - self._kappa * per_tree.std(axis=0)

    def sample_relative(self, study: Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        self._read_history(study)
        free = np.setdiff1d(np.arange(len(self._keys)), np.fromiter(self._seen, dtype=int))
        if free.size == 0:
            free = np.arange(len(self._keys))
        if len(self._observed) < self._n_startup or self._rng.random() < self._epsilon:
            pick = int(self._rng.choice(free))
        else:
            scores = self._scores(free)
            # Ties (few measurements) are broken by the prior, then by enumeration order.
            order = np.lexsort((free, self._prior_score[free], scores))
            pick = int(free[order[0]])
        config = self._context.feasible[pick]
        return self._context.space.encode(config, self._context.encoding)

    def sample_independent(self, study: Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        raise RuntimeError(f"CostModelSampler has no value for undeclared parameter {param_name!r}.")
