"""benchmarks/learning_curve.py: the subsets of training-only tables, and one run's summary."""

from __future__ import annotations

import pytest

from flysearch.model_eval import HeldOut
from tests._benchmarks import benchmark_module

curve = benchmark_module("learning_curve")


def test_subsets_are_seeded_and_of_the_asked_sizes() -> None:
    names = [f"t{i}" for i in range(12)]
    runs = curve.subsets(names, [0, 3, 12], draws=3)
    assert [k for k, _ in runs] == [0, 3, 3, 3, 12]
    assert all(len(chosen) == k and set(chosen) <= set(names) for k, chosen in runs)
    assert len({tuple(chosen) for k, chosen in runs if k == 3}) == 3  # three different draws
    assert runs == curve.subsets(names, [0, 3, 12], draws=3)  # the same on every call
    with pytest.raises(ValueError, match="size 13"):
        curve.subsets(names, [13], draws=1)


def test_a_run_counts_a_table_beyond_the_budget_as_budget_plus_one() -> None:
    def held(name: str, per_seed: list[int | None], rank: int) -> HeldOut:
        return HeldOut(f"triton_gemm/H200/{name}", 100, [], {0.01: rank, 0.05: rank}, {0.01: per_seed})

    results = [held("a", [1, 1, 2], 1), held("b", [9, 10, 12], 9), held("c", [None, None, 3], 40)]
    r = curve.row(2, ["x", "y"], results)
    assert (r["within8"], r["median"], r["worst"], r["worst_table"]) == (1, 10, curve.BUDGET + 1, "c")
    assert r["sum"] == 1 + 10 + curve.BUDGET + 1 and r["prior8"] == 1
