"""triton-amd-compile: aiter's Triton GEMM compiled for gfx942/gfx950 on this CPU, its resources read
from the real compiler output, rejections, failures kept as outcomes; and the doctor's line for it.

The compiles are real (Triton 3.6's HIP backend, aiter's kernel); only the hang and the crash use
stand-in task functions (module-level, so that the spawned workers import them).
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest
from click.testing import CliRunner

from flysearch.cli import _doctor as doctor
from flysearch.cli import main
from flysearch.costmodel import feature_columns
from flysearch.costmodel._features import RESOURCE_FIELDS
from flysearch.evaluators import TritonAmdCompileEvaluator, amd_compile_fix
from flysearch.evaluators._resources import occupancy, parse_amdgcn_metadata, reported_occupancy
from flysearch.kernels import aiter_triton_launch_constexprs as launch_constexprs
from flysearch.space import Config, Shape, get_arch
from flysearch.tables import Outcome

needs_amd = pytest.mark.skipif(amd_compile_fix() is not None, reason=f"{amd_compile_fix()}")

DECODE = Shape(16, 4096, 4096)
# aiter's shipped MI300X config for M <= 64 (MI300X-GEMM-A16W16.json, "M_LEQ_64").
SHIPPED = {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128, "GROUP_SIZE_M": 1,
           "NUM_KSPLIT": 1, "num_warps": 4, "num_stages": 2, "waves_per_eu": 2,
           "matrix_instr_nonkdim": 16, "kpack": 1, "cache_modifier": ".cg"}
# A 256 x 256 fp32 accumulator on 4 warps is 256 registers a lane: on gfx942 it spills.
SPILLS = {**SHIPPED, "BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64, "waves_per_eu": 0}
BAD_WARPS = {**SHIPPED, "num_warps": 3}  # Triton asserts a power of two

# The notes of a kernel that uses AGPRs, as LLVM writes them (trimmed): .vgpr_count is the unified
# total align(vgpr, 4) + agpr; the architected count is the .set symbol.
NOTES = """
\t.set k0.num_vgpr, 254
\t.set k0.num_agpr, 128
; Occupancy: 1
\t.amdgpu_metadata
---
amdhsa.kernels:
  - .agpr_count:     128
    .args:
      - .offset:         0
        .size:           8
        .value_kind:     global_buffer
    .group_segment_fixed_size: 0
    .max_flat_workgroup_size: 512
    .name:           k0
    .private_segment_fixed_size: 16
    .sgpr_count:     42
    .sgpr_spill_count: 0
    .vgpr_count:     384
    .vgpr_spill_count: 3
    .wavefront_size: 64
  - .agpr_count:     0
    .max_flat_workgroup_size: 64
    .name:           k1
    .sgpr_count:     20
    .vgpr_count:     30
amdhsa.target:   amdgcn-amd-amdhsa--gfx942
amdhsa.version:
  - 1
  - 2
