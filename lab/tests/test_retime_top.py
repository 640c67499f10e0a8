"""The reading of a top re-timing's result file (``lab/benchmarks/_retime_top.py``): the re-timed 1%
set and the committed summaries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _retime_top import retime_top_report, retime_top_within

ROOT = Path(__file__).resolve().parents[2]


def test_within_retimed_takes_the_configs_within_1_percent_of_the_retimed_best() -> None:
    table = {"table": "t", "configs": [
        {"key": "a", "race_ms": 1.00, "median_ms": 1.030},  # the race's best, slower once re-timed
        {"key": "b", "race_ms": 1.04, "median_ms": 1.000},
        {"key": "c", "race_ms": 1.02, "median_ms": 1.010},  # exactly 1% behind: in
        {"key": "d", "race_ms": 1.01, "median_ms": 1.011},
        {"key": "e", "race_ms": 1.05, "median_ms": None},  # failed when re-timed
    ]}
    assert retime_top_within(table) == ["b", "c"]
    assert retime_top_within(table, 0.05) == ["a", "b", "c", "d"]
    assert retime_top_within({"table": "t", "configs": []}) == []


@pytest.mark.parametrize("name", ["retime_top_h200", "retime_top_h200_holdout", "retime_top_h200_extra",
                                  "retime_top_h200_extra2", "retime_top_h200_holdout2"])
def test_committed_summary_is_the_report_of_the_committed_result(name: str) -> None:
    result = ROOT / "lab" / "benchmarks" / "results" / f"{name}.json"
    if not result.exists():
        pytest.skip(f"lab/benchmarks/results/{name}.json is not in this checkout")
    text = retime_top_report(json.loads(result.read_text()))
    assert text == (ROOT / "lab" / "benchmarks" / "results" / f"{name}.md").read_text()
