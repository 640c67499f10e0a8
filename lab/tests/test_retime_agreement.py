"""The lab's re-timing agreement (``_retime_agreement``): the race's best against the tables' own
rounds and an earlier re-timing's medians."""

from __future__ import annotations

from pathlib import Path

from _retime_agreement import retime_agreement, retime_agreement_report, retime_agreement_rows

from flysearch.evaluators import with_rounds
from flysearch.tables import GroundTruth, Row, TableMeta

ROOT = Path(__file__).resolve().parents[2]
# The table sets under lab/benchmarks/data that lab/benchmarks/results/retime_agreement.md covers.
SETS = ("h200", "h200_extra", "h200_extra2", "h200_holdout", "h200_holdout2")


def _table() -> GroundTruth:
    meta = TableMeta(name="triton_gemm/H200/1x64x64", kernel="gemm", arch="sm_90", device="NVIDIA H200",
                     problem={"M": 1, "N": 64, "K": 64, "dtype": "bf16"}, space={})
    rows = [Row("a", {}, "ok", 1.00), Row("b", {}, "ok", 1.005), Row("c", {}, "ok", 1.2)]
    rounds = with_rounds(rows[:2], {"a": [1.02, 1.03, 1.02], "b": [1.00, 1.00, 1.01]}, {})
    return GroundTruth(meta, {r.key: r for r in rounds + rows[2:]})


def test_a_lucky_race_best_and_a_disagreeing_earlier_retiming() -> None:
    row = retime_agreement(_table(), {"a": 2.0, "b": 2.04})
    assert row["race_best_confirmed"] is False and row["race_best_x"] == 1.02
    assert (row["within_race"], row["within_rounds"]) == (2, 1)
    assert row["same_best"] is False  # the earlier re-timing crowned a, the rounds b
    assert row["own_best_in_earlier_x"] == 1.02 and row["earlier_best_in_own_x"] == 1.02
    assert (row["within_earlier"], row["overlap"]) == (1, 0)
    text = retime_agreement_report([row], "cmd")
    assert "on 0 of 1 tables" in text and "share a config on 0 of 1" in text
    alone = retime_agreement(_table(), {})
    assert "same_best" not in alone and "| - |" in retime_agreement_report([alone], "cmd")


def test_committed_report_is_what_the_committed_tables_give() -> None:
    rows = retime_agreement_rows(ROOT / "lab/benchmarks/data", ROOT / "lab/benchmarks/results", SETS)
    out = retime_agreement_report(rows, "cmd")
    committed = (ROOT / "lab/benchmarks/results/retime_agreement.md").read_text()
    assert out.split("\n", 3)[3] == committed.split("\n", 3)[3]  # all but the command line
