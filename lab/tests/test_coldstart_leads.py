"""lab/benchmarks/coldstart_leads.py: how often the default cold start, or any anchor, leads the field."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lab.tests._benchmarks import BENCHMARKS, benchmark_script, committed_file

HEAD = ("level,where,group,sampler,runs,compiles_1pct_median,compiles_1pct_success,"
        "fraction_mean_at_50,fraction_mean_at_200\n")


def _run(folder: Path, rows: str) -> Path:
    folder.mkdir()
    (folder / "summary.csv").write_text(HEAD + rows)
    return folder / "summary.csv"


def test_leads_and_targets_are_counted_per_table_and_per_run(tmp_path: Path) -> None:
    cl = benchmark_script("coldstart_leads")
    a = _run(tmp_path / "a", "group,g,auto,4,10,1,,\n"  # a group row is not a table
             "table,t1,g,auto,20,10,1,0.9,0.99\ntable,t1,g,kt:x,10,25,1,0.9,0.99\n"
             "table,t1,g,cmaes-margin,10,30,1,0.9,0.99\ntable,t1,g,fastgp,10,1,1,0.9,0.99\n"
             "table,GEMM_1,g,auto,20,20,0.9,0.97,0.996\ntable,GEMM_1,g,kt:x,10,8,1,0.985,0.99\n"
             "table,GEMM_1,g,cmaes-margin,10,40,1,0.95,0.999\n")
    b = _run(tmp_path / "b", "table,t3,g,auto,20,inf,0.4,,\ntable,t3,g,kt:x,10,inf,0.2,,\n")
    rows = cl.tables([a, b], "auto", ["GEMM"])
    assert [(t.run, t.name) for t in rows] == [("a", "GEMM_1"), ("a", "t1"), ("b", "t3")]
    assert "fastgp" not in rows[1].medians  # only the base and the anchors count
    assert [t.leader() for t in rows] == ["kt:x", "auto", None]  # two censored medians are no lead
    assert cl.ratio(rows[2], "auto") == 1.0
    assert cl.counts(rows, "auto") == {
        "tables": 3, "half": 1, "below": 2, "seeds": 1, "both": 1, "anchor_leads": 1, "caches": 1,
        "at_50": 0, "at_200": 1, "best_50": 1, "best_200": 1}
    lines = cl.report(rows, "auto")
    assert "| a | 2 | 1 | 1 | 1 | 1 | 1 |" in lines and "| all | 3 | 1 | 2 | 1 | 1 | 1 |" in lines
    assert "| kt:x | 3 | 1 | 1 |" in lines
    assert "| GEMM_1 | 0.970 | kt:x 0.985 | 0.996 | cmaes-margin 0.999 |" in lines


def test_the_tenth_test_set_counts_as_its_docs_say(tmp_path: Path) -> None:
    cl = benchmark_script("coldstart_leads")
    run = tmp_path / "coldstart_test10"
    run.mkdir()
    summary = committed_file(BENCHMARKS / "results" / "compare" / "coldstart_test10" / "summary.csv",
                             run / "summary.csv")
    c = cl.counts(cl.tables([summary], "auto", []), "auto")
    # docs/results/compare.md: `auto` at most half the best anchor on 3 of 12 tables, 95% of seeds on 11
    assert (c["tables"], c["half"], c["seeds"]) == (12, 3, 11)


def test_bad_input_is_one_clear_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    cl = benchmark_script("coldstart_leads")
    lone = _run(tmp_path / "lone", "table,t,g,auto,2,3,1,,\n")
    with pytest.raises(SystemExit, match="holds no anchor"):
        cl.tables([lone], "auto", [])
    with pytest.raises(SystemExit, match=r"no sampler 'best' in .*; it has auto"):
        cl.tables([lone], "best", [])
    monkeypatch.setattr(sys, "argv", ["coldstart_leads.py", str(tmp_path / "missing.csv")])
    with pytest.raises(SystemExit) as exit_:
        cl.main()
    assert exit_.value.code == 2
    assert capsys.readouterr().err.strip().endswith("missing.csv does not exist; run flysearch compare first")
