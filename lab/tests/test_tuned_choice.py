"""lab/benchmarks/tuned_choice.py: the rule that picks each sampler's tuned variant."""

from __future__ import annotations

from pathlib import Path

from lab.tests._benchmarks import BENCHMARKS, benchmark_script

HEADER = ("level,where,sampler,compiles_1pct_median,compiles_1pct_p90,ms_per_trial,score\n")


def _summary(tmp_path: Path, rows: list[str]) -> Path:
    path = tmp_path / "summary.csv"
    path.write_text(HEADER + "".join(r + "\n" for r in rows))
    return path


def test_the_rule_counts_a_median_not_reached_as_the_budget_plus_one(tmp_path: Path) -> None:
    choice = benchmark_script("tuned_choice")
    summary = _summary(tmp_path, [
        "table,a,tpe,10,20,1.0,0.5", "table,b,tpe,inf,inf,1.0,0.1",           # mean (10 + 401) / 2
        "table,a,tpe[x=1],150,160,2.0,0.3", "table,b,tpe[x=1],150,160,2.0,0.3",  # mean 150: chosen
        "table,a,\"tpe[x=1,y=2]\",150,160,9.0,0.3", "table,b,\"tpe[x=1,y=2]\",150,160,9.0,0.3",
        "table,a,random (analytic),5,5,,", "group,all,tpe,1,1,1.0,0.9",
    ])
    scores = choice.variant_scores(summary, budget=400)
    assert scores["tpe"]["median"] == (10 + 401) / 2 and "random (analytic)" not in scores
    assert choice.choose(scores) == {"tpe": "tpe[x=1]"}  # ties go to fewer options
    assert choice.identical_results(summary) == {"tpe[x=1,y=2]": "tpe[x=1]"}


def test_the_committed_tuning_run_picks_more_candidates_for_tpe_and_cma_es_defaults() -> None:
    choice = benchmark_script("tuned_choice")
    summary = BENCHMARKS / "results" / "compare" / "tune_optuna" / "summary.csv"
    chosen = choice.choose(choice.variant_scores(summary, budget=400))
    assert chosen == {"tpe-unseen": "tpe-unseen[n_ei_candidates=96]", "cmaes-margin": "cmaes-margin"}
