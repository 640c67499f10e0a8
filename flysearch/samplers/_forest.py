"""A cold-start sampler: a space-filling start, then a random-forest surrogate's lower confidence bound.

:class:`SpreadForestSampler` (``"spreadforest"``) proposes, at each suggestion, one feasible config
the study has not evaluated (nor is evaluating); it never proposes an infeasible or already-evaluated
config, and it needs no prior. It differs from the cold-start ``surrogate`` in its start and in
keeping every later suggestion global:

* **Spread start**: the first *n_startup* suggestions are maximin draws in Hamming distance: a config
  chosen at random among the unevaluated ones whose smallest number of differing parameters to any
  evaluated or running config is largest. The forest's first fit then sees contrasting configs (every
  value of a small parameter, distinct tile shapes) rather than a uniform sample's near-duplicates.
* **Surrogate**: extremely randomized trees on the cost-model features of each config
  (:func:`flysearch.costmodel._features.config_features`) fit the log times measured so far; a failed config
  gets the worst log time seen plus log 2. The spread of the trees' predictions is the uncertainty.
* **Acquisition**: the lowest ``mean - kappa * std`` over the unevaluated configs (a seeded subset of
  *max_scored* when more are left); ties go to the lowest mean, then to enumeration order. There is
  no local-refinement or random step: on a table whose optimum is an isolated spike (convolution on
  the A100) both spend compiles the forest would put where its bound is lowest.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from flysearch.costmodel import fit_extra_trees, tree_predictions
from flysearch.samplers._history import ChoosingSampler, candidate_features, candidate_ordinals

if TYPE_CHECKING:
    from flysearch.samplers._context import SearchContext

__all__ = ["SpreadForestSampler", "hamming_to_nearest"]


def hamming_to_nearest(rows: np.ndarray, others: np.ndarray) -> np.ndarray:
    """For each row of *rows*, the fewest positions in which it differs from any row of *others*.

    Example:
        >>> hamming_to_nearest(np.array([[0, 0], [1, 1]]), np.array([[0, 1]])).tolist()
        [1, 1]
    """
    if len(others) == 0:
        return np.full(len(rows), rows.shape[1])
    return (rows[:, None, :] != others[None, :, :]).sum(axis=2).min(axis=1)


class SpreadForestSampler(ChoosingSampler):
    """Proposes unevaluated feasible configs: a maximin start, then a forest's lower confidence bound.

    Args:
        context: The space, its feasible configs (the candidates) and the encoding of trial params.
        seed: Seed of the start's draws, of the scored subset and of the forest.
        n_startup: Measurements taken by the spread start before the forest is used.
        n_trees: Trees of the forest.
        max_features: Share of the features each split considers.
        kappa: Weight of the trees' spread in the lower confidence bound.
        max_scored: Unevaluated configs scored per suggestion at most (a seeded subset beyond that).
    """

    def __init__(self, context: SearchContext, *, seed: int | None = None, n_startup: int = 16,
                 n_trees: int = 24, max_features: float = 0.7, kappa: float = 1.0,
                 max_scored: int = 4096) -> None:
        super().__init__(context, seed)
        self._n_startup = n_startup
        self._n_trees = n_trees
        self._max_features = max_features
        self._kappa = kappa
        self._max_scored = max_scored
        self._X = candidate_features(context)
        self._ordinal = candidate_ordinals(context)

    # -- choosing ---------------------------------------------------------------------------------

    def _choose(self, free: np.ndarray) -> int:
        """The candidate to suggest, given the mask of *free* (unevaluated, not running) configs."""
        if len(self._history.observed) < max(self._n_startup, 2):
            return self._spread(free)
        idx, y = self._targets()
        return self._lowest_bound(self._scored(free), idx, y)

    def _spread(self, free: np.ndarray) -> int:
        """A random free config among those farthest (Hamming) from every evaluated or running one."""
        free_idx = np.flatnonzero(free)
        dist = hamming_to_nearest(self._ordinal[free_idx], self._ordinal[~free])
        return int(self._rng.choice(free_idx[dist == dist.max()]))

    def _targets(self) -> tuple[np.ndarray, np.ndarray]:
        """Measured candidates and their log times (a failure: worst seen plus log 2)."""
        idx = np.fromiter(self._history.observed, dtype=int)
        y = np.fromiter(self._history.observed.values(), dtype=float)
        finite = np.isfinite(y)
        penalty = (y[finite].max() + math.log(2.0)) if finite.any() else 0.0
        return idx, np.where(finite, y, penalty)

    def _scored(self, free: np.ndarray) -> np.ndarray:
        """The free configs to score: all, or a seeded subset of *max_scored*."""
        free_idx = np.flatnonzero(free)
        if free_idx.size > self._max_scored:
            free_idx = np.sort(self._rng.choice(free_idx, self._max_scored, replace=False))
        return free_idx

    def _lowest_bound(self, candidates: np.ndarray, idx: np.ndarray, y: np.ndarray) -> int:
        """The candidate of lowest ``mean - kappa * std`` over the trees (ties: lowest mean, order)."""
        trees = fit_extra_trees(self._X[idx], y, n_trees=self._n_trees, max_features=self._max_features,
                                seed=self._seed_after(len(idx)))
        per_tree = tree_predictions(trees, self._X[candidates])
        mean, sd = per_tree.mean(axis=0), per_tree.std(axis=0)
        order = np.lexsort((candidates, mean, mean - self._kappa * sd))
        return int(candidates[order[0]])
