"""The lab's leave-one-table-out report (``_costmodel_report``), with and without the re-timed column, and the
keys it reads from a re-timing's result file."""

from __future__ import annotations

import json
from pathlib import Path

from _costmodel_report import held_out_section
from _retime_top import retime_top_keys

from flysearch.compare import HeldOut


def _held(name: str, race: list[int | None], retimed: list[int | None]) -> HeldOut:
    return HeldOut(name, 100, [], {0.01: 4, 0.05: 1}, sampler={0.01: race, 0.05: [1] * len(race)},
                   random_expected={0.01: 50.0, 0.05: 10.0}, retimed=retimed)


def test_retimed_keys_read_each_tables_1_percent_set(tmp_path: Path) -> None:
    doc = {"tables": [
        {"table": "k/a", "configs": [{"key": "x", "race_ms": 1.0, "median_ms": 1.0},
                                     {"key": "y", "race_ms": 1.1, "median_ms": 1.005},
                                     {"key": "z", "race_ms": 1.0, "median_ms": 1.2}]},
        {"table": "k/none", "configs": [{"key": "x", "race_ms": 1.0, "median_ms": None}]}]}
    path = tmp_path / "retime.json"
    path.write_text(json.dumps(doc))
    assert retime_top_keys(str(path)) == {"k/a": ["x", "y"]}  # a table with nothing re-timed: absent


def test_the_section_adds_the_retimed_column_only_when_a_table_has_one() -> None:
    a = _held("k/a", [3, 9], [2, 20])  # median 6 by the race, 11 to the re-timed optimum
    b = _held("k/b", [1, 1, None], [])  # not re-timed; a seed that never got there: "-"
    lines = held_out_section("t", [a, b], 64)
    assert lines[2].endswith("| sampler to 1% of the re-timed optimum (median; per seed) |")
    assert lines[4].endswith("| 6 (3, 9) | 1 | 11 (2, 20) |")
    assert lines[5].endswith("| 1 (1, 1, -) | 1 | not re-timed |")
    assert "Median over tables of the sampler's median compiles to 1%: 3.5; worst: 6." in lines
    never = held_out_section("t", [_held("k/c", [None, None], [None, None])], 64)
    assert never[4].endswith("| >64 (-, -) | 1 | >64 (-, -) |")
    assert ("To 1% of the re-timed optimum, on the 1 re-timed tables: 11; worst: 11; within 8 compiles "
            "on 0 (by the race's times, on those tables: 1).") in lines
    plain = held_out_section("t", [_held("k/a", [3, 9], [])], 64)
    assert not any("re-timed" in line for line in plain)
    assert plain[4].endswith("| 6 (3, 9) | 1 |")
