"""The lab's learning curve (``_learning_curve``): the subsets of training-only tables, and one run's
summary."""

from __future__ import annotations

import pytest
from _learning_curve import learning_curve_lines, learning_curve_row, training_subsets

from flysearch.compare import HeldOut

BUDGET = 64


def test_subsets_are_seeded_and_of_the_asked_sizes() -> None:
    names = [f"t{i}" for i in range(12)]
    runs = training_subsets(names, [0, 3, 12], draws=3)
    assert [k for k, _ in runs] == [0, 3, 3, 3, 12]
    assert all(len(chosen) == k and set(chosen) <= set(names) for k, chosen in runs)
    assert len({tuple(chosen) for k, chosen in runs if k == 3}) == 3  # three different draws
    assert runs == training_subsets(names, [0, 3, 12], draws=3)  # the same on every call
    with pytest.raises(ValueError, match="size 13"):
        training_subsets(names, [13], draws=1)


def test_a_run_counts_a_table_beyond_the_budget_as_budget_plus_one() -> None:
    def held(name: str, per_seed: list[int | None], rank: int) -> HeldOut:
        return HeldOut(f"triton_gemm/H200/{name}", 100, [], {0.01: rank, 0.05: rank}, {0.01: per_seed})

    results = [held("a", [1, 1, 2], 1), held("b", [9, 10, 12], 9), held("c", [None, None, 3], 40)]
    r = learning_curve_row(2, ["x", "y"], results, BUDGET)
    assert (r["within8"], r["median"], r["worst"], r["worst_table"]) == (1, 10, BUDGET + 1, "c")
    assert r["sum"] == 1 + 10 + BUDGET + 1 and r["prior8"] == 1
    named = {**r, "tables": ["triton_gemm/H200/x", "triton_gemm/H200/y"]}
    lines = learning_curve_lines([named], n_tables=3, n_extra=12, seeds=3, budget=BUDGET)
    assert "a median beyond the budget counts as 65" in lines[0]
    assert lines[-1] == "| 2 | x, y | 1 of 3 | 10 | 65 (c) | 76 | 1 |"
