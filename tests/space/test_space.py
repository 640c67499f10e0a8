from __future__ import annotations

import optuna
import pytest

from flysearch.errors import EmptySpaceError, InputFormatError
from flysearch.space import Config, Constraint, Param, Shape, Space, get_arch


def tile_space() -> Space:
    return Space(
        "tiles",
        [
            Param("BLOCK_M", (64, 16, 32, 128)),
            Param("BLOCK_K", (32, 64)),
            Param("stages", (2, 3, 4)),
            Param("swizzle", (False, True)),
        ],
        [
            Constraint(
                "lds_fits",
                lambda c, shape, arch: c["stages"] * c["BLOCK_M"] * c["BLOCK_K"] * 2 * 2
                <= arch.max_lds_per_block,
            ),
            Constraint("tile_fits_shape", lambda c, shape, arch: c["BLOCK_M"] <= max(16, 2 * shape.M)),
        ],
    )


def test_enumerate_counts_each_rejection_by_its_first_constraint() -> None:
    space = tile_space()
    gfx942 = get_arch("gfx942")
    result = space.enumerate(Shape(16, 4096, 4096), gfx942)
    brute = [c for c in space.configs() if space.reject_reason(c, Shape(16, 4096, 4096), gfx942) is None]
    assert result.total == 4 * 2 * 3 * 2 == space.size
    assert [c.key for c in result.feasible] == [c.key for c in brute]
    assert sum(result.removed.values()) == result.total - len(result.feasible)
    lds = sum(
        1 for c in space.configs() if c["stages"] * c["BLOCK_M"] * c["BLOCK_K"] * 4 > 64 * 1024
    )
    assert result.removed["lds_fits"] == lds > 0
    assert result.summary().startswith(f"48 -> {len(result.feasible)}: lds_fits -{lds}, tile_fits_shape -")


def test_bigger_lds_keeps_more_configs() -> None:
    space = tile_space()
    shape = Shape(4096, 4096, 4096)
    assert len(space.enumerate(shape, get_arch("gfx950")).feasible) > len(
        space.enumerate(shape, get_arch("gfx942")).feasible
    )


def test_empty_space_is_a_clear_error() -> None:
    space = Space("none", [Param("A", (1, 2))], [Constraint("never", lambda c, s, a: False)])
    with pytest.raises(EmptySpaceError, match=r"no feasible config.*never -2"):
        space.enumerate()
    assert space.enumerate(allow_empty=True).feasible == []


def test_enumerate_prunes_once_per_shape_and_arch() -> None:
    """A repeated (shape, arch) returns the kept enumeration; another shape or arch is pruned anew,
    and only the last four are kept."""
    space = tile_space()
    gfx942, gfx950 = get_arch("gfx942"), get_arch("gfx950")
    first = space.enumerate(Shape(16, 4096, 4096), gfx942)
    assert space.enumerate(Shape(16, 4096, 4096), gfx942) is first
    assert space.enumerate(Shape(16, 4096, 4096), gfx950) is not first
    assert len(space.enumerate(Shape(64, 4096, 4096), gfx942).feasible) > len(first.feasible)
    for m in (1, 2, 4):
        space.enumerate(Shape(m, 4096, 4096), gfx942)
    again = space.enumerate(Shape(16, 4096, 4096), gfx942)
    assert again is not first
    assert [c.key for c in again.feasible] == [c.key for c in first.feasible]


def test_empty_space_stays_an_error_when_enumerated_again() -> None:
    space = Space("none", [Param("A", (1, 2))], [Constraint("never", lambda c, s, a: False)])
    for _ in range(2):
        with pytest.raises(EmptySpaceError, match="no feasible config"):
            space.enumerate()


