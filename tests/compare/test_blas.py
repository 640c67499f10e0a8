"""One OpenBLAS kernel for replayed searches: which variables a spawned worker gets, and that it runs it."""

from __future__ import annotations

import json
import os
from multiprocessing import get_context
from pathlib import Path

import pytest

from flysearch.compare import _blas as blas
from flysearch.compare._experiment import Experiment, SamplerSpec, TableSpec
from flysearch.compare._run import load_runs, run_experiment


@pytest.mark.parametrize(
    ("environ", "core", "expected"),
    [
        ({}, "SkylakeX", {"OPENBLAS_CORETYPE": "Haswell"}),
        ({}, "Zen", {"OPENBLAS_CORETYPE": "Haswell"}),
        ({}, "Haswell", {"OPENBLAS_CORETYPE": "Haswell"}),
        ({"OPENBLAS_CORETYPE": "Zen"}, "Zen", {}),  # the user's choice stands
        ({}, "Sandybridge", {}),  # no AVX2: the Haswell kernel would not run
        ({}, "neoversen1", {}),
    ],
)
def test_portable_env(environ: dict[str, str], core: str, expected: dict[str, str]) -> None:
    assert blas.portable_env(environ, core=core) == expected


def test_portable_environment_is_restored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    monkeypatch.setattr(blas, "blas_core", lambda: "SkylakeX")
    with blas.portable_environment() as extra:
        assert os.environ["OPENBLAS_CORETYPE"] == "Haswell" and extra == {"OPENBLAS_CORETYPE": "Haswell"}
    assert "OPENBLAS_CORETYPE" not in os.environ


def _needs_openblas() -> str:
    core = blas.blas_core()
    if core is None:
        pytest.skip("numpy does not use OpenBLAS here")
    return core


def test_a_spawned_worker_runs_the_portable_kernel() -> None:
    core = _needs_openblas()
    with blas.portable_environment() as extra, get_context("spawn").Pool(1) as pool:
        child = pool.apply(blas.blas_core)
    assert child == (blas.PORTABLE_CORE if extra or core == blas.PORTABLE_CORE else core)


TABLE = (Path(__file__).resolve().parents[2]
         / "lab/benchmarks/data/h200/triton_gemm__H200__1x6144x4096.table.json.gz")


def test_compare_runs_record_the_kernel_they_ran(tmp_path: Path) -> None:
    """Whatever the workers, a run computes with the portable kernel where this CPU can run it."""
    core = _needs_openblas()
    expected = blas.PORTABLE_CORE if blas.portable_env() or core == blas.PORTABLE_CORE else core
    for workers in (1, 2):
        exp = Experiment("k", (TableSpec(str(TABLE)),), (SamplerSpec("random"),), seeds=(0, 1),
                         budget=3, workers=workers, output=str(tmp_path / f"w{workers}"))
        run_experiment(exp)
        runs = load_runs(tmp_path / f"w{workers}" / "results.db")
        assert [json.loads(r["versions"])["openblas"] for r in runs] == [expected, expected]
