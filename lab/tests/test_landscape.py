"""The lab's landscapes (``_landscape``): local minima and steepest-descent basins of a table."""

from __future__ import annotations

import itertools

import pytest
from _landscape import NEIGHBOURHOODS, descent_ends, landscape_row, landscape_section, value_indices

from flysearch.tables import GroundTruth, Row, TableMeta


def _grid_table(times: dict[tuple[int, int], float | None]) -> GroundTruth:
    """A two-parameter toy table (A and B in 0..3); ``None`` marks a config that failed."""
    meta = TableMeta(name="toy/grid", kernel="toy", arch="", device="toy", problem={},
                     space={"name": "toy", "params": [{"name": "A", "values": [0, 1, 2, 3]},
                                                      {"name": "B", "values": [0, 1, 2, 3]}]})
    rows = {f"A={a},B={b}": Row(f"A={a},B={b}", {"A": a, "B": b}, "ok" if t else "fail", t)
            for (a, b), t in times.items()}
    return GroundTruth(meta, rows)


def test_a_trap_beside_a_narrow_optimum_is_counted_by_neighbourhood() -> None:
    # A bowl towards (3, 3) holds everything but the optimum (0, 0), reachable only from its two
    # neighbours (0, 1) and (1, 0); (1, 1) failed, so it is no node.
    times: dict[tuple[int, int], float | None] = {
        (a, b): 2.0 + (3 - a) + (3 - b) for a, b in itertools.product(range(4), repeat=2)}
    times[(0, 0)], times[(0, 1)], times[(1, 0)], times[(1, 1)] = 1.0, 9.0, 9.0, None
    row = landscape_row(_grid_table(times))
    assert (row["configs"], row["within 1%"], row["within 5%"]) == (15, 1, 1)
    # Adjacent: (0, 1) and (1, 0) descend to the optimum (it is their fastest neighbour); the
    # other 12 configs roll down to (3, 3), at 2 ms: the trap, 2x the optimum.
    assert row["adjacent minima"] == 2
    assert row["adjacent to 1%"] == pytest.approx(3 / 15)
    assert row["adjacent trap"] == pytest.approx(2.0)
    # Hamming: every config of row A = 0 or column B = 0 sees the optimum or the bowl's bottom in
    # one move; (0, b) sees (0, 0) at 1 ms and (3, b) at most 2 + (3 - b) ms: the optimum wins.
    ends = descent_ends(value_indices(_grid_table(times)), "Hamming")
    assert {node for node, end in ends.items() if end == (0, 0)} == {
        (0, 0), (0, 1), (0, 2), (0, 3), (1, 0), (2, 0), (3, 0)}
    assert row["Hamming to 1%"] == pytest.approx(7 / 15)


def test_a_smooth_table_has_one_minimum_that_every_descent_reaches() -> None:
    times = {(a, b): 1.0 + a + 2 * b for a, b in itertools.product(range(4), repeat=2)}
    row = landscape_row(_grid_table(times))
    for kind in NEIGHBOURHOODS:
        assert (row[f"{kind} minima"], row[f"{kind} to 1%"], row[f"{kind} trap"]) == (1, 1.0, None)
    lines = landscape_section("toy", [_grid_table(times)])
    assert lines[0] == "## toy"
    assert lines[4].startswith("| toy/grid | 16 | 1 | 1 | 1 | 100.0% | - |")
    assert "\nMedian share of adjacent descents that reach 1%: 100.0% (lowest 100.0%, toy/grid)." in lines
