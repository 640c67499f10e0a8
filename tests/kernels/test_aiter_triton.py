"""aiter's Triton GEMM space: its value sets, each rule on configs picked by hand (one it keeps, one
it rejects), the shipped configs read as aiter's own loader hands them to the kernel, and the
coverage the committed benchmark result reports."""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from flysearch.kernels import get_space
from flysearch.kernels._aiter_package import (
    aiter_root,
    aiter_version,
    import_aiter_module,
    triton_configs_dir,
)
from flysearch.kernels._aiter_triton import (
    ANY_M,
    BOUNDS,
    RULE_READS,
    SPACE_NAME,
    coverage,
    launch_constexprs,
    lds_bytes,
    make_space,
    register_demand,
    shipped_configs,
    vgpr_budget,
)
from flysearch.space import Config, Shape, get_arch

RESULT = Path(__file__).resolve().parents[2] / "lab" / "benchmarks" / "results" / "aiter_triton_coverage.md"
# aiter's MI300X default config for M > 2048: fits gfx942's LDS exactly.
BASE: dict[str, Any] = dict(BLOCK_SIZE_M=256, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=4, NUM_KSPLIT=1,
                            num_warps=8, num_stages=2, waves_per_eu=2, matrix_instr_nonkdim=16, kpack=1,
                            cache_modifier="")
BIG = Shape(8192, 4096, 4096)
GFX942, GFX950 = get_arch("gfx942"), get_arch("gfx950")

needs_aiter = pytest.mark.skipif(
    aiter_root() is None, reason="amd-aiter is not installed (pip install amd-aiter)"
)


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
    assert set(RULE_READS) <= set(names)


def test_rule_reads_declares_the_dimensions_each_rule_reads() -> None:
    space = make_space()
    configs = [c for i, c in enumerate(space.configs()) if i % 997 == 0]
    base = (256, 4096, 2880)
    for constraint in space.constraints:
        reads = RULE_READS.get(constraint.name, "")
        for dim, value in itertools.product("MNK", (1, 16, 100, 65536)):
            if dim in reads:
                continue
            moved = dict(zip("MNK", base, strict=True)) | {dim: value}
            for arch, c in itertools.product((GFX942, GFX950), configs):
                same = constraint(c, Shape(*base), arch) == constraint(c, Shape(**moved), arch)
                assert same, (constraint.name, dim)


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


# -- the configs aiter ships ----------------------------------------------------------------------


@contextlib.contextmanager
def _aiter_loader(arch: str) -> Iterator[Any]:
    """aiter's own ``_get_config`` as it runs on *arch*, its caches emptied before and after."""
    module = import_aiter_module("ops.triton._triton_kernels.gemm_a16w16")
    get_config = module._get_config
    held = vars(get_config).pop("_config_dict", None)
    get_config.cache_clear()
    try:
        with mock.patch.object(module.arch_info, "get_arch", lambda: arch):
            yield get_config
    finally:
        get_config.cache_clear()
        vars(get_config).pop("_config_dict", None)
        if held is not None:
            get_config._config_dict = held


@needs_aiter
def test_shipped_configs_read_every_file_of_this_kernel_and_no_other() -> None:
    shipped = shipped_configs()
    names = {p.name for p in triton_configs_dir().iterdir()}
    ours = {n for n in names if re.fullmatch(r"MI3[05]0X-GEMM-A16W16(-N=\d+-K=\d+)?\.json", n)}
    assert {s.file for s in shipped} == ours
    assert not any(word in f for f in ours for word in ("ATOMIC", "gated", "BATCHED", "FUSED", "FF"))
    entries = sum(len(json.loads((triton_configs_dir() / f).read_text())) for f in ours)
    assert len(shipped) == entries
    assert {s.arch for s in shipped} == {"gfx942", "gfx950"}
    assert shipped_configs("gfx942") == [s for s in shipped if s.arch == "gfx942"]
    for s in shipped:
        assert set(s.params) == {p.name for p in make_space().params}
        assert (s.N is None) == (s.file.count("-N=") == 0)
        for key, who in s.defaults.items():
            assert key not in s.written and who in ("aiter _get_config", "triton HIPOptions")
        assert s.params["cache_modifier"] == (s.written["cache_modifier"] or "")


