"""``ranker``: an online learned cost model in the style of Ansor, a baseline for the prior.

Ansor (Zheng et al., OSDI 2020) measures programs in batches and, between batches, retrains a
gradient-boosted cost model on everything measured so far; the next batch is the model's best
unmeasured candidates, a small share of them (epsilon-greedy, 0.05) drawn at random instead. Its
model predicts each program's throughput normalized by the best seen on that task.
:class:`OnlineRankerSampler` is that loop over a table's feasible configs:

* **Start**: *n_startup* configs drawn at random: TVM's ``auto_scheduler`` cost model predicts at
  random until it holds 100 measurements (``XGBModel``'s ``num_warmup_sample``).
* **Model**: scikit-learn's histogram gradient boosting on the cost-model features of each config
  (:func:`flysearch.samplers._history.candidate_features`), fit to the normalized throughput
  ``best time / time`` of every measured config (a failure scores 0); refit once *batch* new
  measurements have come in (64, ``auto_scheduler``'s measurements per round).
* **Proposal**: the unevaluated config the model scores highest (ties: one at random), or, with
  probability *epsilon* (0.05, Ansor's), an unevaluated config at random.

It uses no past tables: it is the online half of what the prior does, measured beside it. Its
settings are those defaults, not tuned on any table. Ansor searches programs by evolution guided by
the model; here the model scores every feasible config of the table directly.

Example:
    >>> from flysearch.samplers._ranker import OnlineRankerSampler
    >>> OnlineRankerSampler.__init__.__defaults__[1:]  # n_startup, batch, epsilon
    (100, 64, 0.05)
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from flysearch.samplers._history import ChoosingSampler, candidate_features

if TYPE_CHECKING:
    from flysearch.samplers._context import SearchContext

__all__ = ["OnlineRankerSampler"]


class OnlineRankerSampler(ChoosingSampler):
    """Proposes unevaluated feasible configs by an online gradient-boosted cost model (see the module
    docstring).

    Args:
        context: The space, its feasible configs (the candidates) and the encoding of trial params.
        seed: Seed of the random draws and of the model.
        n_startup: Configs measured at random before the first model.
        batch: Measurements between two fits of the model.
        epsilon: Share of proposals drawn at random among the unevaluated configs.
    """

    def __init__(self, context: SearchContext, seed: int | None = None, n_startup: int = 100,
                 batch: int = 64, epsilon: float = 0.05) -> None:
        super().__init__(context, seed)
        self._n_startup = n_startup
        self._batch = batch
        self._epsilon = epsilon
        self._X = candidate_features(context)
        self._scores: np.ndarray | None = None
        self._fitted_at = -1  # measurements the current model was fitted on

    def _choose(self, free: np.ndarray) -> int:
        free_idx = np.flatnonzero(free)
        measured = len(self._history.observed)
        if measured < self._n_startup or self._rng.random() < self._epsilon:
            return int(self._rng.choice(free_idx))
        if self._scores is None or measured - self._fitted_at >= self._batch:
            self._scores = self._fit_and_score()
            self._fitted_at = measured
        scores = self._scores[free_idx]
        return int(self._rng.choice(free_idx[scores == scores.max()]))

    def _fit_and_score(self) -> np.ndarray:
        """The model's normalized throughput for every candidate, fitted on the measured ones."""
        from sklearn.ensemble import HistGradientBoostingRegressor

        idx = np.fromiter(self._history.observed, dtype=int)
        log_ms = np.fromiter(self._history.observed.values(), dtype=float)
        finite = np.isfinite(log_ms)
        best = log_ms[finite].min() if finite.any() else 0.0
        y = np.where(finite, np.exp(best - np.where(finite, log_ms, best)), 0.0)
        model = HistGradientBoostingRegressor(max_iter=100, min_samples_leaf=2,
                                              random_state=self._seed_after(len(idx)))
        model.fit(self._X[idx], y)
        return model.predict(self._X)
