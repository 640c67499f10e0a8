"""The lab's summary (``_live_served``) of served and own live studies, and the committed report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _live_served import served_report, served_summary

ROOT = Path(__file__).resolve().parents[2]


def _row(shape: str, mode: str, overhead: float, command_s: float) -> dict:
    return {"shape": shape, "sampler": "tpe", "budget": 48, "mode": mode, "overhead": overhead,
            "command_wall_s": command_s, "wall_s": command_s - 2, "timer_ready_s": 0.0}


def test_summarize_pairs_each_served_study_with_its_own_twin() -> None:
    rows = [_row("a", "own", 0.30, 10.0), _row("a", "served", 0.05, 7.0),
            _row("b", "own", 0.20, 8.0), _row("b", "served", 0.03, 6.0)]
    s = served_summary(rows)
    assert s["own_48"]["overhead_min"] == 0.20 and s["own_48"]["overhead_max"] == 0.30
    assert s["served_48"]["overhead_median"] == pytest.approx(0.04)
    assert s["command_wall_ratio_48"] == pytest.approx((0.7 + 0.75) / 2)


def test_committed_report_is_the_report_of_the_committed_result() -> None:
    result = ROOT / "lab" / "benchmarks" / "results" / "live_served_h200.json"
    if not result.exists():
        pytest.skip("lab/benchmarks/results/live_served_h200.json is not in this checkout")
    text = served_report(json.loads(result.read_text()))
    assert text == (ROOT / "lab" / "benchmarks" / "results" / "live_served_h200.md").read_text()
