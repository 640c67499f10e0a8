"""aiter's Triton GEMM as the Triton family ``aiter_triton_gemm_cuda``: its space is the split-K family's
under aiter's names, its committed H200 races hold that space's configs, and its compile builds aiter's
own kernel for sm_90 on the CPU."""

from __future__ import annotations

from pathlib import Path

import pytest

from flysearch.kernels import aiter_root, get_space, table_kernel, triton_families, triton_family
from flysearch.kernels._aiter_triton_cuda import FROM_SPLITK
from flysearch.space import Config, Shape, get_arch

SM90 = get_arch("sm_90")
NAME = "aiter_triton_gemm_cuda"
DATA = Path(__file__).resolve().parents[2] / "lab" / "benchmarks" / "data" / "h200_aiter_triton"


def test_the_race_takes_the_family_and_its_tables_carry_aiters_kernel_name() -> None:
    assert NAME in triton_families()
    assert table_kernel(NAME) == "aiter_triton_gemm"
    family = triton_family(NAME)
    assert family.bind is not None and not family.reduces_in_launch
    # every shape its own binary: GRID_MN and SPLITK_BLOCK_SIZE are constexprs of the launch
    assert family.spec_key(Shape(64, 6144, 4096), 132) == family.spec_key(Shape(64, 6144, 4096), 114)
    assert family.spec_key(Shape(64, 6144, 4096), 132) != family.spec_key(Shape(64, 6144, 4160), 132)


@pytest.mark.parametrize("shape", [Shape(1, 6144, 4096), Shape(64, 6144, 4096), Shape(4096, 4096, 4096)],
                         ids=str)
def test_the_space_keeps_the_configs_the_split_k_family_keeps(shape: Shape) -> None:
    ours = get_space(NAME).enumerate(shape, SM90).feasible
    theirs = get_space("triton_gemm_splitk").enumerate(shape, SM90).feasible
    assert [c.key for c in ours] == [Config.from_dict({FROM_SPLITK[k]: v for k, v in c.items}).key
                                     for c in theirs]


def test_committed_h200_races_hold_the_feasible_configs_of_their_time() -> None:
    """The H200 races (lab/benchmarks/data/h200_aiter_triton) measured the configs the rules keep, all
    but num_stages = 5, a stage the split-K space gained after them."""
    files = sorted(DATA.glob("*.table.json.gz"))
    assert files, "the committed aiter races are missing"
    from flysearch.tables import read_table_file

    for path in files:
        meta, rows = read_table_file(path)
        assert meta.kernel == table_kernel(NAME) and meta.space["name"] == NAME
        feasible = {c.key: c for c in get_space(NAME).enumerate(meta.shape(), SM90).feasible}
        raced = {r.key for r in rows}
        assert raced <= set(feasible), path.name
        assert {feasible[k]["num_stages"] for k in set(feasible) - raced} == {5}, path.name


SPLIT = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1, "NUM_KSPLIT": 4,
         "num_warps": 4, "num_stages": 3}
WHOLE = {"BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 8, "NUM_KSPLIT": 1,
         "num_warps": 8, "num_stages": 3}


@pytest.mark.parametrize(("config", "shape"),
                         [(SPLIT, Shape(1, 6144, 4096)), (WHOLE, Shape(1024, 6144, 4096))],
                         ids=["decode-split-k", "prefill"])
def test_cpu_compile_for_sm90_is_aiters_launch(config: dict, shape: Shape, tmp_path, monkeypatch) -> None:
    pytest.importorskip("triton")
    if aiter_root() is None:
        pytest.skip("amd-aiter is not installed")
    from flysearch.kernels._aiter_triton_source import aiter_kernel

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path))
    family = triton_family(NAME)
    assert get_space(NAME).reject_reason(Config.from_dict(config), shape, SM90) is None
    kernel = family.compile_config(config, family.spec_key(shape, 132), "sm_90")
    fn, _ = aiter_kernel()
    assert kernel.src.fn is fn  # aiter's own kernel, not a copy
    names = fn.arg_names
    constants = {names[i[0]]: v for i, v in kernel.src.constants.items()}
    tiles_m, tiles_n = -(-shape.M // config["BLOCK_SIZE_M"]), -(-shape.N // config["BLOCK_SIZE_N"])
    assert constants["GRID_MN"] == tiles_m * tiles_n
    assert constants["SPLITK_BLOCK_SIZE"] == -(-shape.K // config["NUM_KSPLIT"])
    assert constants["BLOCK_SIZE_K"] == config["BLOCK_SIZE_K"] and constants["EVEN_K"] is True
    assert ("M" in constants) == (shape.M == 1)  # the JIT's specialization of M = 1
    assert kernel.metadata.num_warps == config["num_warps"]
    assert kernel.metadata.shared <= SM90.max_lds_per_block
    assert "mma" in kernel.asm["ptx"]
    # the split writes fp32 partials for aiter's reduce kernel; a whole K writes bf16 C
    assert kernel.src.signature["c_ptr"] == ("*fp32" if config["NUM_KSPLIT"] > 1 else "*bf16")
