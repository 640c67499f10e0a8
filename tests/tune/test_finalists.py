"""Which configs a tune re-times before it names a winner, and how their rounds are compared."""

from __future__ import annotations

import statistics
from pathlib import Path

from flysearch.tables import read_table_file
from flysearch.tune import finalist_keys, round_adjusted

RACES = Path(__file__).resolve().parents[2] / "lab" / "benchmarks" / "data" / "autotune_h100_b" / "races"


def test_finalists_are_the_fastest_and_every_config_near_the_best_up_to_a_cap():
    searched = {"a": 1.00, "b": 1.04, "c": 1.09, "d": 1.30, "e": 1.50, "f": 1.11}
    assert finalist_keys(searched, 2, 0.10, 12) == ["a", "b", "c"]  # c is within 10%, f is not
    assert finalist_keys(searched, 5, 0.10, 12) == ["a", "b", "c", "f", "d"]  # at least 5
    assert finalist_keys(searched, 1, 0.50, 4) == ["a", "b", "c", "f"]  # at most 4
    assert finalist_keys({}, 5, 0.10, 12) == []


def _spread(times: list[float]) -> float:
    return (max(times) - min(times)) / statistics.median(times)


def test_a_drift_every_finalist_shared_in_a_round_leaves_the_comparison():
    # The race of a large GEMM on an H100: its top configs re-timed in 5 interleaved rounds (CUDA
    # graph replays), the last round 23% slower for every one of them alike.
    _meta, rows = read_table_file(RACES / "matmul__K=4096,M=4096,N=12288.table.json.gz")
    samples = {r.key: r.extra["retime"]["rounds_ms"] for r in rows if "retime" in r.extra}
    assert len(samples) >= 3
    raw = [_spread(v) for v in samples.values()]
    adjusted = round_adjusted(samples)
    assert min(raw) > 0.2
    assert statistics.median(_spread(v) for v in adjusted.values()) < statistics.median(raw) / 3
    for key, times in adjusted.items():  # the scale stays: ms, near each config's own median
        assert abs(statistics.median(times) / statistics.median(samples[key]) - 1) < 0.05
