"""The zero-shot baselines in a comparison: trained leave-one-table-out, within budget, repeatable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import flysearch.samplers as samplers
from flysearch.compare import _run as compare
from flysearch.compare._experiment import Experiment, SamplerSpec, TableSpec
from flysearch.compare._run import load_runs, load_table, run_experiment
from flysearch.samplers._zeroshot import transfer_tables, zero_shot_order

H200 = Path(__file__).resolve().parents[2] / "lab" / "benchmarks" / "data" / "h200"
SHAPES = ("4x576x7168", "1000x576x7168", "256x1536x7168")
BASELINES = ("fixed-list", "decision-tree", "winners-first")


def test_each_baseline_trains_on_the_other_tables_only(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    paths = [H200 / f"triton_gemm__H200__{s}.table.json.gz" for s in SHAPES]
    tables = [load_table(TableSpec(str(p)), "") for p in paths]
    scored = tables[0]
    # The case a cheat would win: trained on the scored table too, winners-first's first config is
    # its optimum; from the two other shapes it is not within 1% of it.
    cheat = zero_shot_order("winners-first", transfer_tables(tables), scored.meta.problem)
    assert cheat[0] == scored.best().key
    seen: list[list[str]] = []
    real = samplers.transfer_tables

    def spy(training):  # type: ignore[no-untyped-def]
        seen.append(sorted(t.name for t in training))
        return real(training)

    monkeypatch.setattr(samplers, "transfer_tables", spy)
    monkeypatch.setattr(compare, "_PRIORS", {})
    monkeypatch.setattr(compare, "runs_portable", lambda: True)  # keep the runs in this process
    exp = Experiment("zs", tuple(TableSpec(str(p)) for p in paths), tuple(SamplerSpec(b) for b in BASELINES),
                     seeds=(0,), budget=4, workers=1, output=str(tmp_path / "out"), stop_at_optimum=False)
    assert run_experiment(exp).done == 9
    names = sorted(t.name for t in tables)
    assert sorted(map(tuple, seen)) == sorted(tuple(n for n in names if n != t.name)
                                              for t in tables for _b in BASELINES)
    runs = load_runs(tmp_path / "out" / "results.db")
    assert all(r["compiles"] <= 4 for r in runs)
    first = next(r for r in runs if r["table_name"] == scored.name and r["sampler"] == "winners-first")
    assert json.loads(first["best_json"])[0] > 1.01 * scored.best().time_ms
    # the same run again (a fresh folder) gives the same trajectories
    monkeypatch.setattr(compare, "_PRIORS", {})
    run_experiment(Experiment(**{**exp.__dict__, "output": str(tmp_path / "again")}))
    again = load_runs(tmp_path / "again" / "results.db")
    assert [(r["id"], r["best_json"]) for r in again] == [(r["id"], r["best_json"]) for r in runs]
