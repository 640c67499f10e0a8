"""aiter's Triton GEMM space: its value sets and each rule on configs picked by hand (one it keeps, one
it rejects). The configs aiter ships are the lab's (``lab/tests/test_aiter_shipped.py``)."""

from __future__ import annotations

import math
from typing import Any

import pytest

from flysearch.kernels import aiter_root, get_space, import_aiter_module
from flysearch.kernels._aiter_triton import (
    SPACE_NAME,
    lds_bytes,
    make_space,
    register_demand,
    vgpr_budget,
)
from flysearch.space import Config, Shape, get_arch

# aiter's MI300X default config for M > 2048: fits gfx942's LDS exactly.
BASE: dict[str, Any] = dict(BLOCK_SIZE_M=256, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=4, NUM_KSPLIT=1,
                            num_warps=8, num_stages=2, waves_per_eu=2, matrix_instr_nonkdim=16, kpack=1,
                            cache_modifier="")
BIG = Shape(8192, 4096, 4096)
GFX942, GFX950 = get_arch("gfx942"), get_arch("gfx950")

def cfg(**changes: Any) -> Config:
    return Config.from_dict({**BASE, **changes})


def test_space_is_registered_with_aiters_key_names() -> None:
    space = get_space(SPACE_NAME)
    assert space.size == math.prod(len(p.values) for p in space.params) == 480_000
    assert [p.name for p in space.params] == [
        "BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "NUM_KSPLIT", "num_warps",
        "num_stages", "waves_per_eu", "matrix_instr_nonkdim", "kpack", "cache_modifier"]
    for p in space.params:  # tiles, splits, groups and option sizes: powers of two
        if p.name not in ("num_stages", "waves_per_eu", "cache_modifier"):
            assert all(v & (v - 1) == 0 for v in p.values), p
    assert space.param("cache_modifier").values == ("", ".cg")
    assert space.config_from_key(cfg().key) == cfg()
    assert space.reject_reason(cfg(), BIG, GFX942) is None


def test_params_are_kernel_constexprs_or_amd_options() -> None:
    pytest.importorskip("triton")
    from triton.backends.amd.compiler import HIPOptions

    if aiter_root() is None:
        pytest.skip("amd-aiter is not installed")
    kernel = import_aiter_module("ops.triton._triton_kernels.gemm_a16w16")._gemm_a16_w16_kernel.fn
    for p in make_space().params:
        assert p.name in kernel.arg_names or p.name in HIPOptions.__dataclass_fields__, p.name


# -- each rule: one config it keeps, one it rejects -----------------------------------------------

