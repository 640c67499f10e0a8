"""benchmarks/same_summary.py: which columns of two summary.csv files differ."""

from __future__ import annotations

from pathlib import Path

from tests._benchmarks import benchmark_module

same = benchmark_module("same_summary")


def _write(path: Path, rows: list[list[str]]) -> Path:
    path.write_text("\n".join(",".join(r) for r in rows) + "\n")
    return path


def test_counts_the_rows_of_each_differing_column(tmp_path: Path) -> None:
    header = ["level", "sampler", "compiles_1pct_median", "ms_per_trial"]
    a = _write(tmp_path / "a.csv", [header, ["table", "tpe", "12", "1.5"], ["table", "gp", "40", "200"]])
    b = _write(tmp_path / "b.csv", [header, ["table", "tpe", "12", "2.5"], ["table", "gp", "41", "210"]])
    assert same.differing_columns(a, b) == (2, 8, {"ms_per_trial": 2, "compiles_1pct_median": 1})
    assert same.differing_columns(a, a) == (2, 8, {})


def test_the_committed_reruns_on_other_cpus_differ_only_in_timing() -> None:
    folders = sorted(same.COMPARE.glob("*_repro_*"))
    files = sorted(path for folder in folders for path in folder.glob("*.csv"))
    assert len(folders) >= 2 and files
    for path in files:
        _, _, diffs = same.differing_columns(same.COMPARE / path.stem / "summary.csv", path)
        assert set(diffs) <= same.TIMING, (
            f"{path.stem}: the committed summary changed since the device rerun; rerun it on another CPU "
            "and replace the folder's file, or remove it")
