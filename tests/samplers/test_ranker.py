"""The ranker sampler (an online cost model in the style of Ansor): only unevaluated feasible
configs, seeded, and its model beats random sampling on a replayed H200 table."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from flysearch.evaluators import ReplayEvaluator
from flysearch.space import table_profile
from flysearch.study import StudySpec, StudySummary, run_study, trial_records
from flysearch.tables import GroundTruth, read_any_table, space_for_table

H200 = (Path(__file__).resolve().parents[2] / "lab" / "benchmarks" / "data" / "h200"
        / "triton_gemm__H200__1024x6144x4096.table.json.gz")


def _table() -> GroundTruth:
    meta, rows = read_any_table(H200)
    return GroundTruth(meta, {r.key: r for r in rows})


def _run(table: GroundTruth, sampler: str, seed: int, budget: int) -> tuple[StudySummary, list[str]]:
    space = space_for_table(table)
    settings = StudySpec(sampler=sampler, budget=budget, seed=seed, space=space.name, table=table.name)
    storage = optuna.storages.InMemoryStorage()
    summary = run_study("r", space, ReplayEvaluator(table), settings, storage=storage,
                        shape=table.meta.shape(), arch=table_profile(table.meta.arch, table.meta.device))
    records = trial_records(optuna.load_study(study_name="r", storage=storage))
    return summary, [r.key for _t, r in sorted(records, key=lambda tr: tr[0].number)]


def test_only_unevaluated_feasible_configs_and_seeded() -> None:
    table = _table()
    summary, keys = _run(table, "ranker", seed=3, budget=40)
    assert summary.compiles == summary.trials == 40 and summary.duplicates == summary.rejected == 0
    assert len(set(keys)) == 40 and set(keys) <= set(table.rows)
    assert keys == _run(table, "ranker", 3, 40)[1]  # the same seed, the same run
    assert keys != _run(table, "ranker", 4, 40)[1]


@pytest.mark.slow
def test_after_its_warm_up_its_model_finds_faster_configs_than_random_sampling() -> None:
    table = _table()
    best = table.best().time_ms

    def found(sampler: str) -> float:  # past the 100 random configs of the warm-up
        return sum(_run(table, sampler, seed, 200)[0].best_ms / best for seed in range(3)) / 3

    assert found("ranker") < found("random")