@needs_aiter
def test_shipped_params_are_what_aiters_loader_hands_the_kernel() -> None:
    pytest.importorskip("triton")
    shipped = shipped_configs()
    for arch in ("gfx942", "gfx950"):
        with _aiter_loader(arch) as get_config:
            for s in (s for s in shipped if s.arch == arch and s.m_range is not None):
                lo, hi = s.m_range
                n, k = (s.N, s.K) if s.N is not None else (4096, 4096)  # no file: the default one
                for m in (lo + 1, hi if hi is not None else ANY_M):
                    got = dict(get_config(m, n, k))
                    got.pop("SPLITK_BLOCK_SIZE")
                    got["cache_modifier"] = got["cache_modifier"] or ""
                    expected = {key: v for key, v in s.params.items() if key in got}
                    assert got == expected, (s.name, m)
                    assert set(s.params) - set(got) <= set(s.defaults)


@needs_aiter
def test_shipped_k_tiles_are_what_a_launch_passes() -> None:
    """One K clamp: the shipped configs' lowered BLOCK_SIZE_K is the launch's at their own K."""
    for s in (s for s in shipped_configs() if s.K is not None):
        config = {**s.params, "BLOCK_SIZE_K": s.written["BLOCK_SIZE_K"]}
        got = launch_constexprs(config, Shape(s.eval_M, s.N or 1, s.K))
        assert got["BLOCK_SIZE_K"] == s.params["BLOCK_SIZE_K"], s.name
        assert got["SPLITK_BLOCK_SIZE"] == -(-s.K // int(s.params["NUM_KSPLIT"]))


@needs_aiter
def test_keys_aiter_never_reads_and_files_without_any() -> None:
    pytest.importorskip("triton")
    shipped = shipped_configs()
    for s in shipped:
        assert (s.m_range is None) == (s.bucket != "any" and s.bucket not in {f"M_LEQ_{b}" for b in BOUNDS})
    for s in (s for s in shipped if s.m_range is None):
        files = [x for x in shipped if x.file == s.file and x.m_range is not None]
        top = max(x.m_range[1] or ANY_M for x in files if x.m_range is not None)
        if not any(x.bucket == "any" for x in files):
            with _aiter_loader(s.arch) as get_config, pytest.raises(KeyError):
                get_config(top + 1, s.N, s.K)


@needs_aiter
def test_coverage_of_the_shipped_configs() -> None:
    cov = coverage()
    space = make_space()
    assert len(cov.results) == len(shipped_configs())
    for r in cov.results:
        assert r.outside == {p.name: r.shipped.params[p.name] for p in space.params
                             if r.shipped.params[p.name] not in p.values}
        if r.outside:  # the shipped values outside the sets: tiles below one MFMA
            assert set(r.outside) <= {"BLOCK_SIZE_M", "BLOCK_SIZE_N"} and min(r.outside.values()) < 16
            assert "mfma_tiles_block" in r.failed
        assert r.shape.M == r.shipped.eval_M
        if r.shipped.N is None:
            assert set(r.not_applicable) == {n for n, dims in RULE_READS.items() if set(dims) & {"N", "K"}}
    assert sum(cov.misses().values()) == sum(len(r.failed) for r in cov.results)


def _reported_misses() -> dict[str, dict[str, int]]:
    """Per arch, the misses by rule the committed benchmark result reports."""
    text = RESULT.read_text()
    out: dict[str, dict[str, int]] = {}
    for arch, body in re.findall(r"### (gfx\d+): misses by rule\n\n(.*?)(?:\n\n|\Z)", text, re.S):
        rows = re.finditer(r"^\| (\w+) \| (\d+)", body, re.M)
        out[arch] = {row.group(1): int(row.group(2)) for row in rows}
    return out


@needs_aiter
def test_committed_result_reports_these_misses() -> None:
    text = RESULT.read_text()
    recorded = re.search(r"amd-aiter (\S+),", text)
    if recorded is None or recorded.group(1) != aiter_version():
        pytest.skip(f"the result was made with another amd-aiter than {aiter_version()}")
    reported = _reported_misses()
    cov = coverage()
    for arch in ("gfx942", "gfx950"):
        assert reported[arch] == cov.for_arch(arch).misses()
