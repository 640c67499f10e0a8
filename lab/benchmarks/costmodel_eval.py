"""Leave-one-table-out evaluation of the cost model and its sampler; writes a markdown report.

    OMP_NUM_THREADS=1 python lab/benchmarks/costmodel_eval.py --out lab/benchmarks/results/costmodel_eval.md

Across shapes: the H200 Triton GEMM tables (lab/benchmarks/data/h200, 27 shapes), each held out in
turn and ranked by a prior trained on the others. Across GPUs: the benchmark_hub tables
(../shared/data/benchmark_hub), each held out and ranked by a prior trained on the same kernel's
other GPU (only two GPUs per kernel are available there). The sampler runs 5 seeds per table.

``--hub DIR`` reads the benchmark_hub tables from a clone of AutoTuningAssociation/benchmark_hub
instead (``DIR`` = its ``cachefiles/``, six GPUs per kernel; only ``<GPU>.json.gz`` files are read),
so each held-out GPU is ranked by a prior trained on the other five; ``--only hub`` skips the H200
part. ``--holdout GLOB`` names the
held-out shapes (default ``lab/benchmarks/data/h200_holdout``, the shapes of
``lab/studies/shapes_h200_holdout.toml``, chosen and committed before they were raced): one prior is
trained on every H200 table and ranks and searches each of them (``--only holdout`` runs that part
alone). ``--extra GLOB`` adds training-only H200 tables to every H200 prior (never held out, never
scored), e.g. the twelve of ``lab/studies/shapes_h200_extra.toml``::

    python lab/benchmarks/costmodel_eval.py --extra 'lab/benchmarks/data/h200_extra/*.table.json.gz'

``--ensemble`` (priors that average six boosters, costmodel_eval_ensemble.md) left flysearch after
c1f858a, a rejected variant; run it at that commit. ``--occupancy-waves with|without`` trains each
H200 prior's one booster with the occupancy-wave features or without them (flysearch's own prior
averages one of each). ``--h200 GLOB`` (repeatable) reads other H200 tables, e.g. the 39
of ``lab/benchmarks/data/h200`` and ``h200_extra``, every one held out in turn::

    python lab/benchmarks/costmodel_eval.py --only h200 --h200 'lab/benchmarks/data/h200/*.table.json.gz' \
        --h200 'lab/benchmarks/data/h200_extra/*.table.json.gz'

``--retimed FILE`` (repeatable; ``lab/benchmarks/retime_top.py`` result files) adds a column to the
H200 sections: the sampler's compiles to first measure a config within 1% of the table's
*re-timed* optimum (each config near the top timed in 10 rounds instead of once), for the tables
those files cover::

    python lab/benchmarks/costmodel_eval.py --only h200 --retimed lab/benchmarks/results/retime_top_h200.json

or the first 19 tables, as they were before the last eight shapes were added::

    t=lab/benchmarks/data/h200/triton_gemm__H200__32x28672x4096.table.json.gz   # one of the last eight
    c=$(git log -1 --format=%H --diff-filter=A -- $t)
    mkdir -p /tmp/t19 && git archive "$c^" lab/benchmarks/data/h200 | tar -x -C /tmp/t19
    python lab/benchmarks/costmodel_eval.py --only h200 --h200 '/tmp/t19/benchmarks/data/h200/*.table.json.gz'

"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import platform
import re
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "lab" / "benchmarks"
sys.path.insert(0, str(ROOT))

import optuna  # noqa: E402
from _costmodel_eval import evaluate_test_set  # noqa: E402
from _costmodel_report import format_compiles, held_out_section  # noqa: E402
from _retime_top import retime_top_keys  # noqa: E402

from flysearch.compare import leave_one_out  # noqa: E402
from flysearch.tables import GroundTruth, TableStore, read_kernel_tuner_cache, read_table_file  # noqa: E402

HUB = ROOT.parent / "shared" / "data" / "benchmark_hub"


def hub_tables(hub: Path = HUB) -> list[GroundTruth]:
    """The benchmark_hub tables under *hub*: every ``<kernel>_milo/<GPU>.json.gz`` (named
    ``<kernel>_milo/<GPU>``), not the ``<GPU>_T4.json.gz`` files of another format beside them."""
    store = TableStore(":memory:")
    for path in sorted(hub.glob("*_milo/*.json.gz")):
        if re.fullmatch(r"[A-Za-z0-9]+\.json\.gz", path.name):
            store.write(*read_kernel_tuner_cache(path))
    return [store.load(n) for n in store.names()]


H200 = BENCHMARKS / "data" / "h200" / "*.table.json.gz"
HOLDOUT = BENCHMARKS / "data" / "h200_holdout" / "*.table.json.gz"
EXTRA = BENCHMARKS / "data" / "h200_extra" / "*.table.json.gz"
# --ensemble: the booster settings lab/benchmarks/prior_ensemble.py compares, averaged.
ENSEMBLE_LEAVES, ENSEMBLE_L2 = (15, 31, 63), (0.0, 1.0)
# The last commit whose CostModel fitted that ensemble (max_leaf_nodes and l2_regularization as tuples).
ENSEMBLE_COMMIT = "c1f858a"
# --occupancy-waves: fit_prior's parameters that train a prior's one booster with the occupancy-wave
# features or without them (a plain fit_prior averages one booster of each). The benchmark_hub
# tables have no such features: the hub part trains its priors as they come.
OCCUPANCY_WAVES: dict[str, dict[str, object]] = {
    "average": {}, "with": {"feature_views": None},
    "without": {"exclude_features": ("g_occ_waves", "g_occ_wave_eff")}}


def load_tables(kind: str, hub: Path = HUB, h200: str | Sequence[str] = str(H200)) -> list[GroundTruth]:
    """The ``"hub"`` tables under *hub*, or (any other *kind*) the tables matching the glob *h200*
    (or any of several globs)."""
    if kind == "hub":
        return hub_tables(hub)
    store = TableStore(":memory:")
    patterns = [h200] if isinstance(h200, str) else list(h200)
    for path in sorted({p for pattern in patterns for p in glob.glob(pattern)}):
        store.write(*read_table_file(path))
    return [store.load(n) for n in store.names()]


def report(lines: list[str], out: str | None) -> None:
    """Print a markdown report's *lines* and, with *out*, write them there too."""
    text = "\n".join(lines)
    print(text)
    if out:
        Path(out).write_text(text + "\n")


