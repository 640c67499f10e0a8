"""How do the cost model's compiles fall as its prior trains on more shapes? A learning curve.

    OMP_NUM_THREADS=1 python lab/benchmarks/learning_curve.py --workers 2 \\
        --out lab/benchmarks/results/learning_curve.md

The 27 H200 tables are held out in turn (leave-one-shape-out, as in ``costmodel_eval.py``); each
prior trains on the other 26 plus *k* of the 12 training-only tables of
``lab/benchmarks/data/h200_extra`` (``lab/studies/shapes_h200_extra.toml``), for k in ``--sizes``. For each
k below the whole set, ``--draws`` subsets are drawn at random (seeded; the same subsets on every
machine), so a row is not one lucky pick of shapes. Per run: how many of the 27 tables the
cost-model sampler gets within 1% of the optimum in at most 8 compiles (median over ``--seeds``
seeds, budget 64), the median and the worst over tables, the sum of the medians (a table whose
median is beyond the budget counts as budget + 1), and how many tables the prior alone ranks a
config within 1% at most 8th (:mod:`flysearch.compare`: ``training_subsets``,
``learning_curve_row``, ``learning_curve_lines``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import shlex
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "lab" / "benchmarks"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCHMARKS))

import optuna  # noqa: E402
from _learning_curve import learning_curve_lines, learning_curve_row, training_subsets  # noqa: E402
from costmodel_eval import EXTRA, H200, load_tables, report  # noqa: E402

from flysearch.compare import leave_one_out  # noqa: E402
from flysearch.tables import GroundTruth  # noqa: E402

BUDGET = 64


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="0,3,6,9,12", help="numbers of training-only tables, comma-separated")
    ap.add_argument("--draws", type=int, default=3, help="random subsets per size")
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    try:
        sizes = [int(s) for s in args.sizes.split(",")]
    except ValueError:
        ap.error(f"--sizes takes whole numbers separated by commas, not {args.sizes!r}")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    tables = load_tables("h200", h200=str(H200))
    extra: dict[str, GroundTruth] = {t.name: t for t in load_tables("h200", h200=str(EXTRA))}
    if not tables or not extra:
        ap.error("the H200 tables (lab/benchmarks/data/h200, lab/benchmarks/data/h200_extra) are missing")
    try:
        runs = training_subsets(sorted(extra), sizes, args.draws)
    except ValueError as exc:
        ap.error(str(exc))
    start = time.perf_counter()
    rows: list[dict[str, object]] = []
    for k, chosen in runs:
        results = leave_one_out(tables, seeds=range(args.seeds), budget=BUDGET, workers=args.workers,
                                extra=[extra[n] for n in chosen])
        rows.append(learning_curve_row(k, chosen, results, BUDGET))
        r = rows[-1]
        print(f"k={k:2d}: {r['within8']}/{r['n']} within 8, median {r['median']:g}, worst {r['worst']:g} "
              f"({r['worst_table']}), sum {r['sum']:g}", file=sys.stderr)
        if args.out:  # the runs so far, so that an interrupted curve keeps them
            Path(args.out).write_text("\n".join(_lines(rows, len(tables), len(extra), args.seeds)) + "\n")
    report([*_lines(rows, len(tables), len(extra), args.seeds), "", f"({time.perf_counter() - start:.0f} s)"],
           args.out)


def _lines(rows: list[dict[str, object]], n_tables: int, n_extra: int, seeds: int) -> list[str]:
    """The markdown report of the runs in *rows*, under this run's title and command line."""
    title = f"# Learning curve of the cost model — {dt.date.today()}, {platform.machine()} CPU, replayed"
    return [title, "", "`python lab/benchmarks/learning_curve.py " + shlex.join(sys.argv[1:]) + "`", "",
            *learning_curve_lines(rows, n_tables=n_tables, n_extra=n_extra, seeds=seeds, budget=BUDGET)]


if __name__ == "__main__":
    main()
