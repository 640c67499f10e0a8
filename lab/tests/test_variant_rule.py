"""lab/benchmarks/variant_rule.py: a variant set against its base, table by table, on a committed run."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.tests._benchmarks import BENCHMARKS, benchmark_script, committed_file


def test_the_local_step_s_development_run_counts_as_its_docs_say(tmp_path: Path) -> None:
    vr = benchmark_script("variant_rule")
    summary = committed_file(BENCHMARKS / "results" / "compare" / "coldstart_local" / "summary.csv",
                             tmp_path / "summary.csv")
    lines = vr.compare(vr.table_rows(summary), "auto", ["GEMM", "gemm/"])
    rows = {line.split(" | ")[0].lstrip("| "): line.split(" | ") for line in lines[2:]}
    # docs/results/compare.md: with the local step `auto` needed fewer compiles on 24 tables, more on 15
    assert rows["auto-global"][1:5] == ["41", "15", "24", "2"]
    assert rows["auto-hamming"][1:5] == ["41", "20", "20", "1"]
    assert rows["auto"][7] == "7"  # the seven GEMM caches of the run
    assert float(rows["auto-global"][8]) < float(rows["auto"][8])
    reached = {name: float(row[6].rstrip("%")) for name, row in rows.items()}
    assert all(0.0 < share <= 100.0 for share in reached.values())


def test_an_unknown_base_is_one_clear_line(tmp_path: Path) -> None:
    vr = benchmark_script("variant_rule")
    (tmp_path / "s.csv").write_text("level,where,sampler,compiles_1pct_median\ntable,t,a,3\n")
    with pytest.raises(SystemExit, match="no sampler 'auto' in the summary; it has a"):
        vr.compare(vr.table_rows(tmp_path / "s.csv"), "auto", [])


def test_several_summaries_pool_their_tables_and_a_shared_table_is_one_clear_line(tmp_path: Path) -> None:
    vr = benchmark_script("variant_rule")
    head = "level,where,sampler,runs,compiles_1pct_median,compiles_1pct_success\n"
    (tmp_path / "a.csv").write_text(head + "table,t1,auto,2,10,1\ntable,t1,v,2,5,1\n")
    (tmp_path / "b.csv").write_text(head + "table,t2,auto,2,10,1\ntable,t2,v,2,20,0.5\n"
                                    "table,t3,auto,2,7,1\ntable,t3,v,2,3,1\n")
    lines = vr.compare(vr.table_rows(tmp_path / "a.csv", tmp_path / "b.csv"), "auto", [])
    assert lines[-1].split(" | ")[1:5] == ["3", "2", "1", "0"]
    # the share of runs reaching 1%, over the pooled tables: 5 of v's 6, all 6 of auto's
    assert lines[-1].split(" | ")[6] == "83.3%" and lines[-2].split(" | ")[6] == "100.0%"
    with pytest.raises(SystemExit, match="table t1 is in more than one summary"):
        vr.table_rows(tmp_path / "a.csv", tmp_path / "a.csv")
