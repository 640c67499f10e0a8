"""How well does a table predict its own optimum from random measurements of itself?

    OMP_NUM_THREADS=1 python lab/benchmarks/needle_rank.py --out lab/benchmarks/results/needle_rank.md

For each benchmark_hub table (``--hub DIR``: a benchmark_hub ``cachefiles/`` folder for six GPUs per
kernel), draw *n* feasible configs uniformly at random, fit a model on their measured log times
(the samplers' analytic features: :func:`flysearch.samplers._history.candidate_features`), and order
the configs not drawn by its prediction. The cell is the compiles a search would spend to reach
within 1% of the table's optimum that way: the *n* random ones, plus the rank, in the model's order,
of the first unmeasured config within 1% (only *n* when the random draw already holds one). It is the
median over ``--draws`` draws. Two models: the extremely-randomized forest the cost-model and
spreadforest samplers refit at each suggestion (32 trees, mean prediction), and scikit-learn's
``HistGradientBoostingRegressor`` (defaults: with 20 samples per leaf at least, it cannot split
fewer than 40 measurements and then predicts one value). No model here sees another table: this is the table's
own evidence about where its optimum lies, against which a prior from other GPUs can be weighed.
The draws, the fits and the cells are ``_needle_rank.needle_row``'s; this script reads the
tables and their features.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "lab" / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))

from _needle_rank import needle_row  # noqa: E402
from costmodel_eval import HUB, hub_tables, report  # noqa: E402

from flysearch import space_for_table  # noqa: E402
from flysearch.costmodel import table_arch  # noqa: E402
from flysearch.samplers import SearchContext, candidate_features  # noqa: E402
from flysearch.tables import GroundTruth  # noqa: E402

SIZES = (16, 32, 64, 128, 256, 512, 1024, 2048)


def table_data(table: GroundTruth) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The features of *table*'s feasible configs, their log times (NaN: failed) and which lie within 1%."""
    space = space_for_table(table)
    feasible = space.enumerate().feasible
    context = SearchContext(space, "ordinal", feasible, shape=table.meta.shape(), arch=table_arch(table),
                            problem=table.meta.problem)
    rows = [table.rows.get(c.key) for c in feasible]
    log_t = np.array([np.log(r.time_ms) if r is not None and r.ok else np.nan for r in rows])
    within = np.isfinite(log_t) & (log_t <= np.nanmin(log_t) + np.log(1.01))
    return candidate_features(context), log_t, within


def _sizes(text: str) -> list[int]:
    """``--sizes``: comma-separated positive counts."""
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or min(sizes) < 1:
        raise argparse.ArgumentTypeError(f"expected positive counts separated by commas, got {text!r}")
    return sizes


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hub", type=Path, default=HUB, help="benchmark_hub tables (default ../shared's)")
    ap.add_argument("--draws", type=int, default=9, help="random draws per cell (median reported)")
    ap.add_argument("--sizes", type=_sizes, default=list(SIZES),
                    help="random measurements per draw, e.g. 32,256")
    ap.add_argument("--out", help="also write the markdown report here")
    args = ap.parse_args()
    if args.draws < 1:
        ap.error(f"--draws must be at least 1, got {args.draws}")
    sizes = args.sizes
    start = time.perf_counter()
    tables = hub_tables(args.hub)
    if not tables:
        print(f"needle_rank: no benchmark_hub tables under {args.hub}", file=sys.stderr)
        return 2
    datas = [table_data(table) for table in tables]  # each table's space and features, once
    hub_arg = "" if args.hub == HUB else f" --hub {args.hub}"
    lines = [f"# A table's own evidence about its optimum — {dt.date.today().isoformat()}, "
             f"{platform.machine()} CPU", "",
             f"`python lab/benchmarks/needle_rank.py{hub_arg} --draws {args.draws}`; each cell: median over "
             f"{args.draws} draws of the compiles to reach within 1% of the optimum by measuring n random "
             "configs, then following a model fitted on them (n when the draw already holds one). "
             "`next / best`: the fastest config not within 1%, against the optimum.", ""]
    header = ["table", "configs", "within 1%", "next / best", *[f"n={n}" for n in sizes]]
    for model, title in (("forest", "Extremely-randomized forest (the samplers' surrogate, 32 trees)"),
                         ("boosting", "HistGradientBoostingRegressor")):
        lines += [f"## {title}", "", "| " + " | ".join(header) + " |",
                  "|---|" + "---:|" * (len(header) - 1)]
        for table, data in zip(tables, datas, strict=True):
            lines.append("| " + " | ".join(needle_row(table.name, data, sizes, args.draws, model)) + " |")
        lines.append("")
    lines.append(f"({time.perf_counter() - start:.0f} s)")
    report(lines, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