_fmt = format_compiles  # the name lab/benchmarks/top_weight.py imports


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=None)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--hub", type=Path, default=HUB,
                        help="the folder of *_milo/<GPU>.json.gz (default ../shared/data/benchmark_hub)")
    parser.add_argument("--h200", action="append", default=None, metavar="GLOB",
                        help="the H200 tables (default lab/benchmarks/data/h200/*.table.json.gz); repeatable")
    parser.add_argument("--only", choices=("h200", "hub", "holdout"), default=None)
    parser.add_argument("--holdout", default=str(HOLDOUT), metavar="GLOB",
                        help="held-out H200 tables "
                             "(default lab/benchmarks/data/h200_holdout/*.table.json.gz)")
    parser.add_argument("--extra", default=None, metavar="GLOB",
                        help="training-only H200 tables added to every H200 prior "
                             f"(e.g. {EXTRA.relative_to(ROOT)})")
    parser.add_argument("--workers", type=int, default=1,
                        help="held-out tables evaluated in this many processes (same results)")
    parser.add_argument("--occupancy-waves", choices=tuple(OCCUPANCY_WAVES), default="average",
                        help="which boosters of an H200 prior see the occupancy-wave features "
                             "(default: average one with, one without)")
    parser.add_argument("--retimed", action="append", default=[], metavar="FILE",
                        help="retime_top.py result files: also count compiles to 1%% of each covered "
                             "H200 table's re-timed optimum; repeatable")
    parser.add_argument("--ensemble", action="store_true",
                        help=f"left flysearch after {ENSEMBLE_COMMIT}: run it at that commit")
    args = parser.parse_args()
    if args.ensemble:
        parser.error(f"the six-booster ensemble prior left flysearch after {ENSEMBLE_COMMIT}; "
                     f"run --ensemble at that commit (git checkout {ENSEMBLE_COMMIT})")
    args.h200 = args.h200 or [str(H200)]
    model_params = OCCUPANCY_WAVES[args.occupancy_waves]
    retimed: dict[str, list[str]] = {}  # a table in several files: the last one's
    for path in args.retimed:
        try:
            retimed |= retime_top_keys(path)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            parser.error(f"--retimed {path}: not a readable retime_top.py result file ({exc!r})")
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    lines = [f"# Cost-model evaluation — {dt.date.today()}, {platform.machine()} CPU, replayed", "",
             "`python lab/benchmarks/costmodel_eval.py " + shlex.join(sys.argv[1:]) + "`", ""]
    parts = (("h200", "Across shapes: H200 Triton GEMM, leave-one-shape-out", 64),
             ("hub", "Across GPUs: benchmark_hub, leave-one-GPU-out", 200),
             ("holdout", "Held-out shapes: a prior trained on every H200 table, never on these", 64))
    extra = load_tables("h200", h200=args.extra) if args.extra else []
    if args.extra and not extra:
        parser.error(f"no table matches --extra {args.extra}")
    for kind, title, budget in parts:
        if args.only not in (None, kind):
            continue
        if extra and kind != "hub":
            title += f", with {len(extra)} training-only tables"
        start = time.perf_counter()
        tables = load_tables(kind, args.hub, args.h200 if kind != "holdout" else args.holdout)
        if kind == "holdout" and tables:
            train = load_tables("h200", h200=args.h200) + extra
            results = evaluate_test_set(train, tables, seeds=range(args.seeds), budget=budget,
                                        workers=args.workers, retimed=retimed, **model_params)
        elif kind != "holdout" and len(tables) >= 2:
            results = leave_one_out(tables, seeds=range(args.seeds), budget=budget, workers=args.workers,
                                    extra=extra if kind == "h200" else (),
                                    retimed=retimed if kind == "h200" else None,
                                    **(model_params if kind == "h200" else {}))
        else:
            source = {"hub": f"--hub {args.hub}", "h200": "--h200 " + " --h200 ".join(args.h200),
                      "holdout": f"--holdout {args.holdout}"}[kind]
            parser.error(f"too few tables for the {kind} part ({source})")
        lines += held_out_section(f"{title} (budget {budget}, {args.seeds} seeds)", results, budget)
        lines.append(f"({time.perf_counter() - start:.0f} s)")
        lines.append("")
    report(lines, args.out)


if __name__ == "__main__":
    main()
