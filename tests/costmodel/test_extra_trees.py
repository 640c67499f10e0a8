"""The samplers' extremely randomized trees are scikit-learn's ExtraTreesRegressor's, node for node."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import ExtraTreesRegressor

from flysearch.costmodel import _extra_trees as extra_trees
from flysearch.costmodel._extra_trees import direct_builder_ok, fit_extra_trees, tree_predictions


def _forest_predictions(X: np.ndarray, y: np.ndarray, rows: np.ndarray, n_trees: int,
                        seed: int | None) -> np.ndarray:
    forest = ExtraTreesRegressor(n_estimators=n_trees, max_features=0.7, min_samples_leaf=1,
                                 random_state=seed, n_jobs=1).fit(X, y)
    return np.stack([tree.predict(rows) for tree in forest.estimators_])


def test_direct_builder_is_used_on_the_installed_scikit_learn() -> None:
    """The fast path passes its self-check here (if a scikit-learn release fails it, fits still work,
    through the forest, but slower: this test says so)."""
    assert direct_builder_ok()


@pytest.mark.parametrize(("n_rows", "n_features", "seed"),
                         [(2, 3, 0), (17, 5, 1), (90, 24, 7), (250, 30, 123)])
def test_fit_gives_the_forest_trees(n_rows: int, n_features: int, seed: int) -> None:
    """Same per-tree predictions as ExtraTreesRegressor, on features like the samplers' (small
    ordinals, log-scale floats, a constant column, repeated rows, tied targets)."""
    rng = np.random.default_rng(seed)
    X = np.column_stack([rng.integers(0, 5, (n_rows, n_features - 2)), np.log2(1 + rng.random(n_rows) * 1e4),
                         np.full(n_rows, 3.0)])
    X[n_rows // 2:] = X[: n_rows - n_rows // 2]
    y = np.round(rng.normal(size=n_rows), 1)
    rows = rng.integers(0, 5, (400, n_features)).astype(float)
    trees = fit_extra_trees(X, y, n_trees=32, max_features=0.7, seed=seed)
    assert len(trees) == 32
    assert np.array_equal(tree_predictions(trees, rows), _forest_predictions(X, y, rows, 32, seed))


def test_unseeded_fit_draws_from_numpy_global_state_as_the_forest_does() -> None:
    rng = np.random.default_rng(5)
    X, y, rows = rng.random((40, 6)), rng.random(40), rng.random((50, 6))
    np.random.seed(11)
    ours = tree_predictions(fit_extra_trees(X, y, n_trees=5, max_features=0.7, seed=None), rows)
    np.random.seed(11)
    assert np.array_equal(ours, _forest_predictions(X, y, rows, 5, None))


def test_missing_values_go_through_the_forest(monkeypatch: pytest.MonkeyPatch) -> None:
    """A NaN feature is left to ExtraTreesRegressor (the direct path assumes finite inputs)."""
    def refuse(*args: object) -> None:
        raise AssertionError("the direct path was taken")

    monkeypatch.setattr(extra_trees, "_direct", refuse)
    rng = np.random.default_rng(2)
    X, y, rows = rng.random((30, 4)), rng.random(30), rng.random((20, 4))
    X[3, 1] = np.nan
    trees = fit_extra_trees(X, y, n_trees=4, max_features=0.7, seed=0)
    assert np.array_equal(tree_predictions(trees, rows), _forest_predictions(X, y, rows, 4, 0))


def test_tree_predictions_are_each_trees_predict() -> None:
    """Converted once, the per-tree predictions equal each tree's own ``predict`` on a float64 view."""
    rng = np.random.default_rng(0)
    X, y = rng.random((40, 5)), rng.random(40)
    forest = ExtraTreesRegressor(n_estimators=6, max_features=0.7, random_state=0).fit(X, y)
    rows = rng.random((300, 10))[:, ::2]  # a non-contiguous float64 view
    expected = np.stack([tree.predict(rows) for tree in forest.estimators_])
    got = tree_predictions([tree.tree_ for tree in forest.estimators_], rows)
    assert got.shape == (6, 300)
    assert np.array_equal(got, expected)
