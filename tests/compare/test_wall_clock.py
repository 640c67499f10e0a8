"""Wall clock beside compiles: seconds with a cold and a warm compile cache, against hand sums."""

from __future__ import annotations

import math
from itertools import accumulate
from pathlib import Path

import optuna
import pytest

from flysearch.compare import _run as compare
from flysearch.compare._experiment import TableSpec
from flysearch.compare._metrics import Trajectory
from flysearch.compare._report import summary_rows
from flysearch.compare._run import load_table, restricted_space, study_trajectory
from flysearch.evaluators import ReplayEvaluator
from flysearch.space import table_profile
from flysearch.study import StudySpec, run_study, trial_records
from flysearch.tables import space_for_table

TABLE = (Path(__file__).resolve().parents[2] / "lab" / "benchmarks" / "data" / "h200"
         / "triton_gemm__H200__4x576x7168.table.json.gz")
# Six configs of the real table: three stages x two split-K factors.
RESTRICT = (("BLOCK_K", (128,)), ("BLOCK_M", (16,)), ("BLOCK_N", (64,)), ("GROUP_M", (1,)),
            ("SPLIT_K", (1, 4)), ("num_stages", (2, 3, 4)), ("num_warps", (4,)))


def _run(**fields: object) -> dict[str, object]:
    return {"table_label": "t", "sampler": "grid", "ms_per_trial": 1.0, "trials": 6, "compiles": 6, **fields}


def test_cold_and_warm_seconds_are_hand_sums_on_a_tiny_real_table() -> None:
    spec = TableSpec(str(TABLE), "t", RESTRICT)
    table = load_table(spec, "")
    space = restricted_space(space_for_table(table), RESTRICT)
    shape, arch = table.meta.shape(), table_profile(table.meta.arch, table.meta.device)
    storage = optuna.storages.InMemoryStorage()
    settings = StudySpec(sampler="grid", budget=6, seed=1, space=space.name, table=table.name)
    run_study("w", space, ReplayEvaluator(table), settings, shape=shape, arch=arch, storage=storage)
    traj = study_trajectory(optuna.load_study(study_name="w", storage=storage))
    rows = [table.rows[r.key] for _t, r in trial_records(optuna.load_study(study_name="w", storage=storage))]
    assert len(rows) == len({r.key for r in rows}) == 6  # every config compiled once
    cold = list(accumulate(r.compile_s + r.bench_s for r in rows))
    warm = list(accumulate(r.bench_s for r in rows))
    assert traj.cost_s == pytest.approx(cold, abs=1e-9) and traj.warm_s == pytest.approx(warm, abs=1e-9)
    assert warm[-1] < cold[-1] / 10  # the race timed in milliseconds what took a third of a second to compile

    best = min(r.time_ms for r in rows)
    first = next(i for i, r in enumerate(rows) if r.time_ms <= best * 1.01)
    info = compare._table_info(spec, table)
    assert info.optimum_ms < best  # the whole table's optimum lies outside the six configs
    summary = summary_rows([_run(trajectory=traj)], [info], 6)[0]
    # against the table's optimum no run gets within 1%, so the seconds are censored
    assert math.isinf(summary["warm_seconds_1pct_median"]) and summary["warm_seconds_1pct_success"] == 0
    scaled = Trajectory(tuple(t * info.optimum_ms / best for t in traj.best_ms), traj.cost_s, traj.warm_s)
    summary = summary_rows([_run(trajectory=scaled)], [info], 6)[0]
    assert summary["seconds_1pct_median"] == pytest.approx(cold[first])
    assert summary["warm_seconds_1pct_median"] == pytest.approx(warm[first])


def test_a_run_stored_before_warm_seconds_reads_as_not_recorded() -> None:
    info = compare._table_info(TableSpec(str(TABLE), "t", RESTRICT), load_table(TableSpec(str(TABLE)), ""))
    old = Trajectory((info.optimum_ms,), (0.4,))  # as load_runs reads a run without warm_json
    new = Trajectory((info.optimum_ms,), (0.4,), (0.003,))
    assert old.warm_seconds_to(info.optimum_ms) is None and new.warm_seconds_to(info.optimum_ms) == 0.003
    row = summary_rows([_run(trajectory=old), _run(trajectory=new)], [info], 6)[0]
    assert row["seconds_1pct_median"] == 0.4 and math.isnan(row["warm_seconds_1pct_median"])
