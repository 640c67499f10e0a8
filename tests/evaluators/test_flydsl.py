from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from flysearch.evaluators import find_lld
from flysearch.evaluators._resources import (
    KernelResources,
    occupancy,
    parse_kernel_metadata,
    resource_reject_reason,
)
from flysearch.export._flydsl_artifacts import FlydslDevice, artifact_path, write_flydsl_artifact
from flysearch.kernels._flydsl_config import (
    ConfigMappingError,
    FlydslConfigSpec,
    TritonConfigSpec,
    flydsl_to_triton,
    to_flydsl_config,
    triton_to_flydsl,
)
from flysearch.space import Config, Shape, get_arch
from flysearch.tables import Outcome

HAS_FLYDSL = importlib.util.find_spec("flydsl") is not None
needs_flydsl = pytest.mark.skipif(not HAS_FLYDSL, reason="flydsl is not installed (pip install flydsl)")
needs_toolchain = pytest.mark.skipif(
    not HAS_FLYDSL or find_lld() is None, reason="flydsl or ld.lld >= 19 (Debian lld-19) is missing"
)

METADATA = (
    '#gpu.kernel_metadata<"gemm_0", !llvm.func<void (ptr<1>)>, metadata = {agpr_count = 32 : i64, '
    "group_segment_fixed_size = 40960 : i64, max_flat_workgroup_size = 256 : i64, "
    "private_segment_fixed_size = 0 : i64, sgpr_count = 40 : i64, sgpr_spill_count = 0 : i64, "
    "vgpr_count = 90 : i64, vgpr_spill_count = 0 : i64, wavefront_size = 64 : i64}>"
)


def test_config_mapping() -> None:
    spec = to_flydsl_config(Config.from_dict({"BLOCK_M": 64, "num_warps": 4, "waves_per_eu": 2}))
    assert spec == FlydslConfigSpec({"BLOCK_M": 64}, 4, 2)
    with pytest.raises(ConfigMappingError, match="put waves_per_eu"):
        to_flydsl_config({"BLOCK_M": 64, "maxnreg": 128})


@needs_flydsl
def test_mapping_matches_the_installed_flydsl() -> None:
    import flydsl

    built = FlydslConfigSpec({"BLOCK_M": 64}, 4, 2).build()
    assert built.all_kwargs() == {"BLOCK_M": 64, "num_warps": 4}
    assert built.compiler_opts() == {"waves_per_eu": 2}
    with pytest.raises(TypeError, match="waves_per_eu"):
        flydsl.Config(maxnreg=128)


def test_ports_move_each_field_where_the_other_framework_reads_it() -> None:
    triton = TritonConfigSpec({"BLOCK_M": 128, "BLOCK_N": 64, "waves_per_eu": 2}, num_warps=8, num_stages=2)
    with pytest.raises(ConfigMappingError, match="num_stages=2"):
        triton_to_flydsl(triton)
    fly = triton_to_flydsl(triton, stages_param="STAGES")
    assert fly == FlydslConfigSpec({"BLOCK_M": 128, "BLOCK_N": 64, "STAGES": 2}, 8, 2)
    assert flydsl_to_triton(fly, stages_param="STAGES") == triton
    with pytest.raises(ConfigMappingError, match="maxnreg"):
        triton_to_flydsl(TritonConfigSpec({"BLOCK_M": 16}, maxnreg=128))


def test_metadata_occupancy_and_rejection() -> None:
    (res,) = parse_kernel_metadata("junk " + METADATA + " more")
    assert (res.vgpr, res.agpr, res.sgpr, res.lds_bytes, res.max_threads) == (90, 32, 40, 40960, 256)
    gfx942, gfx950 = get_arch("gfx942"), get_arch("gfx950")
    # registers: align(90, 4) + 32 = 124 -> 128 per wave -> 512 // 128 = 4 waves per SIMD
    # LDS: gfx942 fits 65536 // 40960 = 1 workgroup of 4 waves on 4 SIMDs -> 1 wave per SIMD
    assert occupancy(res, gfx942) == 1
    assert occupancy(res, gfx950) == 4  # 163840 // 40960 = 4 workgroups -> 4, then registers cap 4
    assert resource_reject_reason([res], gfx942) is None
    big = KernelResources("k", 64, 0, 20, 70_000, 0, 0, 0, 64, 256)
    assert resource_reject_reason([big], gfx942) == "lds_over_limit"
    assert resource_reject_reason([big], gfx950) is None
    spill = KernelResources("k", 512, 0, 20, 0, 256, 12, 0, 64, 256)
    assert resource_reject_reason([spill], gfx950) == "spills"