...
\t.end_amdgpu_metadata
"""


def hang_task(payload: dict[str, Any]) -> dict[str, Any]:
    time.sleep(600)
    return {}


def crash_task(payload: dict[str, Any]) -> dict[str, Any]:
    os._exit(9)


def test_notes_parse_with_agprs_and_dynamic_lds() -> None:
    k0, k1 = parse_amdgcn_metadata(NOTES, dynamic_lds_bytes=32768)
    assert (k0.kernel, k0.vgpr, k0.agpr, k0.sgpr) == ("k0", 254, 128, 42)
    assert (k0.lds_bytes, k0.scratch_bytes, k0.spills, k0.max_threads) == (32768, 16, 3, 512)
    assert (k1.vgpr, k1.agpr, k1.lds_bytes, k1.wave_size) == (30, 0, 32768, 64)  # no .set: the total
    # align(254, 4) + 128 = 384 registers -> 512 // 384 = 1 wave; counting the total twice gives 0
    assert occupancy(k0, get_arch("gfx942")) == 1
    assert reported_occupancy(NOTES) == 1
    assert parse_amdgcn_metadata("no notes here") == [] and reported_occupancy("") is None


def test_launch_constexprs_derive_the_split_and_clamp_the_k_tile() -> None:
    got = launch_constexprs({**SHIPPED, "NUM_KSPLIT": 4}, Shape(16, 4096, 256))
    assert (got["SPLITK_BLOCK_SIZE"], got["BLOCK_SIZE_K"]) == (64, 64)
    assert launch_constexprs({**SHIPPED, "cache_modifier": ""}, DECODE)["cache_modifier"] is None
    with pytest.raises(ValueError, match="unknown \\['BLOCK_M'\\]"):
        launch_constexprs({**SHIPPED, "BLOCK_M": 64}, DECODE)
    with pytest.raises(ValueError, match="bf16 or fp16"):
        launch_constexprs(SHIPPED, Shape(16, 4096, 4096, "fp8"))


@needs_amd
@pytest.mark.parametrize("K", [40, 64, 100, 4096])
def test_launch_constexprs_match_aiters_own_get_config(K: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from flysearch.kernels import import_aiter_module

    aiter = import_aiter_module("ops.triton._triton_kernels.gemm_a16w16")
    monkeypatch.setattr(aiter.arch_info, "get_device", lambda: "MI300X")
    monkeypatch.delattr(aiter._get_config, "_config_dict", raising=False)
    aiter._get_config.cache_clear()
    theirs = aiter._get_config(16, 4096, K)
    ours = launch_constexprs(SHIPPED, Shape(16, 4096, K))
    assert {k: ours[k] for k in ("BLOCK_SIZE_K", "SPLITK_BLOCK_SIZE")} == {
        k: theirs[k] for k in ("BLOCK_SIZE_K", "SPLITK_BLOCK_SIZE")}
    aiter._get_config.cache_clear()


# Under pytest-xdist one worker runs this module, so that its module fixture is set up once.
pytestmark = pytest.mark.xdist_group("evaluators/test_triton_amd")


@pytest.fixture(scope="module")
def compiled() -> dict[str, Any]:
    """Real compiles: the shipped config on both archs, a spilling one and a bad one on gfx942."""
    if amd_compile_fix() is not None:
        pytest.skip(amd_compile_fix())
    out = {}
    for arch, configs in (("gfx942", [SHIPPED, SPILLS, BAD_WARPS]), ("gfx950", [SHIPPED])):
        with TritonAmdCompileEvaluator(arch, workers=2) as ev:
            results = ev.compile_many([Config.from_dict(c) for c in configs], DECODE)
            out[arch] = (ev, results)
    return out


@needs_amd
@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_a_real_compile_reads_its_resources(compiled: dict[str, Any], arch: str) -> None:
    ev, (ok, *_) = compiled[arch]
    assert ok.outcome is Outcome.OK and ok.detail == "" and 0 < ok.compile_s < 60
    res = ev.resources(ok)
    assert res["kernel"].startswith("_gemm_a16_w16_kernel")
    assert res["max_threads"] == 4 * 64 and res["wave_size"] == 64
    assert 0 < res["vgpr"] <= 512 and 0 < res["sgpr"] <= 106 and res["spills"] == 0
    # two stages of a 64 x 128 A tile and a 128 x 128 B tile, bf16: Triton's dynamic LDS
    assert res["lds_bytes"] == 49152
    assert 1 <= res["occupancy"] <= 8 and 1 <= res["llvm_occupancy"] <= 8
    assert len(res["code_sha256"]) == 64  # the code's digest, for telling equal compiles apart
    # LLVM does not see the dynamic LDS: on gfx942 (64 KiB) one 4-wave workgroup fits a CU
    if arch == "gfx942":
        assert res["occupancy"] == 1 < res["llvm_occupancy"]


@needs_amd
def test_a_config_that_spills_is_rejected_with_the_reason(compiled: dict[str, Any]) -> None:
    ev, (_, spills, _) = compiled["gfx942"]
    assert spills.outcome is Outcome.REJECTED and spills.detail == "resource:spills"
    res = ev.resources(spills)
    assert res["spills"] > 0 and res["scratch_bytes"] > 0 and res["agpr"] > 0


@needs_amd
def test_a_compile_that_raises_is_a_recorded_failure(compiled: dict[str, Any]) -> None:
    ev, (*_, bad) = compiled["gfx942"]
    assert bad.outcome is Outcome.COMPILE_FAILED and "power of 2" in bad.detail
    measurement = ev.time(bad)
    assert measurement.outcome is Outcome.COMPILE_FAILED and measurement.extra == {}


@needs_amd
def test_resources_land_in_the_measurement_under_the_cost_models_names(compiled: dict[str, Any]) -> None:
    ev, (ok, spills, _) = compiled["gfx942"]
    extras = [ev.time(c).extra for c in (ok, spills)]
    assert ev.time(ok).outcome is Outcome.RUNTIME_FAILED  # compile-only: nothing to time on
    assert all(set(RESOURCE_FIELDS) <= set(e) for e in extras)
    columns = feature_columns([SHIPPED, SPILLS], DECODE.as_dict(), get_arch("gfx942"), extras)
    for name in ("spills", "agpr", "occupancy"):
        assert columns[f"r_{name}"][1] == extras[1][name]


def test_a_hanging_compile_is_killed_and_recorded() -> None:
    with TritonAmdCompileEvaluator("gfx942", timeout_s=3.0, task=hang_task) as ev:
        start = time.monotonic()
        got = ev.compile(Config.from_dict(SHIPPED), DECODE)
        assert time.monotonic() - start < 30
    assert got.outcome is Outcome.COMPILE_FAILED and got.detail.startswith("compile timeout")
    assert got.compile_s >= 3.0


def test_a_compile_that_kills_its_worker_is_recorded_and_the_next_one_runs() -> None:
    with TritonAmdCompileEvaluator("gfx950", task=crash_task) as ev:
        got = ev.compile_many([Config.from_dict(SHIPPED), Config.from_dict(SPILLS)], DECODE)
    assert [g.outcome for g in got] == [Outcome.COMPILE_FAILED] * 2
    assert all("crash" in g.detail and "exit code 9" in g.detail for g in got)


def test_the_evaluator_refuses_a_non_amd_arch_and_unknown_keys() -> None:
    with pytest.raises(ValueError, match="AMD"):
        TritonAmdCompileEvaluator("sm_90", task=hang_task)
    ev = TritonAmdCompileEvaluator("gfx942", task=hang_task)
    with ev, pytest.raises(ValueError, match="SPLIT_K"):
        ev.compile(Config.from_dict({**SHIPPED, "SPLIT_K": 2}), DECODE)


@needs_amd
def test_doctor_says_triton_amd_compile_runs_here() -> None:
    start = time.monotonic()
    check = doctor._triton_amd()
    assert time.monotonic() - start < 10  # about 2 s: one worker, one tiny compile per arch
    assert check.ok and check.name == "evaluator triton-amd-compile (gfx942, gfx950)"


def test_doctor_names_the_install_when_a_package_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor, "amd_compile_fix", lambda: "pip install amd-aiter")
    version = doctor._version
    monkeypatch.setattr(doctor, "_version", lambda name: None if name == "amd-aiter" else version(name))
    checks = {c.name: c for c in doctor.run_checks()}
    line = checks["evaluator triton-amd-compile (gfx942, gfx950)"]
    assert not line.ok and line.detail.endswith("pip install amd-aiter")
    assert checks["amd-aiter"].detail == "not installed: pip install amd-aiter"
    assert "evaluator flydsl-compile (gfx942, gfx950)" in checks  # the FlyDSL line stays


def test_doctor_command_prints_the_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(doctor, "amd_compile_fix", lambda: "pip install 'triton>=3.6,<3.7'")
    result = CliRunner().invoke(main, ["doctor"])
    assert result.exit_code == 0
    text = " ".join(result.output.split())  # rich wraps long lines
    assert "triton-amd-compile (gfx942, gfx950): cannot run here; pip install 'triton>=3.6,<3.7'" in text
