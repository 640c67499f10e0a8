"""lab/benchmarks/_family_race.py's loop over shapes on the CPU (the race of one shape faked): a table
per shape, a report, and a rerun that resumes."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from flysearch.space import Shape
from flysearch.tables import GroundTruth, Row, TableMeta
from lab.tests._benchmarks import benchmark_script

SHAPES = [SimpleNamespace(name="a", shape=Shape(1, 64, 128)),
          SimpleNamespace(name="b", shape=Shape(4, 64, 128))]


@pytest.fixture
def family_race(monkeypatch: pytest.MonkeyPatch):
    benchmark_script("backend_rounds")  # puts lab/benchmarks/ on the path and imports _family_race
    fr = sys.modules["_family_race"]
    raced: list[str] = []

    def race_shape(family, entry, workers, info, source, versions=None):
        raced.append(entry.name)
        s = entry.shape
        meta = TableMeta(f"{family.kernel}/H200/{s.M}x{s.N}x{s.K}", family.kernel, "sm_90", info["device"],
                         s.as_dict(), {}, source=source)
        return GroundTruth(meta, {"x": Row("x", {"BLOCK_M": 16}, "ok", time_ms=0.01)})

    monkeypatch.setattr(fr, "race_shape", race_shape)
    monkeypatch.setattr("flysearch.evaluators.device_info",
                        lambda: {"device": "NVIDIA H200", "versions": {"triton": "3.6.0"}})
    return fr, raced


def test_a_rerun_races_only_the_shapes_missing_from_its_folder(family_race, tmp_path: Path) -> None:
    fr, raced = family_race
    family = SimpleNamespace(kernel="toy_gemm")
    fr.race_corpus(family, SHAPES[:1], tmp_path, 1, "test")
    assert raced == ["a"]
    assert (tmp_path / "toy_gemm__H200__1x64x128.table.json.gz").exists()
    first = json.loads((tmp_path / "race_report.json").read_text())
    assert first["tables"] == ["toy_gemm__H200__1x64x128.table.json.gz"] and "earlier" not in first

    fr.race_corpus(family, SHAPES, tmp_path, 1, "test")
    assert raced == ["a", "b"]  # a was there: not raced again
    report = json.loads((tmp_path / "race_report.json").read_text())
    assert report["tables"] == ["toy_gemm__H200__4x64x128.table.json.gz"]
    assert report["earlier"] == [first]
    assert fr.load(tmp_path / "toy_gemm__H200__4x64x128.table.json.gz").meta.device == "NVIDIA H200"


def test_no_shape_starts_after_the_deadline(family_race, tmp_path: Path, monkeypatch) -> None:
    fr, raced = family_race
    clock = iter([0.0, 0.0, 100.0, 100.0, 100.0])
    monkeypatch.setattr(fr.time, "monotonic", lambda: next(clock))
    fr.race_corpus(SimpleNamespace(kernel="toy_gemm"), SHAPES, tmp_path, 1, "test", deadline=50)
    assert raced == ["a"]
    assert json.loads((tmp_path / "race_report.json").read_text())["tables"] == [
        "toy_gemm__H200__1x64x128.table.json.gz"]


def test_a_table_of_the_gpu_at_hand_is_resumed_and_another_gpus_is_not(family_race, tmp_path: Path,
                                                                         monkeypatch) -> None:
    fr, raced = family_race
    monkeypatch.setattr("flysearch.evaluators.device_info",
                        lambda: {"device": "NVIDIA H100 80GB HBM3", "versions": {"triton": "3.6.0"}})
    (tmp_path / "toy_gemm__H100__1x64x128.table.json.gz").write_bytes(b"")  # raced here before
    (tmp_path / "toy_gemm__H200__4x64x128.table.json.gz").write_bytes(b"")  # raced on another GPU
    fr.race_corpus(SimpleNamespace(kernel="toy_gemm"), SHAPES, tmp_path, 1, "test")
    assert raced == ["b"]