def test_artifact_name_and_body(tmp_path: Path) -> None:
    device = FlydslDevice("AMD Instinct MI300X", "gfx942", 304)
    path = write_flydsl_artifact(tmp_path, name="gemm", key={"M": 1}, device=device,
                                 config=FlydslConfigSpec({"BLOCK_M": 16}, 4, None))
    doc = json.loads(path.read_text())
    assert doc == {"version": 1, "config": {"BLOCK_M": 16, "num_warps": 4},
                   "identity": {"name": "gemm", "key": {"M": 1}, "device": {
                       "name": "AMD Instinct MI300X", "arch": "gfx942", "compute_units": 304}}}
    assert path == artifact_path(tmp_path, "gemm", {"M": 1}, device)
    assert artifact_path(tmp_path, "gemm", {"M": 2}, device) != path
    assert not list(tmp_path.glob(".*.tmp"))


@needs_flydsl
def test_flydsl_own_loader_accepts_the_artifact(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """flydsl's Autotuner resolves the config from our file without tuning."""
    import importlib

    import torch

    fly_autotune = importlib.import_module("flydsl.autotune")  # the module; flydsl.autotune is the function

    device = FlydslDevice("AMD Instinct MI300X", "gfx942", 304)
    monkeypatch.setenv("FLYDSL_AUTOTUNE_CONFIG_DIR", str(tmp_path))
    monkeypatch.setenv("FLYDSL_AUTOTUNE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("FLYDSL_AUTOTUNE", raising=False)
    # No AMD GPU here: supply the identity flydsl would read from torch on the target device.
    monkeypatch.setattr(fly_autotune, "_device_descriptor", lambda device_=None: {
        "name": device.name, "arch": device.arch, "compute_units": device.compute_units})

    def gemm(a: Any, b: Any, c: Any, M: int, N: int, K: int, BLOCK_M: int = 16, BLOCK_N: int = 16,
             num_warps: int = 4, stream: Any = None) -> None:
        raise AssertionError("resolve_config must not launch or tune")

    tuner = fly_autotune.autotune(configs=[], key=["M", "N", "K"], artifact_name="flysearch_gemm")(gemm)
    spec = FlydslConfigSpec({"BLOCK_M": 64, "BLOCK_N": 128}, num_warps=8, waves_per_eu=2)
    write_flydsl_artifact(tmp_path, name="flysearch_gemm", key={"M": 1, "N": 4096, "K": 4096},
                          device=device, config=spec)
    a = torch.zeros(1)
    resolved = tuner.resolve_config(a, a, a, 1, 4096, 4096)
    assert resolved.to_dict() == {"BLOCK_M": 64, "BLOCK_N": 128, "num_warps": 8, "waves_per_eu": 2}
    # A config the kernel cannot take is refused by flydsl's loader: it falls back to tuning.
    write_flydsl_artifact(tmp_path, name="flysearch_gemm", key={"M": 1, "N": 4096, "K": 4096},
                          device=device, config=FlydslConfigSpec({"TILE": 3}, 8, None))
    fresh = fly_autotune.autotune(configs=[], key=["M", "N", "K"], artifact_name="flysearch_gemm")(gemm)
    with pytest.raises(RuntimeError, match="All autotune configs failed"):
        fresh.resolve_config(a, a, a, 1, 4096, 4096)


TOY = "tests.flydsl_toy:toy_factory"


@needs_toolchain
@pytest.mark.parametrize("arch", ["gfx942", "gfx950"])
def test_compile_only_reads_resources(arch: str) -> None:
    from flysearch.evaluators import FlydslCompileEvaluator

    evaluator = FlydslCompileEvaluator(TOY, arch, space_params=["BLOCK_M", "num_warps"])
    shape = Shape(256, 256, 1, "fp32")
    small = evaluator.compile(Config.from_dict({"BLOCK_M": 16, "num_warps": 1}), shape)
    large = evaluator.compile(Config.from_dict({"BLOCK_M": 128, "num_warps": 2}), shape)
    assert small.outcome is large.outcome is Outcome.OK
    r_small, r_large = evaluator.resources(small), evaluator.resources(large)
    assert 0 < r_small["vgpr"] < r_large["vgpr"]  # 4x the elements per thread
    assert (r_small["max_threads"], r_large["max_threads"]) == (64, 128)
    assert r_small["wave_size"] == 64 and 1 <= r_large["occupancy"] <= 8
    assert small.compile_s > 0
    measured = evaluator.time(small)
    assert measured.outcome is Outcome.RUNTIME_FAILED and "no AMD GPU" in measured.detail


@needs_toolchain
def test_compile_failures_and_unmapped_parameters_are_caught() -> None:
    from flysearch.evaluators import FlydslCompileEvaluator

    evaluator = FlydslCompileEvaluator(TOY, "gfx942", space_params=["BLOCK_M", "num_warps", "SWIZZLE"])
    with pytest.raises(ConfigMappingError, match=r"\['SWIZZLE'\]"):
        evaluator.compile(Config.from_dict({"BLOCK_M": 16, "num_warps": 1, "SWIZZLE": 1}), Shape(256, 256, 1))
    ok = FlydslCompileEvaluator(TOY, "gfx942")
    # BLOCK_M=2 gives a zero-sized value layout: the compiler dies with SIGFPE, the evaluator does not.
    bad = ok.compile(Config.from_dict({"BLOCK_M": 2, "num_warps": 1}), Shape(256, 256, 1, "fp32"))
    assert bad.outcome is Outcome.COMPILE_FAILED and "compiler process died" in bad.detail
    slow = FlydslCompileEvaluator(TOY, "gfx942", timeout_s=0.5)
    hung = slow.compile(Config.from_dict({"BLOCK_M": 16, "num_warps": 1}), Shape(256, 256, 1, "fp32"))
    assert hung.outcome is Outcome.COMPILE_FAILED and "timeout" in hung.detail


def test_flydsl_race_needs_an_amd_gpu() -> None:
    from click.testing import CliRunner

    from flysearch.cli import main

    result = CliRunner().invoke(main, ["flydsl", "race", "--shape", "256x256x256"])
    assert result.exit_code == 2 and "needs an AMD GPU" in result.output


def test_sweep_writes_any_evaluator_into_a_resumable_table(conv_a100: Any, tmp_path: Path) -> None:
    from flysearch.evaluators import ReplayEvaluator
    from flysearch.race import sweep_to_table
    from flysearch.tables import TableMeta, TableStore, space_for_table

    configs = space_for_table(conv_a100).enumerate().feasible[:120]
    meta = TableMeta(name="remeasured", kernel="conv", arch="sm_80", device="A100", problem={},
                     space=conv_a100.meta.space)
    store = TableStore(tmp_path / "t.db")
    assert sweep_to_table(ReplayEvaluator(conv_a100), configs[:50], None, meta, store, batch=7) == 50
    assert sweep_to_table(ReplayEvaluator(conv_a100), configs, None, meta, store, batch=7) == 70
    table = store.load("remeasured")
    assert len(table) == 120
    for key, row in table.rows.items():
        source = conv_a100.rows[key]
        assert (row.outcome, row.time_ms) == (source.outcome, source.time_ms)


@needs_toolchain
def test_live_flydsl_backend_compiles_in_the_pool_and_reads_resources() -> None:
    """The live study's FlyDSL compile task, run in a pool process as a live study runs it."""
    from flysearch.evaluators import WorkerPool, flydsl_backend

    backend = flydsl_backend(TOY, "gfx942")
    shape = Shape(256, 256, 1, "fp32")
    payload = backend.compile_payload(Config.from_dict({"BLOCK_M": 16, "num_warps": 1}), shape)
    with WorkerPool(backend.compile_fn, workers=1, timeout_s=300) as pool:
        pool.submit("k", payload)
        (res,) = pool.drain()
    assert res.ok and res.value.ok, res
    assert res.value.extra["vgpr"] > 0 and res.value.compile_s > 0
    timing = backend.time_payload(Config.from_dict({"BLOCK_M": 16, "num_warps": 1}), shape, None)
    assert timing.arch == "gfx942" and timing.shape == shape.as_dict()


def test_export_names_cu_when_no_profile_knows_the_device(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from flysearch.cli import main

    result = CliRunner().invoke(main, ["export", "flydsl", "--db", str(tmp_path / "none.db"), "--table", "t",
                                       "--device", "Some Board", "--arch", "gfx942", "--name", "gemm",
                                       "--key", "M", "--out", str(tmp_path)])
    assert result.exit_code == 2 and "Give its CU count with --cu." in result.output
    assert "Traceback" not in result.output