def test_config_key_is_canonical_and_parses_back() -> None:
    space = tile_space()
    a = Config.from_dict({"stages": 2, "BLOCK_M": 64, "swizzle": True, "BLOCK_K": 32})
    b = space.config(BLOCK_K=32, swizzle=True, BLOCK_M=64, stages=2)
    assert a == b and hash(a) == hash(b)
    assert a.key == "BLOCK_K=32,BLOCK_M=64,stages=2,swizzle=True"
    assert space.config_from_key(a.key) == a
    with pytest.raises(InputFormatError):
        space.config_from_key("BLOCK_K=48,BLOCK_M=64,stages=2,swizzle=True")
    with pytest.raises(InputFormatError, match="missing"):
        space.config(BLOCK_K=32)


def test_bool_is_not_an_int_value() -> None:
    space = Space("s", [Param("A", (0, 1))])
    with pytest.raises(InputFormatError):
        space.config(A=True)


@pytest.mark.parametrize("encoding", ["ordinal", "categorical"])
def test_distributions_round_trip(encoding: str) -> None:
    space = tile_space()
    dists = space.distributions(encoding)  # type: ignore[arg-type]
    for config in space.configs():
        params = space.encode(config, encoding)  # type: ignore[arg-type]
        for name, value in params.items():
            dists[name]._contains(dists[name].to_internal_repr(value))
        assert space.decode(params, encoding) == config  # type: ignore[arg-type]


def test_ordinal_encoding_orders_tile_sizes() -> None:
    dists = tile_space().distributions("ordinal")
    assert dists["BLOCK_M"] == optuna.distributions.IntDistribution(0, 3)
    assert tile_space().param("BLOCK_M").values == (16, 32, 64, 128)
    assert isinstance(dists["swizzle"], optuna.distributions.CategoricalDistribution)
    cat = tile_space().distributions("categorical")
    assert isinstance(cat["BLOCK_M"], optuna.distributions.CategoricalDistribution)


def test_fixed_params_are_not_sampled_but_decoded() -> None:
    space = Space("s", [Param("A", (1, 2)), Param("fixed", (7,))])
    assert list(space.distributions()) == ["A"]
    assert space.decode({"A": 1}) == Config.from_dict({"A": 2, "fixed": 7})


@pytest.mark.parametrize(
    "values", [(), (1, "a"), (1, 1), ("a,b",)], ids=["empty", "mixed", "repeat", "comma"]
)
def test_bad_domains_are_refused(values: tuple) -> None:
    with pytest.raises(ValueError):
        Param("p", values)


def test_a_spaces_fingerprint_is_the_same_in_another_process_and_tells_constraint_code_apart() -> None:
    """A study resumed by another process must find its space the same: a constraint whose closure
    holds a set of strings (as a replayed table's ``listed_in_table`` does; a set's order follows
    the per-process string hashes) has the same fingerprint under another hash seed."""
    import os
    import subprocess
    import sys

    from flysearch.space import Constraint, Param, Space

    code = (
        "from flysearch.space import Constraint, Param, Space\n"
        "def listed(keys):\n"
        "    return Constraint('listed', lambda c, s, a: c.key in keys)\n"
        "keys = frozenset(f'BLOCK={b},SPLIT={s}' for b in range(100) for s in (1, 2))\n"
        "space = Space('toy', [Param('BLOCK', tuple(range(100))), Param('SPLIT', (1, 2))], [listed(keys)])\n"
        "print(space.fingerprint()['constraints']['listed'])\n"
    )
    prints = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert len(prints) == 1 and len(prints.pop().strip()) == 16

    def small(c, s, a):  # type: ignore[no-untyped-def]
        return c["BLOCK"] <= 32

    def space(*constraints: Constraint) -> dict:  # type: ignore[type-arg]
        return Space("toy", [Param("BLOCK", (16, 32, 64))], constraints).fingerprint()["constraints"]

    same = space(Constraint("small", small))
    assert same == space(Constraint("small", small, doc="another doc"))
    assert same != space(Constraint("small", lambda c, s, a: c["BLOCK"] <= 16))
    assert same != space(Constraint("small", lambda c, s, a: c["BLOCK"] < 32))
