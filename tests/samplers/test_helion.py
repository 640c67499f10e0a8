"""The helion: samplers: Helion's autotuner searches run on a committed table, counted as flysearch
counts (distinct configs, failed ones included), seeded, and stopped by the budget."""

from __future__ import annotations

import importlib.util
import random
from functools import cache
from pathlib import Path

import optuna
import pytest

from flysearch.errors import UnknownSamplerError
from flysearch.evaluators import ReplayEvaluator
from flysearch.samplers import make_sampler
from flysearch.space import table_profile
from flysearch.study import StudySpec, StudySummary, run_study, trial_records
from flysearch.tables import GroundTruth, read_any_table, space_for_table

pytestmark = pytest.mark.skipif(importlib.util.find_spec("helion") is None,
                                reason="Helion is not installed (pip install 'flysearch[helion]')")

H200_DECODE = (Path(__file__).resolve().parents[2]
               / "lab/benchmarks/data/h200/triton_gemm__H200__1x6144x4096.table.json.gz")


@cache
def decode() -> GroundTruth:
    meta, rows = read_any_table(H200_DECODE)
    return GroundTruth(meta, {r.key: r for r in rows})


@cache
def study(sampler: str, budget: int, seed: int) -> tuple[StudySummary, tuple[str, ...]]:
    """A replayed study on the H200 decode table (479 configs): its summary and compiled keys."""
    table = decode()
    space = space_for_table(table)
    storage = optuna.storages.InMemoryStorage()
    spec = StudySpec(sampler=sampler, budget=budget, seed=seed, space=space.name, table=table.name)
    summary = run_study("s", space, ReplayEvaluator(table), spec, storage=storage, shape=table.meta.shape(),
                        arch=table_profile(table.meta.arch, table.meta.device))
    keys = [r.key for _, r in trial_records(optuna.load_study(study_name="s", storage=storage))
            if r.compile_index is not None]
    return summary, tuple(keys)


@pytest.mark.parametrize("search", ["pattern", "differential-evolution"])
def test_a_helion_search_reaches_the_optimum_within_the_table_compiling_each_config_once(search: str) -> None:
    table = decode()
    summary, keys = study(f"helion:{search}", len(table.rows), 0)
    optimum = min(r.time_ms for r in table.rows.values() if r.ok)
    assert summary.best_ms == optimum
    assert summary.compiles == len(keys) == len(set(keys)) < len(table.rows)
    # The search ended by itself: the study stopped for want of a new config, not at its budget.
    assert summary.stopped != "budget spent"


def test_a_helion_search_stops_at_the_budget_with_what_it_would_have_compiled_first() -> None:
    _summary, whole = study("helion:lfbo-pattern", 479, 0)
    summary, keys = study("helion:lfbo-pattern", 20, 0)
    assert len(whole) > 20
    assert summary.stopped == "budget spent"
    assert keys == whole[:20]


def test_a_helion_sampler_is_seeded_and_leaves_the_global_generator_alone() -> None:
    random.seed(123)
    expected = random.random()
    random.seed(123)
    _summary, first = study("helion:pattern", 300, 0)
    assert random.random() == expected
    study.cache_clear()
    assert study("helion:pattern", 300, 0)[1] == first
    assert study("helion:pattern", 300, 1)[1] != first


def test_a_live_study_refuses_a_helion_sampler_in_one_line() -> None:
    with pytest.raises(UnknownSamplerError, match="through Helion's own search code; run it on a table"):
        make_sampler("helion:lfbo-tree", seed=0)
