"""The lab's fast report of how the aiter HGEMM constraints cut the space (``_aiter_cut``): the same
cut as the space's own enumeration."""

from __future__ import annotations

from _aiter_cut import SHAPE_FREE_CONSTRAINTS, shape_cut, space_cuts

from flysearch.kernels import aiter_hgemm_space
from flysearch.space import Shape, get_arch


def test_the_shape_free_constraints_are_the_spaces_first_six() -> None:
    names = [c.name for c in aiter_hgemm_space().constraints]
    assert set(names[:6]) == SHAPE_FREE_CONSTRAINTS


def test_a_decode_shape_on_gfx950_keeps_the_configs_the_docstring_names() -> None:
    cut = space_cuts([Shape(1, 6144, 2048)], "gfx950")[0]
    assert (cut.regime, cut.shapes, cut.feasible) == ("decode", 1, 444)


def test_fast_cut_report_agrees_with_space_enumerate() -> None:
    space = aiter_hgemm_space()
    shape = Shape(64, 2048, 7168)
    enum = space.enumerate(shape, get_arch("gfx942"))
    cut = space_cuts([shape], "gfx942")[0]
    assert (cut.total, cut.feasible) == (enum.total, len(enum.feasible))
    assert cut.removed == enum.removed
    assert cut.summary() == enum.summary()
    survivors = enum.feasible
    assert shape_cut(space, survivors, shape, "gfx942")["feasible"] == len(survivors)
