"""The triton_gemm_splitk_fused space, and its kernel's reduction protocol as compiled for sm_90 on
a CPU (where Triton is installed; no GPU)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from flysearch.kernels import get_space, table_kernel
from flysearch.kernels._triton_fused import KERNEL_NAME, SPACE_NAME, grid, make_space
from flysearch.space import Shape, get_arch

SM90 = get_arch("sm_90")
DECODE = Shape(4, 576, 7168)


def test_space_is_the_split_k_space_from_two_splits() -> None:
    space = get_space(SPACE_NAME)
    assert table_kernel(SPACE_NAME) == KERNEL_NAME == "triton_gemm_fused"
    splitk = get_space("triton_gemm_splitk")
    assert [p.name for p in space.params] == [p.name for p in splitk.params]
    assert {p.name: tuple(p.values) for p in space.params}["SPLIT_K"] == (2, 4, 8, 16)
    assert space.size == splitk.size // 5 * 4 == 5120


@pytest.mark.parametrize("shape", [DECODE, Shape(1, 6144, 4096), Shape(512, 1536, 7168)],
                         ids=lambda s: f"{s.M}x{s.N}x{s.K}")
def test_feasible_set_is_the_split_k_familys_with_splits(shape: Shape) -> None:
    fused = {c.key for c in make_space().enumerate(shape, SM90).feasible}
    splitk = {c.key for c in get_space("triton_gemm_splitk").enumerate(shape, SM90).feasible
              if c["SPLIT_K"] > 1}
    assert fused == splitk and fused


def test_grid_has_one_program_per_tile_and_split() -> None:
    config = make_space().config(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, GROUP_M=1, SPLIT_K=8,
                                 num_warps=4, num_stages=3)
    assert grid(config, DECODE) == (9, 8, 1)


def test_space_module_imports_without_triton_or_torch() -> None:
    code = ("import sys, flysearch.kernels._triton_fused; "
            "print('triton' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_launcher_refuses_one_split_and_mismatched_shapes() -> None:
    torch = pytest.importorskip("torch")
    pytest.importorskip("triton")
    from tests.kernels._fused_launcher import gemm_launcher as fused_gemm_launcher

    config = dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=32, GROUP_M=1, SPLIT_K=1, num_warps=4, num_stages=2)
    a, w = torch.zeros(4, 64, dtype=torch.bfloat16), torch.zeros(32, 64, dtype=torch.bfloat16)
    with pytest.raises(ValueError, match="SPLIT_K must be at least 2"):
        fused_gemm_launcher(a, w, torch.zeros(4, 32, dtype=torch.bfloat16), config)
    with pytest.raises(ValueError, match="shapes do not match"):
        fused_gemm_launcher(a, w, torch.zeros(4, 33, dtype=torch.bfloat16), dict(config, SPLIT_K=2))


@pytest.mark.parametrize("config", [
    dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, GROUP_M=1, SPLIT_K=8, num_warps=4, num_stages=4),
    dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, SPLIT_K=2, num_warps=8, num_stages=3),
], ids=lambda c: make_space().config(**c).key)
def test_compiled_kernel_orders_the_partial_sums_before_the_arrival(config, tmp_path, monkeypatch) -> None:
    """In the PTX: the fp32 partial sums go out as relaxed atomics, then the whole program meets at
    a barrier, then one acquire-release atomic counts the arrival; the last program's reads of the
    workspace skip L1 (``.cg``) and come after the arrival, and its threads meet again before any
    of them zeroes the workspace (the reads and the zeroing are laid out over the threads
    differently)."""
    pytest.importorskip("triton")
    from flysearch.kernels._triton_fused import compile_config

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    ptx = compile_config(config, "n16=1,k16=1", "sm_90").asm["ptx"]
    lines = [line.strip() for line in ptx.splitlines()]

    def where(pattern: str) -> list[int]:
        return [i for i, line in enumerate(lines) if re.search(pattern, line)]

    partial = where(r"atom\.global\.gpu\.relaxed\.add(\.v\d)?\.f32")
    arrival = where(r"atom\.global\.gpu\.acq_rel\.add\.u32")
    reads = where(r"ld\.global\.cg")
    assert partial and reads and len(arrival) == 1
    barriers = where(r"^bar\.sync")
    assert any(partial[-1] < i < arrival[0] for i in barriers), "no barrier before the arrival"
    assert min(reads) > arrival[0]
    workspace = {re.search(r"\[ (%rd\d+)", lines[i]).group(1) for i in partial}
    stores = where(r"st\.global")
    zeroing = [i for i in stores if re.search(r"\[ (%rd\d+)", lines[i]).group(1) in workspace]
    assert zeroing, "the last program does not zero the workspace"
    assert any(max(reads) < i < min(zeroing) for i in barriers), "no barrier before the zeroing"


def test_the_race_compile_task_builds_the_fused_kernel(tmp_path, monkeypatch) -> None:
    pytest.importorskip("triton")
    import dataclasses

    from flysearch.evaluators import TritonCompileTask, compile_task

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    config = dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, GROUP_M=1, SPLIT_K=8, num_warps=4, num_stages=3)
    task = TritonCompileTask(config, "n16=1,k16=1", "sm_90", SPACE_NAME)
    assert compile_task(task).ok
    built = {p.name.split(".")[0] for p in tmp_path.rglob("*.cubin")}
    assert built == {"fused_splitk_gemm_kernel"}
    assert compile_task(dataclasses.replace(task, family="triton_gemm_splitk")).ok
    assert {p.name.split(".")[0] for p in tmp_path.rglob("*.cubin")} == {
        "fused_splitk_gemm_kernel", "splitk_gemm_kernel"}
