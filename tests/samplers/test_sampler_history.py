"""The candidates as the model-based samplers see them: features and ordinals, in any order."""

from __future__ import annotations

import numpy as np

from flysearch.costmodel import feature_columns
from flysearch.kernels._triton_gemm import make_space
from flysearch.samplers import SearchContext
from flysearch.samplers._history import candidate_feature_columns, candidate_ordinals
from flysearch.space import Shape, get_arch


def _context(seed: int, shape: Shape) -> SearchContext:
    space = make_space()
    return SearchContext(space, "ordinal", space.enumerate(shape, get_arch("sm_90")).shuffled(seed), shape,
                         get_arch("sm_90"))


def test_kept_features_follow_each_studys_order() -> None:
    """Another seed's shuffle of the same candidates gets the features computed for its own order,
    and another shape gets its own features."""
    for seed, shape in [(0, Shape(16, 4096, 4096)), (1, Shape(16, 4096, 4096)), (2, Shape(2048, 4096, 4096)),
                        (3, Shape(16, 4096, 4096))]:
        context = _context(seed, shape)
        got = candidate_feature_columns(context)
        fresh = feature_columns([c.as_dict() for c in context.feasible], shape.as_dict(), context.arch)
        assert sorted(got) == sorted(fresh)
        for name, column in fresh.items():
            np.testing.assert_array_equal(got[name], column, err_msg=name)


def test_ordinals_are_value_indices() -> None:
    context = _context(5, Shape(64, 4096, 4096))
    params = context.space.free_params()
    expected = [[p.values.index(c[p.name]) for p in params] for c in context.feasible]
    assert candidate_ordinals(context).tolist() == expected
