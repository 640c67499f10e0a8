"""The prior's training objective, and what a prior trained on one GPU knows of another.

    OMP_NUM_THREADS=1 python lab/benchmarks/prior_objectives.py \
        --out lab/benchmarks/results/prior_objectives.md

Across shapes: each of the 27 H200 tables of ``lab/benchmarks/data/h200`` is held out in turn and
ranked by a prior trained on the other 26, once with the ``rank`` objective and once with
``log_ratio`` (one plain booster each: 150 iterations, 31 leaves, no top weighting, so that the
objectives compare); the cells are the rank of the first config within 1% (and 5%) of the held-out
table's optimum. Across GPUs: each benchmark_hub kernel's A100 table (``../shared/data``) ranked by
the MI250X's measured times and by a prior trained on the MI250X table alone. ``lab/paper/build.py``
reads both tables from the file this writes (about two minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import platform
import sys
import time
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "lab" / "benchmarks"
sys.path.insert(0, str(ROOT))

from _costmodel_eval import transfer_ranks  # noqa: E402

from flysearch.compare import code_commit, prior_ranks  # noqa: E402
from flysearch.costmodel import fit_prior  # noqa: E402
from flysearch.tables import GroundTruth, TableStore, read_kernel_tuner_cache, read_table_file  # noqa: E402

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

HUB = ROOT.parent / "shared" / "data" / "benchmark_hub"


def _h200() -> list[GroundTruth]:
    store = TableStore(":memory:")
    for path in sorted(glob.glob(str(BENCHMARKS / "data" / "h200" / "*.table.json.gz"))):
        store.write(*read_table_file(path))
    return [store.load(n) for n in store.names()]


def objective_rows(tables: list[GroundTruth]) -> list[str]:
    lines = ["| held-out shape | configs | rank objective: first within 1% | log-ratio objective: first "
             "within 1% | rank objective: first within 5% |", "|---|---:|---:|---:|---:|"]
    for i, held in enumerate(tables):
        others = [t for j, t in enumerate(tables) if j != i]
        res = {obj: prior_ranks(fit_prior(others, objective=obj, max_iter=150, max_leaf_nodes=31,
                                          l2_regularization=0.0, top_boost=0.0), held)
               for obj in ("rank", "log_ratio")}
        shape = held.meta.shape()
        lines.append(f"| {shape.M}x{shape.N}x{shape.K} | {len(held.rows)} | {res['rank'][0.01]} | "
                     f"{res['log_ratio'][0.01]} | {res['rank'][0.05]} |")
    return lines


def transfer_rows() -> list[str]:
    lines = ["| kernel | A100 configs | A100 configs within 1% | rank by the MI250X's times | "
             "rank by a prior trained on the MI250X |", "|---|---:|---:|---:|---:|"]
    for kernel in ("convolution_milo", "dedispersion_milo"):
        store = TableStore(":memory:")
        for gpu in ("A100", "MI250X"):
            store.write(*read_kernel_tuner_cache(HUB / kernel / f"{gpu}.json.gz"))
        held, other = store.load(f"{kernel}/A100"), store.load(f"{kernel}/MI250X")
        ranks = transfer_ranks(held, [other], fit_prior([other]))
        best = held.best().time_ms or 0.0
        near = sum(1 for r in held.rows.values() if r.ok and r.time_ms <= best * 1.01)
        lines.append(f"| {kernel} | {len(held.rows)} | {near} | {ranks[other.name][0.01]} | "
                     f"{ranks['prior'][0.01]} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=BENCHMARKS / "results" / "prior_objectives.md")
    args = ap.parse_args()
    start = time.monotonic()
    shapes = objective_rows(_h200())
    gpus = transfer_rows()
    versions = ", ".join(f"{p} {version(p)}" for p in ("scikit-learn", "numpy", "optuna"))
    lines = [
        "# The prior's objective, and transfer across GPUs",
        "",
        "- command: `OMP_NUM_THREADS=1 python lab/benchmarks/prior_objectives.py --out "
        "lab/benchmarks/results/prior_objectives.md`",
        f"- commit: {code_commit(ROOT, outputs=[RESULTS]) or 'not recorded'}",
        f"- hardware: {platform.machine()} CPU, {len(__import__('os').sched_getaffinity(0))} cores",
        f"- versions: Python {platform.python_version()}, {versions}",
        f"- date: {dt.date.today()}",
        "",
        "## Across shapes: the 27 H200 tables, each held out from a prior trained on the other 26",
        "",
        *shapes,
        "",
        "## Across GPUs: benchmark_hub's A100 tables, from the MI250X",
        "",
        *gpus,
        "",
        f"({time.monotonic() - start:.0f} s)",
    ]
    args.out.write_text("\n".join(lines) + "\n")
    print(args.out)


if __name__ == "__main__":
    main()
