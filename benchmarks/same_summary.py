"""Do two runs of a compare study file give the same summary? Compare summary.csv files cell by cell.

    python benchmarks/same_summary.py benchmarks/results/compare/device_repro_2026-12-01

Each ``<name>.csv`` in the folder (a ``summary.csv`` that another machine wrote for
``studies/<name>.toml``) is compared with the committed
``benchmarks/results/compare/<name>/summary.csv``. Prints, per file, the rows and cells compared and
the columns whose cells differ: ``ms_per_trial`` (what a trial took on that machine) is expected to;
any other column means the runs themselves differ. Exit code 1 when any other column differs.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

COMPARE = Path(__file__).resolve().parent / "results" / "compare"
TIMING = {"ms_per_trial"}


def differing_columns(committed: Path, other: Path) -> tuple[int, int, dict[str, int]]:
    """Rows, cells compared, and for each column the number of rows whose cells differ."""
    with committed.open() as a, other.open() as b:
        rows_a, rows_b = list(csv.reader(a)), list(csv.reader(b))
    if not rows_a or rows_a[0] != rows_b[0] or len(rows_a) != len(rows_b):
        raise ValueError(f"{other} does not have {committed}'s header and rows")
    header, diffs = rows_a[0], {}
    for ra, rb in zip(rows_a[1:], rows_b[1:], strict=True):
        for name, x, y in zip(header, ra, rb, strict=True):
            if x != y:
                diffs[name] = diffs.get(name, 0) + 1
    return len(rows_a) - 1, (len(rows_a) - 1) * len(header), diffs


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", type=Path, help="summary.csv files of another machine, named <study>.csv")
    args = ap.parse_args()
    files = sorted(args.folder.glob("*.csv"))
    if not files:
        print(f"same_summary: no .csv file in {args.folder}", file=sys.stderr)
        return 2
    same = True
    for path in files:
        try:
            rows, cells, diffs = differing_columns(COMPARE / path.stem / "summary.csv", path)
        except (OSError, ValueError, csv.Error) as exc:
            print(f"same_summary: {exc}", file=sys.stderr)
            return 2
        other = {k: v for k, v in diffs.items() if k not in TIMING}
        same &= not other
        print(f"{path.stem}: {rows} rows, {cells} cells; differing columns: "
              f"{', '.join(f'{k} ({v} rows)' for k, v in sorted(diffs.items())) or 'none'}"
              f"{'' if not other else '  <- the runs differ'}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
