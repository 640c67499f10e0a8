"""The triton_gemm_splitk space: its size, its constraints, its specializations (no GPU, no Triton)."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest

from flysearch.kernels import get_space
from flysearch.kernels._triton_gemm import (
    SPACE_NAME,
    grid,
    make_space,
    smem_bytes,
    spec_key,
)
from flysearch.space import Shape, get_arch, load_corpus

SM90 = get_arch("sm_90")
CORPUS = "studies/shapes_h200.toml"


def test_space_is_registered_and_about_4000_configs() -> None:
    space = get_space(SPACE_NAME)
    assert space.size == 6400
    assert [p.name for p in space.params] == [
        "BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K", "num_warps", "num_stages"
    ]


def test_every_feasible_config_fits_shared_memory_and_registers() -> None:
    for config in make_space().enumerate(Shape(4096, 4096, 4096), SM90).feasible:
        assert smem_bytes(config) <= SM90.max_lds_per_block
        assert config["BLOCK_M"] * config["BLOCK_N"] <= 128 * 32 * config["num_warps"]


def test_smem_constraint_rejects_the_largest_tiles() -> None:
    space = make_space()
    big = space.config(BLOCK_M=256, BLOCK_N=256, BLOCK_K=128, GROUP_M=1, SPLIT_K=1, num_warps=8,
                       num_stages=3)
    assert smem_bytes(big) == 3 * 512 * 128 * 2
    assert space.reject_reason(big, None, SM90) == "smem_fits"


def test_decode_shapes_keep_only_small_m_tiles_and_no_grouping() -> None:
    feasible = make_space().enumerate(Shape(1, 6144, 4096), SM90).feasible
    assert {c["BLOCK_M"] for c in feasible} == {16, 32}
    assert {c["GROUP_M"] for c in feasible} == {1}
    assert max(c["SPLIT_K"] for c in feasible) == 16


def test_split_k_needs_k_iterations_and_few_tiles() -> None:
    space = make_space()
    enum = space.enumerate(Shape(4096, 4096, 4096), SM90)
    assert enum.removed["split_k_needs_few_tiles"] > 0
    for c in enum.feasible:
        assert math.ceil(4096 / c["BLOCK_K"]) >= 2 * c["SPLIT_K"]
        if c["SPLIT_K"] > 1:
            assert grid(c, Shape(4096, 4096, 4096))[0] * c["SPLIT_K"] <= 8 * 132


def test_corpus_shapes_have_hundreds_to_thousands_of_feasible_configs() -> None:
    entries = load_corpus(CORPUS)
    assert len(entries) >= 12
    assert {e.regime for e in entries} == {"decode", "small_m", "k_heavy", "prefill", "square"}
    for e in entries:
        n = len(make_space().enumerate(e.shape, SM90).feasible)
        assert 400 <= n <= 3000, (e.name, n)


def test_spec_key_depends_only_on_n_and_k_alignment() -> None:
    assert spec_key(Shape(1, 4096, 4096)) == spec_key(Shape(1000, 576, 7168))
    assert spec_key(Shape(37, 101, 203)) == "n16=0,k16=0"
    assert spec_key(Shape(37, 96, 203)) == "n16=1,k16=0"


def test_the_grid_has_one_program_per_tile_and_split() -> None:
    c = make_space().config(BLOCK_M=64, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, SPLIT_K=2, num_warps=4,
                            num_stages=3)
    assert grid(c, Shape(100, 300, 512)) == (2 * 3, 2, 1)


def test_space_module_imports_without_triton_or_torch() -> None:
    code = ("import sys, flysearch.kernels, flysearch.race, flysearch.evaluators._triton; "
            "print('triton' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_unaligned_compile_on_cpu_when_triton_is_installed(tmp_path, monkeypatch) -> None:
    pytest.importorskip("triton")
    from flysearch.evaluators import TritonCompileTask, compile_task

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    config = dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=32, GROUP_M=1, SPLIT_K=2, num_warps=4, num_stages=2)
    first = compile_task(TritonCompileTask(config, "n16=0,k16=0"))
    assert first.ok and not first.notes["cache_hit"], first
    again = compile_task(TritonCompileTask(config, "n16=0,k16=0"))
    assert again.ok and again.notes["cache_hit"]
