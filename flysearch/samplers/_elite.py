"""A member that moves several parameters at once: a Gaussian over the best measured configs.

:class:`EliteGaussianSampler` fits, at each suggestion, a normal distribution to the *elite* of the
study: its best measured configs (the better quarter, at least 3 and at most *most*), as points of
the parameters' value indices, weighted by rank as CMA-ES weighs its best samples. It draws one
point from that distribution and proposes the unevaluated feasible config nearest to it (Euclidean
distance over the value indices; ties at random).

What it adds to ``auto``'s two models is the kind of move: the forest's local step changes one
parameter of the best config by one value, and both models choose by what their features or
kernel make of a config. The Gaussian's draws change several parameters together, along the
directions in which the good configs already differ (a larger tile with a smaller split, say), and
need no model. This is the step that CMA-ES with margin and Kernel Tuner's tabu and genetic
searches take, and where they reached a near-optimal config in fewer compiles than ``auto`` on
about half of the tenth test set's split-K tables (``lab/benchmarks/results/coldstart_anchor_seeds.md``).
Unlike Optuna's CMA-ES it keeps no state of its own: every member's measurements shape it, as a
portfolio member's must. A floor on the variance (*floor*, in squared value steps) keeps it from
collapsing onto the best config when the elite agree.

Example:
    >>> from flysearch.samplers._elite import elite_weights
    >>> elite_weights(3).round(3).tolist()
    [0.637, 0.285, 0.078]
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from flysearch.samplers._history import ChoosingSampler, candidate_ordinals

if TYPE_CHECKING:
    from flysearch.samplers._context import SearchContext

__all__ = ["EliteGaussianSampler", "elite_weights"]


def elite_weights(mu: int) -> np.ndarray:
    """Weights of the *mu* best configs, best first: ``log(mu + 1/2) - log(rank)``, summing to 1."""
    w = math.log(mu + 0.5) - np.log(np.arange(1, mu + 1))
    return w / w.sum()


class EliteGaussianSampler(ChoosingSampler):
    """Proposes the unevaluated config nearest a draw from a Gaussian fitted to the best measured ones.

    Args:
        context: The space, its feasible configs (the candidates) and the encoding of trial params.
        seed: Seed of the draws.
        n_startup: Successful measurements before the first fit; until then each suggestion is a
            uniform draw among the unevaluated configs.
        share: The elite's share of the successful measurements.
        most: The elite's largest size.
        floor: Variance added to every parameter (squared value steps).
    """

    def __init__(self, context: SearchContext, *, seed: int | None = None, n_startup: int = 5,
                 share: float = 0.25, most: int = 12, floor: float = 0.25) -> None:
        super().__init__(context, seed)
        self._n_startup, self._share, self._most, self._floor = n_startup, share, most, floor
        self._points = candidate_ordinals(context).astype(float)

    def _choose(self, free: np.ndarray) -> int:
        """The candidate to suggest, given the mask of *free* (unevaluated, not running) configs."""
        free_idx = np.flatnonzero(free)
        idx = np.fromiter(self._history.observed, dtype=int)
        y = np.fromiter(self._history.observed.values(), dtype=float)
        ok = np.isfinite(y)  # a failed config says nothing about where the good ones are
        if ok.sum() < max(self._n_startup, 2):
            return int(self._rng.choice(free_idx))
        idx, y = idx[ok], y[ok]
        mu = min(self._most, max(3, math.ceil(self._share * len(idx))), len(idx))
        elite = self._points[idx[np.argsort(y, kind="stable")[:mu]]]
        w = elite_weights(mu)
        mean = w @ elite
        spread = elite - mean
        cov = (spread * w[:, None]).T @ spread + self._floor * np.eye(elite.shape[1])
        point = self._rng.multivariate_normal(mean, cov)
        dist = ((self._points[free_idx] - point) ** 2).sum(axis=1)
        return int(self._rng.choice(free_idx[dist == dist.min()]))
