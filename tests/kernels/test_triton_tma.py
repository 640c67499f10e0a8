"""The triton_gemm_tma space: its size, its constraints, its specializations, and a CPU compile for
sm_90 where Triton is installed (no GPU)."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from flysearch.kernels._triton_tma import (
    SPACE_NAME,
    grid,
    make_space,
    smem_bytes,
    spec_key,
)
from flysearch.space import Config, Shape, get_arch

SM90 = get_arch("sm_90")
SQUARE = Shape(4096, 4096, 4096)

GOOD = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_stages=4, num_warps=4,
            EPILOGUE_SUBTILE=False)


def _config(**changes: object) -> Config:
    return make_space().config(**{**GOOD, **changes})


def _reason(shape: Shape | None = SQUARE, **changes: object) -> str | None:
    return make_space().reject_reason(_config(**changes), shape, SM90)


def test_space_size_and_parameters() -> None:
    space = make_space()
    assert space.name == SPACE_NAME == "triton_gemm_tma"
    assert space.size == 3 * 3 * 3 * 2 * 4 * 2 * 2 == 864
    assert [p.name for p in space.params] == [
        "BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "num_stages", "num_warps", "EPILOGUE_SUBTILE"
    ]


def test_known_good_config_is_feasible_everywhere() -> None:
    assert _reason() is None
    assert _reason(Shape(512, 4096, 4096)) is None


def test_tma_strides_aligned() -> None:
    assert _reason(Shape(4096, 4104, 4096)) is None
    assert _reason(Shape(4096, 4100, 4096)) == "tma_strides_aligned"
    assert _reason(Shape(4096, 4096, 4100)) == "tma_strides_aligned"
    assert _reason(Shape(4093, 4096, 4096)) is None  # M is never a stride


def test_smem_fits_counts_the_c_staging_tile_and_subtiling_halves_it() -> None:
    big = dict(BLOCK_M=128, BLOCK_N=256, BLOCK_K=64, num_warps=8)
    assert smem_bytes(_config(num_stages=3, **big)) == 3 * 384 * 64 * 2 + 128 * 256 * 2 + 1024
    assert _reason(num_stages=3, **big) is None
    assert _reason(num_stages=4, **big) == "smem_fits"
    assert _reason(num_stages=4, EPILOGUE_SUBTILE=True, **big) is None


def test_acc_registers_fit() -> None:
    assert _reason(BLOCK_M=256, BLOCK_N=128, BLOCK_K=32, num_warps=8, num_stages=2) is None
    assert _reason(BLOCK_M=256, BLOCK_N=128, BLOCK_K=32, num_warps=4, num_stages=2) == (
        "acc_registers_fit"
    )


def test_warps_fill_tile() -> None:
    assert _reason(BLOCK_M=64, BLOCK_N=128, num_warps=8) is None
    assert _reason(BLOCK_M=64, BLOCK_N=64, num_warps=8) == "warps_fill_tile"


def test_subtile_needs_wide_tile() -> None:
    assert _reason(BLOCK_N=128, EPILOGUE_SUBTILE=True) is None
    assert _reason(BLOCK_N=64, EPILOGUE_SUBTILE=True) == "subtile_needs_wide_tile"


def test_subtile_keeps_layout() -> None:
    assert _reason(BLOCK_M=128, BLOCK_N=128, num_warps=8, EPILOGUE_SUBTILE=True) is None
    assert _reason(BLOCK_M=64, BLOCK_N=128, num_warps=8, EPILOGUE_SUBTILE=True) == (
        "subtile_keeps_layout"
    )


def test_tiles_fit_shape() -> None:
    assert _reason(Shape(1, 4096, 4096), BLOCK_M=64, GROUP_M=1) is None
    assert _reason(Shape(1, 4096, 4096), BLOCK_M=128, GROUP_M=1) == "tile_m_fits_shape"
    assert _reason(Shape(4096, 64, 4096), BLOCK_N=64) is None
    assert _reason(Shape(4096, 64, 4096), BLOCK_N=128) == "tile_n_fits_shape"
    assert _reason(Shape(4096, 4096, 32), BLOCK_K=32) is None
    assert _reason(Shape(4096, 4096, 32), BLOCK_K=64) == "tile_k_fits_shape"


def test_group_m_needs_rows() -> None:
    assert _reason(Shape(64, 4096, 4096), BLOCK_M=64, GROUP_M=1) is None
    assert _reason(Shape(64, 4096, 4096), BLOCK_M=64, GROUP_M=8) == "group_m_needs_rows"


def test_feasible_counts_stay_raceable() -> None:
    counts = {m: len(make_space().enumerate(Shape(m, 4096, 4096), SM90).feasible)
              for m in (1, 64, 4096)}
    assert all(50 <= n <= 700 for n in counts.values()), counts
    for config in make_space().enumerate(SQUARE, SM90).feasible:
        assert smem_bytes(config) <= SM90.max_lds_per_block


def test_grid_is_persistent() -> None:
    assert grid(_config(), SQUARE) == (132, 1, 1)
    assert grid(_config(), Shape(1, 1024, 4096)) == (8, 1, 1)


def test_spec_key_mirrors_the_jit_specialization() -> None:
    assert spec_key(Shape(1, 4096, 4096)) == "m=1,n16=1,k16=1"
    assert spec_key(Shape(64, 4104, 4096)) == "m=16,n16=0,k16=1"
    assert spec_key(Shape(37, 4096, 4104)) == "m=0,n16=1,k16=0"


def test_space_module_imports_without_triton_or_torch() -> None:
    code = ("import sys, flysearch.kernels._triton_tma; "
            "print('triton' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


CPU_COMPILES = [
    dict(GOOD),
    dict(GOOD, BLOCK_N=256, num_warps=8, num_stages=3),
    dict(GOOD, BLOCK_N=256, num_warps=8, num_stages=4, EPILOGUE_SUBTILE=True),
    dict(GOOD, BLOCK_M=64, BLOCK_N=64, GROUP_M=1, num_stages=5),
]


@pytest.mark.parametrize("config", CPU_COMPILES, ids=lambda c: make_space().config(**c).key)
@pytest.mark.parametrize("spec", ["m=16,n16=1,k16=1", "m=1,n16=0,k16=1"])
def test_cpu_compile_for_sm90(config: dict, spec: str, tmp_path, monkeypatch) -> None:
    pytest.importorskip("triton")
    from flysearch.kernels._triton_tma import compile_config, compiled_resources

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    start = time.perf_counter()
    kernel = compile_config(config, spec, "sm_90")
    seconds = time.perf_counter() - start
    res = compiled_resources(kernel)
    print(f"{make_space().config(**config).key} {spec}: {seconds:.2f}s {res}")
    assert kernel.metadata.num_warps == config["num_warps"]
    assert res["shared"] <= SM90.max_lds_per_block
    assert "async_tma_copy_global_to_local" in kernel.asm["ttgir"]
    assert "wgmma" in kernel.asm["ptx"]
    if res["registers"] is not None:
        assert res["registers"] <= 255 and res["spills"] == 0


def test_committed_tma_tables_hold_exactly_the_feasible_set() -> None:
    """The H200 races of this family (lab/benchmarks/data/h200_tma*) measured every config the rules keep
    at their shape, and nothing else: a rule change that would make them stale fails here."""
    from pathlib import Path

    from flysearch.kernels import get_space
    from flysearch.space import get_arch
    from flysearch.tables import read_table_file

    files = sorted(Path(__file__).resolve().parents[2].glob("lab/benchmarks/data/h200_tma*/*.table.json.gz"))
    assert files, "the committed TMA races are missing"
    space = get_space("triton_gemm_tma")
    for path in files:
        meta, rows = read_table_file(path)
        feasible = {c.key for c in space.enumerate(meta.shape(), get_arch("sm_90")).feasible}
        assert {r.key for r in rows} == feasible, path.name
        assert all(r.ok for r in rows), path.name


def test_the_launcher_refuses_a_program_count_outside_the_tiles() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    from flysearch.kernels import tma_gemm_launcher

    config = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "GROUP_M": 1, "num_stages": 3,
              "num_warps": 4, "EPILOGUE_SUBTILE": False}
    a, w = torch.zeros(128, 64, dtype=torch.bfloat16), torch.zeros(192, 64, dtype=torch.bfloat16)
    c = torch.zeros(128, 192, dtype=torch.bfloat16)
    for programs in (0, 7):  # 2 x 3 = 6 tiles
        with pytest.raises(ValueError, match="programs must be 1 to the 6 tiles"):
            tma_gemm_launcher(a, w, c, config, programs=programs)


def test_the_race_takes_the_tma_family_and_its_spec_names_the_sm_count() -> None:
    from flysearch.kernels import triton_families, triton_family
    from flysearch.kernels._triton_tma import race_spec

    assert "triton_gemm_tma" in triton_families()
    family = triton_family("triton_gemm_tma")
    assert family.bind is not None and family.min_sm == 90
    assert family.spec_key(Shape(1, 4096, 4096), 114) == race_spec(Shape(1, 4096, 4096), 114) == (
        "m=1,n16=1,k16=1,sms=114")
    family.check_arch(SM90)


def test_cpu_compile_of_a_race_spec_strides_by_its_sm_count(tmp_path, monkeypatch) -> None:
    pytest.importorskip("triton")
    from flysearch.kernels import triton_family
    from flysearch.kernels._triton_tma import _constexprs

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    family = triton_family("triton_gemm_tma")
    kernel = family.compile_config(GOOD, family.spec_key(Shape(16, 4096, 4096), 114), "sm_90")
    names = kernel.src.fn.arg_names
    constants = {names[i[0]]: v for i, v in kernel.src.constants.items()}
    assert constants["NUM_SMS"] == 114 and constants["BLOCK_N"] == GOOD["BLOCK_N"]
    # bind passes the binary every argument in the signature's order: 3 descriptors, M, N, K, constexprs
    assert names == ["a_desc", "w_desc", "c_desc", "M", "N", "K", *_constexprs(GOOD, 114)]
