"""lab/benchmarks/tma_programs.py on the CPU: program counts, and the report of a committed run."""

from __future__ import annotations

import argparse
from pathlib import Path

from flysearch.space import Shape
from lab.tests._benchmarks import BENCHMARKS, benchmark_script


def test_program_counts_and_the_variants_that_repeat_a_launch() -> None:
    tp = benchmark_script("tma_programs")
    config = {"BLOCK_M": 128, "BLOCK_N": 256}
    counts = tp.program_counts(config, Shape(4096, 4096, 4096), 132)
    assert counts == {"today": 132, "2xSMs": 264, "tiles": 512}
    few = tp.program_counts(config, Shape(256, 1536, 7168), 132)  # 2 x 6 = 12 tiles
    assert few == {"today": 12, "2xSMs": 12, "tiles": 12}
    assert tp.distinct_variants(few) == {"today": "today", "2xSMs": "today", "tiles": "today"}


def test_the_report_sets_cublas_in_the_rounds_beside_the_race(tmp_path: Path) -> None:
    tp = benchmark_script("tma_programs")
    out = tmp_path / "r.md"
    run = BENCHMARKS / "data" / "h200_tma_programs" / "tma_programs.json"
    tp.report(argparse.Namespace(json=run, out=out))
    text = out.read_text().split("against the table's race session", 1)[1]
    rows = [line for line in text.splitlines() if line.startswith("| 4096x4096x4096 |")]
    assert len(rows) == 1
    race_ms, here_ms = (float(x) for x in rows[0].split("|")[3:5])
    assert 0.15 < race_ms < here_ms < 0.25  # cuBLAS: once in the race, then in the rounds
