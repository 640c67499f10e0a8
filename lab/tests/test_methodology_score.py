"""lab/benchmarks/methodology_score.py: the autotuning-methodology package scores compare's runs as
compare itself does, and bad input is one line and exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from flysearch.compare import load_experiment, report_experiment, run_experiment
from lab.tests._benchmarks import BENCHMARKS, benchmark_script
from tests.conftest import hub_file

SCRIPT = BENCHMARKS / "methodology_score.py"


def test_the_package_agrees_with_compares_own_score(tmp_path: Path) -> None:
    pytest.importorskip("autotuning_methodology")
    study = tmp_path / "exp.toml"
    study.write_text(f"""
[experiment]
budget = 30
seeds = 3
workers = 1
output = "out"
[[table]]
source = "{hub_file('dedispersion_milo', 'A100')}"
[[sampler]]
name = "random"
[[sampler]]
name = "fastgp"
""")
    exp = load_experiment(study)
    run_experiment(exp)
    report_experiment(exp, plots=False)
    module = benchmark_script("methodology_score")
    package, budget = module.package_scores(study, tmp_path / "out")
    own = module._own_scores(tmp_path / "out")
    assert budget == 30 and set(package) == {"random", "fastgp"}
    for sampler, tables in package.items():
        for table, score in tables.items():
            assert abs(score - own[sampler][table]) < 0.01, (sampler, table, score, own[sampler][table])
    assert package["fastgp"] != package["random"]


def test_a_missing_results_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    args = [sys.executable, str(SCRIPT), str(tmp_path / "none.toml"), "--results", str(tmp_path)]
    done = subprocess.run(args, capture_output=True, text=True, check=False)
    assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1
