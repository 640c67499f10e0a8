"""The compile-only check of a user's kernel for an AMD arch (``flysearch tune check``): real
compiles for gfx942 on this CPU (Triton 3.6's HIP backend; flydsl with ld.lld >= 19), resources
read, spilling configs rejected and stored, and a later tune on that arch skipping them unbuilt."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

import flysearch
from flysearch.cli import main
from flysearch.evaluators import TimingProtocol, find_lld
from flysearch.space import get_arch
from flysearch.tables import read_table_file
from flysearch.tune import checking
from flysearch.tune._measure import CallLauncher, KernelEvaluator
from flysearch.tune._workload import Workload

KERNELS = Path(__file__).with_name("amd_kernels.py")
HAS_TRITON_36 = importlib.util.find_spec("triton") is not None and importlib.metadata.version(
    "triton").startswith("3.6.")
needs_triton_amd = pytest.mark.skipif(not HAS_TRITON_36, reason="Triton 3.6 (its HIP backend) is missing")
needs_flydsl = pytest.mark.skipif(importlib.util.find_spec("flydsl") is None or find_lld() is None,
                                  reason="flydsl or ld.lld >= 19 (Debian lld-19) is missing")


def _check(tmp_path: Path, workload: str, keys: str, *extra: str) -> object:
    (tmp_path / "keys.toml").write_text(keys)
    return CliRunner().invoke(main, ["tune", "check", f"{KERNELS}:{workload}", "--keys",
                                     str(tmp_path / "keys.toml"), "--out", str(tmp_path / "out"),
                                     "--store", str(tmp_path / "s.db"), *extra])


@needs_triton_amd
def test_a_triton_kernel_is_checked_for_gfx942_and_its_spilling_config_stored_rejected(tmp_path):
    result = _check(tmp_path, "softmax_workload", "[[key]]\nn_cols = 1000\n", "--arch", "gfx942")
    assert result.exit_code == 0, result.output
    assert ("softmax_rows n_cols=1000: 4 compiled for gfx942, 1 spilling, 1 rejected (1 spills), "
            "0 failed to compile") in result.output
    (path,) = (tmp_path / "out").iterdir()
    meta, rows = read_table_file(path)
    assert meta.arch == "gfx942" and meta.problem == {"n_cols": 1000}
    by_key = {r.key: r for r in rows}
    spilling = by_key["BLOCK=8192,num_warps=1"]
    assert spilling.outcome == "rejected" and spilling.detail == "resource:spills"
    assert spilling.extra["spills"] > 0 and spilling.time_ms is None
    small = by_key["BLOCK=1024,num_warps=8"]
    assert small.outcome == "runtime_failed" and 0 < small.extra["vgpr"] < spilling.extra["vgpr"]
    assert small.extra["occupancy"] == 8 and small.extra["lds_bytes"] >= 0
    # The store keeps the rejection under the kernel's identity on the arch.
    os.environ["FLYSEARCH_AUTOTUNE_DB"] = str(tmp_path / "s.db")
    try:
        from flysearch.tune._workload_file import load_workload

        kernel = load_workload(f"{KERNELS}:softmax_workload").__globals__["softmax_rows"]
    finally:
        del os.environ["FLYSEARCH_AUTOTUNE_DB"]
    key = kernel.args.named((1000,)).key
    assert kernel.store.rejected(kernel.tuner.identity("gfx942"), key) == {
        "BLOCK=8192,num_warps=1": "resource:spills"}


@needs_flydsl
def test_a_flydsl_kernel_is_compiled_for_gfx942_on_this_cpu(tmp_path):
    os.environ["FLYSEARCH_AUTOTUNE_DB"] = str(tmp_path / "s.db")
    try:
        from flysearch.tune._workload_file import load_workload

        workload = load_workload(f"{KERNELS}:add_workload")
    finally:
        del os.environ["FLYSEARCH_AUTOTUNE_DB"]
    with checking(tmp_path, "gfx942") as run:
        assert workload(m=512) is None  # nothing launched
    ((line, path),) = run.checked
    assert line == "add_tiles A=512x64:float32: 4 compiled for gfx942, 1 spilling, 1 rejected (1 spills), " \
                   "0 failed to compile"
    rows = {r.key: r for r in read_table_file(path)[1]}
    spilling, wide = rows["BLOCK_M=512,num_warps=1"], rows["BLOCK_M=512,num_warps=4"]
    assert spilling.outcome == "rejected" and spilling.extra["vgpr_spills"] > 0
    assert wide.outcome == "runtime_failed" and wide.extra["spills"] == 0
    assert rows["BLOCK_M=16,num_warps=1"].extra["vgpr"] < wide.extra["vgpr"]


def test_a_tune_on_the_arch_skips_stored_rejections_without_compiling(tmp_path):
    built: list[int] = []

    @flysearch.autotune(space={"chunk": [16, 64, 256, 1024]}, key=["n"], store=str(tmp_path / "s.db"),
                        budget=4, finalists=1, rounds=1)
    def double(x, out, n, chunk):
        built.append(chunk)
        out[:n] = x[:n] * 2

    key, gfx942 = double.args.named((256,)), get_arch("gfx942")
    double.store.reject(double.tuner.identity("gfx942"), key.key, {"chunk=1024": "resource:spills"})
    x = np.arange(256.0)
    arguments = {"x": x, "out": np.empty(256), "n": 256}
    evaluator = KernelEvaluator(CallLauncher(double.fn, arguments), Workload(arguments),
                                TimingProtocol(batches=2, warmup=1, min_batch_ms=0.01))
    result = double.tuner.tune(key, "AMD Instinct MI300X", gfx942, evaluator)
    assert 1024 not in built and result.compiles == 3 and result.config["chunk"] != 1024
    # Without the arch (or on another one) nothing is skipped.
    assert double.tuner._without_rejected(key, get_arch("sm_90")) is double.space


@pytest.mark.parametrize(("arch", "needle"), [("gfx9999", "Unknown arch 'gfx9999'"),
                                              ("sm_90", "sm_90 is nvidia")])
def test_a_bad_arch_is_one_line_and_exit_2(tmp_path, arch, needle):
    result = _check(tmp_path, "cpu_workload", "[[key]]\nn = 8\n", "--arch", arch)
    assert result.exit_code == 2 and needle in result.output and "Traceback" not in result.output


def test_a_kernel_that_cannot_compile_for_amd_is_one_line_and_exit_2(tmp_path):
    result = _check(tmp_path, "cpu_workload", "[[key]]\nn = 8\n", "--arch", "gfx942")
    assert result.exit_code == 2 and "double is neither a @triton.jit nor a FlyDSL" in result.output
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
