"""Do two runs of a compare study file give the same summary? Compare summary.csv files cell by cell.

    python lab/benchmarks/same_summary.py lab/benchmarks/results/compare/device_repro_2026-12-01

Each ``<name>.csv`` in the folder (a ``summary.csv`` that another machine wrote for
``lab/studies/<name>.toml``) is compared with the committed
``lab/benchmarks/results/compare/<name>/summary.csv``. Prints, per file, the rows and cells compared and
the columns whose cells differ: ``ms_per_trial`` (what a trial took on that machine) is expected to;
any other column means the runs themselves differ (``_same_summary.differing_columns``).
Exit code 1 when any other column differs.
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "lab" / "benchmarks"
sys.path.insert(0, str(ROOT))

from _same_summary import TIMING_COLUMNS, differing_columns  # noqa: E402

COMPARE = BENCHMARKS / "results" / "compare"


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
        other = {k: v for k, v in diffs.items() if k not in TIMING_COLUMNS}
        same &= not other
        print(f"{path.stem}: {rows} rows, {cells} cells; differing columns: "
              f"{', '.join(f'{k} ({v} rows)' for k, v in sorted(diffs.items())) or 'none'}"
              f"{'' if not other else '  <- the runs differ'}")
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
