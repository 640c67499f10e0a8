"""Stopping a run at the optimum changes no metric; the same seeds re-run to the same results."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from flysearch.compare._experiment import Experiment, SamplerSpec, TableSpec, load_experiment
from flysearch.compare._report import summary_rows
from flysearch.compare._run import load_runs, load_table_infos, model_samplers_available, run_experiment
from tests.conftest import hub_file

# What a run spent, not what it found: the only columns a stop at the optimum may change.
SPENT = {"ms_per_trial", "trials", "compiles"}
# A 54-config corner of dedispersion/A100 around its optimum, so runs reach it within the budget.
AROUND_OPTIMUM = (
    ("block_size_x", (2, 4, 8)),
    ("block_size_y", (56, 64, 72)),
    ("tile_size_x", (1,)),
    ("tile_size_y", (2, 3, 4)),
)


def _experiment(tmp_path: Path, out: str, **kw: Any) -> Experiment:
    values: dict[str, Any] = {
        "name": "repro",
        "tables": (TableSpec(str(hub_file("dedispersion_milo", "A100")), restrict=AROUND_OPTIMUM),),
        "samplers": (SamplerSpec("grid"), SamplerSpec("random"), SamplerSpec("tpe"), SamplerSpec("fastgp")),
        "seeds": (0, 1, 2),
        "budget": 30,
        "workers": 1,
        "output": str(tmp_path / out),
    }
    values.update(kw)
    return Experiment(**values)


def _metrics(exp: Experiment) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    runs = load_runs(Path(exp.output) / "results.db")
    rows = summary_rows(runs, load_table_infos(exp), exp.budget)
    return [{k: v for k, v in r.items() if k not in SPENT} for r in rows], runs


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return bool(a == b)


def _assert_same_rows(left: list[dict[str, Any]], right: list[dict[str, Any]]) -> None:
    assert len(left) == len(right)
    for a, b in zip(left, right, strict=True):
        assert a.keys() == b.keys()
        diff = {k: (a[k], b[k]) for k in a if not _same(a[k], b[k])}
        assert not diff, f"{a['where']} {a['sampler']}: {diff}"


@pytest.mark.slow
def test_stop_at_optimum_changes_no_metric(tmp_path: Path) -> None:
    full = _experiment(tmp_path, "full", stop_at_optimum=False)
    stop = _experiment(tmp_path, "stop")
    assert stop.stop_at_optimum  # the default
    run_experiment(full)
    run_experiment(stop)
    rows_full, runs_full = _metrics(full)
    rows_stop, runs_stop = _metrics(stop)
    stopped = [r for r in runs_stop if r["stopped"] == "target reached"]
    assert len(stopped) >= 6 and sum(r["compiles"] < 30 for r in stopped) >= 6  # the stop did happen
    assert all(r["compiles"] == 30 for r in runs_full)
    _assert_same_rows(rows_full, rows_stop)
    # each stopped trajectory is the start of the full one, which never improves after it
    by_id = {r["id"]: r["trajectory"] for r in runs_full}
    for r in stopped:
        short, whole = r["trajectory"], by_id[r["id"]]
        assert whole.best_ms[: short.compiles] == short.best_ms
        assert set(whole.best_ms[short.compiles - 1:]) == {short.best_ms[-1]}


@pytest.mark.slow
def test_same_seeds_same_results(tmp_path: Path) -> None:
    samplers = [SamplerSpec(n) for n in ("grid", "random", "qmc", "tpe", "cmaes", "fastgp")]
    if model_samplers_available() is None:
        samplers.append(SamplerSpec("surrogate"))
    kw: dict[str, Any] = {
        "tables": (TableSpec(str(hub_file("dedispersion_milo", "MI250X"))),),
        "samplers": tuple(samplers),
        "seeds": (0, 1),
        "budget": 15,
    }
    first, second = _experiment(tmp_path, "a", **kw), _experiment(tmp_path, "b", workers=2, **kw)
    run_experiment(first)
    run_experiment(second)
    rows_a, runs_a = _metrics(first)
    rows_b, runs_b = _metrics(second)
    assert len(runs_a) == len(samplers) * 2
    _assert_same_rows(rows_a, rows_b)
    traj_b = {r["id"]: (r["best_json"], r["cost_json"], r["best_key"]) for r in runs_b}
    assert all(traj_b[r["id"]] == (r["best_json"], r["cost_json"], r["best_key"]) for r in runs_a)


def test_stop_at_optimum_in_experiment_files(tmp_path: Path) -> None:
    table = hub_file("dedispersion_milo", "A100")
    path = tmp_path / "e.toml"
    body = '[experiment]\nname = "e"\n{extra}\n[[table]]\nsource = "{table}"\n[[sampler]]\nname = "fastgp"\n'
    path.write_text(body.format(extra="", table=table))
    assert load_experiment(path).stop_at_optimum
    path.write_text(body.format(extra="stop_at_optimum = false", table=table))
    assert not load_experiment(path).stop_at_optimum
    path.write_text(body.format(extra='stop_at_optimum = "no"', table=table))
    with pytest.raises(Exception, match="stop_at_optimum must be true or false"):
        load_experiment(path)


def test_costmodel_in_workers_matches_one_process(tmp_path: Path) -> None:
    """The workers' costmodel runs use priors fitted once in the pool and passed along: the same
    trajectories as one process fitting each prior itself (and as many runs as asked)."""
    h200 = Path(__file__).resolve().parents[2] / "lab" / "benchmarks" / "data" / "h200"
    names = ("1x6144x4096", "4096x4096x4096", "64x1536x7168")
    kw: dict[str, Any] = {
        "tables": tuple(TableSpec(str(h200 / f"triton_gemm__H200__{n}.table.json.gz")) for n in names),
        "samplers": (SamplerSpec("costmodel"), SamplerSpec("random")),
        "seeds": (0, 1),
        "budget": 6,
        "stop_at_optimum": False,
    }
    if model_samplers_available() is not None:
        pytest.skip(model_samplers_available())
    first, second = _experiment(tmp_path, "a", **kw), _experiment(tmp_path, "b", workers=2, **kw)
    run_experiment(first)
    run_experiment(second)
    runs_a, runs_b = load_runs(first.output + "/results.db"), load_runs(second.output + "/results.db")
    assert len(runs_a) == len(runs_b) == 3 * 2 * 2
    by_id = {r["id"]: (r["best_json"], r["best_key"]) for r in runs_b}
    assert all(by_id[r["id"]] == (r["best_json"], r["best_key"]) for r in runs_a)
