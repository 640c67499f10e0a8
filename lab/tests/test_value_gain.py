"""lab/benchmarks/value_gain.py: what one value of a parameter buys, within one race."""

from __future__ import annotations

from lab.tests._benchmarks import BENCHMARKS, benchmark_script


def test_the_gain_is_the_best_without_the_value_against_the_best_of_the_same_table() -> None:
    value_gain = benchmark_script("value_gain")
    folders = [BENCHMARKS / "data" / "h200_stages5_holdout"]
    records = value_gain.gains(folders, "num_stages", 5)
    assert len(records) == 12
    for r in records:
        assert r["gain"] >= 0.0 and r["vendor_ms"] > 0
        assert (r["gain"] > 0.0) == (r["best_value"] == 5), r["shape"]
    # tables that never raced the value are not counted
    assert value_gain.gains([BENCHMARKS / "data" / "h200"], "num_stages", 5) == []
