"""lab/benchmarks/compare_against_commit.py: its summary comparison and its bad input."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lab.tests._benchmarks import BENCHMARKS, benchmark_script

SCRIPT = BENCHMARKS / "compare_against_commit.py"


def _csv(path: Path, rows: list[str]) -> Path:
    path.write_text("\n".join(["level,where,sampler,compiles_1pct_median,ms_per_trial", *rows]) + "\n")
    return path


def test_only_shared_columns_and_rows_count_and_the_time_per_trial_never(tmp_path: Path) -> None:
    differing = benchmark_script("compare_against_commit")._differing
    base = _csv(tmp_path / "a.csv", ["table,t1,tpe,12,1.0", "table,t1,grid,30,0.2"])
    same = _csv(tmp_path / "b.csv", ["table,t1,tpe,12,9.0", "table,t1,grid,30,0.1"])
    assert differing(base, same) == (8, 0)  # ms_per_trial differs, and does not count
    other = _csv(tmp_path / "c.csv", ["table,t1,tpe,13,1.0", "table,t2,grid,30,0.2"])
    # one shared row (4 cells compared, 1 differs) and a row on each side only
    assert differing(base, other) == (4, 3)


def test_an_unknown_experiment_is_one_line_and_exit_2() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--base", "HEAD", "--experiments", "no_such"],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == "compare_against_commit: no lab/studies/no_such.toml"


def test_an_unknown_base_commit_is_one_line_and_exit_2() -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "--base", "no-such-commit", "--experiments",
                           "compare_h200_square"], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.strip() == ("compare_against_commit: 'no-such-commit' is not a commit of this "
                                   "repository")
