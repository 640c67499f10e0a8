"""The lab's comparison (``_same_summary``) of two summary.csv files: which columns differ."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from _same_summary import TIMING_COLUMNS, differing_columns

from lab.tests._benchmarks import BENCHMARKS, committed_file

COMPARE = BENCHMARKS / "results" / "compare"


def _write(path: Path, rows: list[list[str]]) -> Path:
    path.write_text("\n".join(",".join(r) for r in rows) + "\n")
    return path


def test_counts_the_rows_of_each_differing_column(tmp_path: Path) -> None:
    header = ["level", "sampler", "compiles_1pct_median", "ms_per_trial"]
    a = _write(tmp_path / "a.csv", [header, ["table", "tpe", "12", "1.5"], ["table", "gp", "40", "200"]])
    b = _write(tmp_path / "b.csv", [header, ["table", "tpe", "12", "2.5"], ["table", "gp", "41", "210"]])
    assert differing_columns(a, b) == (2, 8, {"ms_per_trial": 2, "compiles_1pct_median": 1})
    assert differing_columns(a, a) == (2, 8, {})
    short = _write(tmp_path / "short.csv", [header, ["table", "tpe", "12", "1.5"]])
    with pytest.raises(ValueError, match="header and rows"):
        differing_columns(a, short)


def test_the_committed_reruns_on_other_cpus_differ_only_in_timing(tmp_path: Path) -> None:
    """Compares the committed files (git's HEAD), so that a summary rewritten in this checkout (a
    compare run told to write there) does not fail it."""
    folders = sorted(COMPARE.glob("*_repro_*"))
    files = sorted(path for folder in folders for path in folder.glob("*.csv"))
    assert folders and files
    for i, path in enumerate(files):
        committed = committed_file(COMPARE / path.stem / "summary.csv", tmp_path / f"{i}.csv")
        _, _, diffs = differing_columns(committed, committed_file(path, tmp_path / f"{i}.rerun.csv"))
        assert set(diffs) <= TIMING_COLUMNS, (
            f"{path.stem}: the committed summary changed since the device rerun; rerun it on another CPU "
            "and replace the folder's file, or remove it")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_committed_file_reads_the_commit_not_the_working_tree(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    try:
        _git(repo, "init", "-q")
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("git is not usable here")
    (repo / "sub" / "a.csv").write_text("committed\n")
    _git(repo, "add", "sub/a.csv")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "a")
    (repo / "sub" / "a.csv").write_text("rewritten by a run\n")
    assert committed_file(repo / "sub" / "a.csv", tmp_path / "a.csv").read_text() == "committed\n"
    (repo / "sub" / "new.csv").write_text("not committed\n")  # not in git: the file itself
    assert committed_file(repo / "sub" / "new.csv", tmp_path / "new.csv").read_text() == "not committed\n"
    outside = tmp_path / "plain.csv"
    outside.write_text("no repository\n")
    assert committed_file(outside, tmp_path / "copy.csv").read_text() == "no repository\n"
