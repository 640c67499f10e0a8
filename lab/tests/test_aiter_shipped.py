"""The configs aiter ships for its Triton GEMM (``lab/benchmarks/_aiter_shipped.py``): read as aiter's
own loader hands them to the kernel, lowered by flysearch's one K clamp, checked against the space's
rules (and which shape dimensions each rule reads), and the coverage the committed result reports."""

from __future__ import annotations

import contextlib
import itertools
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from _aiter_shipped import ANY_M, BOUNDS, RULE_READS, coverage, shipped_configs

from flysearch.kernels import (
    aiter_root,
    aiter_triton_launch_constexprs,
    aiter_triton_space,
    aiter_version,
    import_aiter_module,
    triton_configs_dir,
)
from flysearch.space import Shape, get_arch

RESULT = Path(__file__).resolve().parents[1] / "benchmarks" / "results" / "aiter_triton_coverage.md"
GFX942, GFX950 = get_arch("gfx942"), get_arch("gfx950")

needs_aiter = pytest.mark.skipif(
    aiter_root() is None, reason="amd-aiter is not installed (pip install amd-aiter)"
)


def test_every_rule_it_declares_is_one_of_the_space() -> None:
    assert set(RULE_READS) <= {c.name for c in aiter_triton_space().constraints}


def test_rule_reads_declares_the_dimensions_each_rule_reads() -> None:
    space = aiter_triton_space()
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
        assert set(s.params) == {p.name for p in aiter_triton_space().params}
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
        got = aiter_triton_launch_constexprs(config, Shape(s.eval_M, s.N or 1, s.K))
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
    space = aiter_triton_space()
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
