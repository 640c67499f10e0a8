"""The kt: samplers: Kernel Tuner's strategies run on a replayed table, counted as flysearch counts."""

from __future__ import annotations

import itertools
import json
import random
from pathlib import Path

import optuna
import pytest

from flysearch.errors import UnknownSamplerError
from flysearch.evaluators import ReplayEvaluator
from flysearch.samplers import make_sampler
from flysearch.space import Config
from flysearch.study import StudySpec, run_study, trial_records
from flysearch.tables import GroundTruth, Row, TableMeta, read_table_file, space_for_table
from tests.conftest import REPO

kernel_tuner = pytest.importorskip("kernel_tuner")
pytestmark = pytest.mark.filterwarnings("ignore:None of the tunable parameters:UserWarning")

VALUES = {"a": [1, 2, 4, 8, 16], "b": [1, 2, 3, 4, 5, 6], "c": [0, 1, 2, 3]}


@pytest.fixture(scope="module")
def table() -> GroundTruth:
    """120 configs, a smooth landscape with its optimum at a=4, b=3, c=2; two configs fail."""
    rows = {}
    for a, b, c in itertools.product(*VALUES.values()):
        params = {"a": a, "b": b, "c": c}
        key = Config.from_dict(params).key
        if (a, b) == (16, 6):
            rows[key] = Row(key, params, "compile_failed")
        else:
            rows[key] = Row(key, params, "ok", 1.0 + (a - 4) ** 2 / 8 + (b - 3) ** 2 / 4 + (c - 2) ** 2 / 2)
    meta = TableMeta("toy/KT", "toy", "", "toy GPU", {"problem_size": [1]},
                     {"name": "toy", "params": [{"name": n, "values": v} for n, v in VALUES.items()]})
    return GroundTruth(meta, rows)


def _study(table: GroundTruth, sampler: str, budget: int, seed: int) -> list[str]:
    space = space_for_table(table)
    storage = optuna.storages.InMemoryStorage()
    spec = StudySpec(sampler=sampler, budget=budget, seed=seed, space=space.name, table=table.name)
    run_study("s", space, ReplayEvaluator(table), spec, storage=storage)
    study = optuna.load_study(study_name="s", storage=storage)
    return [r.key for _, r in trial_records(study) if r.compile_index is not None]


def _kernel_tuner_itself(table: GroundTruth, strategy: str, budget: int, seed: int,
                         folder: Path) -> list[str]:
    """The distinct configs Kernel Tuner measures in its own simulation mode, in its order."""
    cache = {
        "device_name": "toy GPU", "kernel_name": "toy", "problem_size": [1], "tune_params_keys": list(VALUES),
        "tune_params": VALUES, "objective": "time",
        "cache": {",".join(str(r.params[n]) for n in VALUES): {**r.params, "time": r.time_ms if r.ok else
                                                               "CompilationFailedConfig"}
                  for r in table.rows.values()},
    }
    path = folder / "toy.json"
    path.write_text(json.dumps(cache))
    random.seed(seed)
    import numpy as np

    np.random.seed(seed)
    results, _ = kernel_tuner.tune_kernel("toy", "", [1], [], VALUES, cache=str(path), simulation_mode=True,
                                          strategy=strategy, strategy_options={"max_fevals": budget},
                                          quiet=True, seed=seed)
    order = dict.fromkeys(Config.from_dict({n: r[n] for n in VALUES}).key for r in results)
    return list(order)[:budget]


@pytest.mark.parametrize("strategy", ["genetic_algorithm", "greedy_ils", "simulated_annealing"])
def test_a_kt_sampler_compiles_what_kernel_tuner_measures_in_its_order(
        table: GroundTruth, strategy: str, tmp_path: Path) -> None:
    compiled = _study(table, f"kt:{strategy}", budget=30, seed=3)
    assert compiled == _kernel_tuner_itself(table, strategy, 30, 3, tmp_path)
    assert len(compiled) == len(set(compiled)) <= 30


def test_a_kt_sampler_is_seeded_and_leaves_the_global_generators_alone(table: GroundTruth) -> None:
    random.seed(123)
    expected = random.random()
    random.seed(123)
    first = _study(table, "kt:pso", budget=25, seed=1)
    assert random.random() == expected
    assert _study(table, "kt:pso", budget=25, seed=1) == first
    assert _study(table, "kt:pso", budget=25, seed=2) != first


@pytest.mark.parametrize("strategy", ["greedy_ils", "pso"])
def test_a_kt_sampler_searches_a_committed_table_with_a_bool_parameter(strategy: str) -> None:
    # triton_gemm_tma's EPILOGUE_SUBTILE is a bool: Kernel Tuner must find each config in the cache
    # and tell its two values apart.
    meta, rows = read_table_file(REPO / "lab" / "benchmarks" / "data" / "h100_tma_holdout"
                                 / "triton_gemm_tma__H100__1x7168x5120.table.json.gz")
    table = GroundTruth(meta, {r.key: r for r in rows})
    compiled = _study(table, f"kt:{strategy}", budget=40, seed=0)
    assert len(compiled) == len(set(compiled)) == 40
    assert set(compiled) <= set(table.rows)
    assert {table.rows[k].params["EPILOGUE_SUBTILE"] for k in compiled} == {False, True}


def test_a_live_study_refuses_a_kt_sampler_in_one_line(table: GroundTruth) -> None:
    with pytest.raises(UnknownSamplerError, match="simulation mode; run it on a table"):
        make_sampler("kt:pso", seed=0)


def test_a_strategy_that_never_reaches_its_budget_is_cut_at_the_time_limit(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Kernel Tuner's greedy ILS, seed 2, on this committed layer-norm race re-measures configs it
    has already measured and never reaches 400 distinct ones: without a time limit the run does not
    end (its result list grows until memory runs out). With one, the study ends once it is spent,
    having compiled each config the strategy measured once."""
    import threading

    from flysearch.samplers import _kernel_tuner

    monkeypatch.setattr(_kernel_tuner, "TIME_LIMIT_S", 2.0)
    meta, rows = read_table_file(REPO / "lab/benchmarks/data/autotune_h100_heldout3/races/"
                                 "layernorm__n_cols=2880,n_rows=4096.table.json.gz")
    table = GroundTruth(meta, {r.key: r for r in rows})
    keys: list[list[str]] = []
    worker = threading.Thread(target=lambda: keys.append(_study(table, "kt:greedy_ils", 400, 2)),
                              daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert keys, "the strategy's run did not end"
    assert 0 < len(keys[0]) < 400 and len(set(keys[0])) == len(keys[0])

