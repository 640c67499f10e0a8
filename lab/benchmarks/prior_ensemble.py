"""The prior's booster settings, one at a time and as an ensemble; writes a markdown report.

    OMP_NUM_THREADS=1 python lab/benchmarks/prior_ensemble.py --out lab/benchmarks/results/prior_ensemble.md

Leave-one-shape-out on the H200 Triton GEMM tables (lab/benchmarks/data/h200): each table is held out
in turn and ranked by a prior (:func:`flysearch.costmodel.fit_prior`, rank objective) trained on
the others. The report gives, per held-out table, the rank (1-based) of the first config within 1%
of the optimum in the prior's order, for each single booster setting (``max_leaf_nodes`` x
``l2_regularization``; the default :class:`~flysearch.costmodel.CostModel` is 31 leaves, L2 0) and
for the ensemble that averages the boosters of all six settings, each a plain model (no top
weighting; ``lab/benchmarks/top_weight.py`` compares that). No search runs here: this is the
prior alone (the sampler's compiles: ``costmodel_eval.py --ensemble``). Two worker processes;
about 10 minutes on 2 cores.

The ensemble (CostModel's ``max_leaf_nodes`` and ``l2_regularization`` as tuples) left flysearch
after c1f858a, a rejected variant: this script runs at that commit (``git checkout c1f858a``).
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import statistics
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from costmodel_eval import ENSEMBLE_COMMIT, H200, load_tables, report  # noqa: E402
from costmodel_eval import ENSEMBLE_L2 as L2S  # noqa: E402  (this folder is on sys.path)
from costmodel_eval import ENSEMBLE_LEAVES as LEAVES  # noqa: E402

from flysearch.compare import prior_ranks  # noqa: E402
from flysearch.costmodel import fit_prior  # noqa: E402

# The plain models (top_boost 0: no top-weighted model, which prior_ranks would score with).
SETTINGS: list[tuple[str, dict[str, object]]] = [
    (f"leaves {leaf}, l2 {l2:g}", {"max_leaf_nodes": leaf, "l2_regularization": l2, "top_boost": 0.0})
    for leaf in LEAVES for l2 in L2S] + [
    ("ensemble of the six", {"max_leaf_nodes": LEAVES, "l2_regularization": L2S, "top_boost": 0.0})]


def _held_out(args: tuple[str, str]) -> tuple[str, int, list[int]]:
    """One held-out table's rank to 1% under every setting (the tables are re-read: one process
    per table keeps the pickled payload small)."""
    pattern, name = args
    tables = load_tables("h200", h200=pattern)
    held = next(t for t in tables if t.name == name)
    others = [t for t in tables if t.name != name and t.meta.kernel == held.meta.kernel]
    ranks = [prior_ranks(fit_prior(others, **params), held)[0.01] or len(held.rows)
             for _label, params in SETTINGS]
    return name, len(held.rows), ranks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=None)
    parser.add_argument("--h200", default=str(H200), metavar="GLOB",
                        help="the H200 tables (default lab/benchmarks/data/h200/*.table.json.gz)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    parser.exit(2, f"prior_ensemble.py: the six-booster ensemble left flysearch after {ENSEMBLE_COMMIT}; "
                   f"run this script at that commit (git checkout {ENSEMBLE_COMMIT}).\n")
    start = time.perf_counter()
    names = [t.name for t in load_tables("h200", h200=args.h200)]
    with ProcessPoolExecutor(args.workers) as pool:
        results = list(pool.map(_held_out, [(args.h200, n) for n in names]))
    lines = [f"# Prior booster settings — {dt.date.today()}, {platform.machine()} CPU", "",
             "`python lab/benchmarks/prior_ensemble.py " + " ".join(sys.argv[1:]) + "`", "",
             "Leave-one-shape-out on the H200 tables: rank of the first config within 1% of the optimum "
             "in the prior's order (rank objective, 300 iterations).", "",
             "| held-out table | configs | " + " | ".join(label for label, _ in SETTINGS) + " |",
             "|---|---:|" + "---:|" * len(SETTINGS)]
    for name, n, ranks in results:
        lines.append(f"| {name} | {n} | " + " | ".join(str(r) for r in ranks) + " |")
    columns = list(zip(*(ranks for _, _, ranks in results), strict=True))
    for label, stat in (("median", statistics.median), ("worst", max),
                        ("tables <= 8", lambda c: sum(r <= 8 for r in c))):
        lines.append(f"| **{label}** | | " + " | ".join(f"{stat(c):g}" for c in columns) + " |")
    lines += ["", f"({time.perf_counter() - start:.0f} s)"]
    report(lines, args.out)


if __name__ == "__main__":
    main()
