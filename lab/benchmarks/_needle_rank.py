"""How well does a table predict its own optimum from random measurements of itself?

Draw *n* configs of a table uniformly at random, fit a model on their measured log times, and order
the configs not drawn by its prediction: the compiles a search spends to reach within 1% of the
table's optimum that way are the *n* random ones plus the rank, in the model's order, of the first
unmeasured config within 1% (only *n* when the draw already holds one). Two models:
``"forest"``, the extremely-randomized forest the cost-model and spreadforest samplers refit at each
suggestion (32 trees, mean prediction), and ``"boosting"``, scikit-learn's
``HistGradientBoostingRegressor`` with its defaults (20 samples per leaf at least: it cannot split
fewer than 40 measurements and then predicts one value). No model sees another table: this is the
table's own evidence about where its optimum lies, against which a prior from other tables can be
weighed.

A table is given as ``(X, log_t, within)``: one row of features per config, the configs' log times
(NaN: failed) and which of them lie within 1% of the optimum.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import numpy as np
from sklearn.ensemble import HistGradientBoostingRegressor

from flysearch.costmodel import fit_extra_trees, tree_predictions

__all__ = ["needle_compiles", "needle_predictions", "needle_row"]


def needle_predictions(model: str, X: np.ndarray, y: np.ndarray, X_new: np.ndarray, seed: int) -> np.ndarray:
    """Predicted log times of *X_new* from a *model* (``"forest"`` or ``"boosting"``) fitted on X, y."""
    if model == "forest":
        trees = fit_extra_trees(X, y, n_trees=32, max_features=0.7, seed=seed)
        return tree_predictions(trees, X_new).mean(axis=0)
    return HistGradientBoostingRegressor(random_state=seed).fit(X, y).predict(X_new)


def needle_compiles(n: int, model: str, seed: int, X: np.ndarray, log_t: np.ndarray,
                    within: np.ndarray) -> int:
    """Compiles to reach within 1%: *n* random configs (drawn with *seed*), then the order of the
    others by *model* fitted on those of them that ran (ties by position)."""
    rng = np.random.default_rng(seed)
    drawn = rng.choice(len(X), size=n, replace=False)
    if within[drawn].any():
        return n
    ok = drawn[np.isfinite(log_t[drawn])]
    rest = np.setdiff1d(np.arange(len(X)), drawn)
    pred = needle_predictions(model, X[ok], log_t[ok], X[rest], seed)
    order = rest[np.lexsort((rest, pred))]
    return n + 1 + int(np.argmax(within[order]))


def needle_row(name: str, data: tuple[np.ndarray, np.ndarray, np.ndarray], sizes: Sequence[int], draws: int,
               model: str) -> list[str]:
    """A markdown row's cells for the table *name* given as *data* (``(X, log_t, within)``): its
    configs, those within 1%, the fastest config not within 1% over the optimum, and per size *n* of
    *sizes* the median over *draws* draws of :func:`needle_compiles` (empty when *n* is not below
    the number of configs)."""
    X, log_t, within = data
    best = np.nanmin(log_t)
    cells = []
    for n in sizes:
        if n >= len(X):
            cells.append("")
            continue
        runs = [needle_compiles(n, model, seed, X, log_t, within) for seed in range(draws)]
        cells.append(f"{statistics.median(runs):g}")
    outside = log_t[np.isfinite(log_t) & ~within]
    gap = f"{np.exp(outside.min() - best):.3f}" if outside.size else ""
    return [name, f"{len(X)}", f"{int(within.sum())}", gap, *cells]
