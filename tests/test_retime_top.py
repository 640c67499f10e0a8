"""benchmarks/retime_top.py: which configs it re-times, and its committed summary."""

from __future__ import annotations

import json
import types
from pathlib import Path

import pytest

from flysearch.tables import GroundTruth, Row, TableMeta
from tests._benchmarks import benchmark_module

ROOT = Path(__file__).resolve().parents[1]


def _module() -> types.ModuleType:
    return benchmark_module("retime_top")


def _table(times: list[float | None]) -> GroundTruth:
    meta = TableMeta(name="t", kernel="gemm", arch="sm_90", device="NVIDIA H200",
                     problem={"M": 1, "N": 64, "K": 64, "dtype": "bf16"}, space={})
    rows = [Row(f"B={i}", {"B": i}, "ok" if t else "compile_failed", t) for i, t in enumerate(times)]
    return GroundTruth(meta, {r.key: r for r in rows})


def test_top_rows_takes_the_configs_within_the_margin_clamped() -> None:
    mod = _module()
    table = _table([1.30, 1.00, None, 1.05, 1.09, 1.20, 1.11])
    assert [r.key for r in mod.top_rows(table, 0.10, 1, 10)] == ["B=1", "B=3", "B=4"]
    # at least min_k, even beyond the margin; failed configs never
    assert [r.key for r in mod.top_rows(table, 0.10, 5, 10)] == ["B=1", "B=3", "B=4", "B=6", "B=5"]
    assert [r.key for r in mod.top_rows(table, 0.50, 1, 2)] == ["B=1", "B=3"]


def test_committed_summary_is_the_report_of_the_committed_result() -> None:
    result = ROOT / "benchmarks" / "results" / "retime_top_h200.json"
    if not result.exists():
        pytest.skip("benchmarks/results/retime_top_h200.json is not in this checkout")
    mod = _module()
    text = mod.report(json.loads(result.read_text()))
    assert text == (ROOT / "benchmarks" / "results" / "retime_top_h200.md").read_text()