MI300X_64 = dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=128, num_warps=4)
CASES: list[tuple[str, Config, Shape, Any, bool]] = [
    ("group_m_unused_under_split_k", cfg(NUM_KSPLIT=1), BIG, GFX942, True),
    ("group_m_unused_under_split_k", cfg(NUM_KSPLIT=2), BIG, GFX942, False),
    ("kpack_fixed_by_arch", cfg(kpack=2), BIG, GFX942, True),
    ("kpack_fixed_by_arch", cfg(kpack=2), BIG, GFX950, False),
    ("mfma_tiles_block", cfg(BLOCK_SIZE_M=32, matrix_instr_nonkdim=32), BIG, GFX942, True),
    ("mfma_tiles_block", cfg(BLOCK_SIZE_M=16, matrix_instr_nonkdim=32), BIG, GFX942, False),
    ("waves_per_eu_honored", cfg(num_warps=4, waves_per_eu=1), BIG, GFX950, True),
    ("waves_per_eu_honored", cfg(waves_per_eu=0), BIG, GFX950, True),
    ("waves_per_eu_honored", cfg(waves_per_eu=1), BIG, GFX950, False),
    ("lds_fits", cfg(), BIG, GFX942, True),  # 65536 bytes: exactly gfx942's LDS
    ("lds_fits", cfg(num_stages=3), BIG, GFX942, False),
    ("lds_fits", cfg(num_stages=3), BIG, GFX950, True),  # 131072 <= 160 KiB
    ("registers_fit", cfg(waves_per_eu=2), BIG, GFX942, True),  # demand 180 <= 256
    ("registers_fit", cfg(waves_per_eu=3), BIG, GFX942, False),  # 180 > 168
    # aiter's MI300X M_LEQ_64 config: 48 KiB of LDS lets one 4-wave workgroup (1 wave a SIMD) stay
    ("occupancy_fits_lds", cfg(**MI300X_64, waves_per_eu=1), BIG, GFX942, True),
    ("occupancy_fits_lds", cfg(**MI300X_64, waves_per_eu=2), BIG, GFX942, False),
    ("tile_m_fits_shape", cfg(BLOCK_SIZE_M=32), Shape(16, 4096, 4096), GFX942, True),
    ("tile_m_fits_shape", cfg(BLOCK_SIZE_M=64), Shape(16, 4096, 4096), GFX942, False),
    ("tile_n_fits_shape", cfg(BLOCK_SIZE_N=128), Shape(64, 128, 4096), GFX942, True),
    ("tile_n_fits_shape", cfg(BLOCK_SIZE_N=256), Shape(64, 128, 4096), GFX942, False),
    ("split_k_tile_fits", cfg(BLOCK_SIZE_K=512, NUM_KSPLIT=8), Shape(1, 4096, 4096), GFX942, True),
    ("split_k_tile_fits", cfg(BLOCK_SIZE_K=512, NUM_KSPLIT=8), Shape(1, 4096, 2880), GFX942, False),
    # 16 tiles x 8 splits: half of it (64 programs) leaves most of 304 CUs idle
    ("split_k_needs_idle_cus", cfg(NUM_KSPLIT=8, GROUP_SIZE_M=1), Shape(1, 4096, 4096), GFX942, True),
    ("split_k_needs_idle_cus", cfg(NUM_KSPLIT=2, GROUP_SIZE_M=1, BLOCK_SIZE_M=128, BLOCK_SIZE_N=128),
     Shape(4096, 4096, 4096), GFX942, False),  # 1024 tiles fill 304 CUs without a split
    ("group_m_needs_rows", cfg(BLOCK_SIZE_M=128, GROUP_SIZE_M=2), Shape(256, 4096, 4096), GFX942, True),
    ("group_m_needs_rows", cfg(BLOCK_SIZE_M=128, GROUP_SIZE_M=4), Shape(256, 4096, 4096), GFX942, False),
]


@pytest.mark.parametrize(("rule", "config", "shape", "arch", "keeps"), CASES,
                         ids=[f"{c[0]}-{'keeps' if c[4] else 'rejects'}-{i}" for i, c in enumerate(CASES)])
def test_rule(rule: str, config: Config, shape: Shape, arch: Any, keeps: bool) -> None:
    constraint = {c.name: c for c in make_space().constraints}[rule]
    assert constraint(config, shape, arch) is keeps
    if rule not in ("group_m_unused_under_split_k", "mfma_tiles_block"):  # these read config only
        assert constraint(config, None, None)  # without the shape or the arch it reads, it keeps all


def test_every_rule_has_a_case_and_a_reason() -> None:
    space = make_space()
    names = [c.name for c in space.constraints]
    assert {c[0] for c in CASES if not c[4]} == set(names)
    assert all(len(c.doc) > 40 for c in space.constraints)


def test_lds_and_register_arithmetic() -> None:
    assert lds_bytes(cfg()) == 65536 and lds_bytes(cfg(num_stages=3)) == 131072
    assert [vgpr_budget(cfg(num_warps=4, waves_per_eu=w), GFX942) for w in (0, 1, 2, 3, 4, 8)] == \
        [512, 512, 256, 168, 128, 64]
    assert vgpr_budget(cfg(waves_per_eu=0), GFX942) == 256  # 8 waves: 2 a SIMD
    # 256x256 over 8 waves: 128 accumulator registers + 1.25 x 32 prefetch + 4 (gfx942) or 8 + 8
    assert register_demand(cfg(), GFX942) == 180 and register_demand(cfg(), GFX950) == 184
    # a 16x16 tile over 8 waves still holds one 16x16 MFMA output per wave
    small = cfg(BLOCK_SIZE_M=16, BLOCK_SIZE_N=16, BLOCK_SIZE_K=32)
    assert register_demand(small, GFX942) == 4 + 1.25 * 1 + 4 + 8


def test_enumerate_leaves_configs_in_every_regime() -> None:
    space = make_space()
    for arch, shape in ((GFX942, Shape(1, 4096, 4096)), (GFX950, Shape(4096, 4096, 4096))):
        result = space.enumerate(shape, arch)
        assert 0 < len(result.feasible) < space.size // 10
        assert all(space.reject_reason(c, shape, arch) is None for c in result.feasible[::97])
