"""Speed of ``flysearch compare``: seeds x samplers x tables at a 200-compile budget, on this machine.

The issue's target: 20 seeds x 8 samplers x 6 tables (960 runs) within 10 minutes on 2 cores, GP
included. The eight samplers are grid, random, qmc, TPE (``tpe-unseen``: Optuna's TPE proposing the
best of its candidates that is feasible and not tried yet), cmaes, flysearch's own GP (``fastgp``)
and the two model-based samplers; runs stop once they found the table's optimum
(``stop_at_optimum``, which changes no reported metric). This script runs the grid (or a subset of
seeds: ``--seeds``), reports wall time and the per-sampler cost per trial (ms per suggestion, study
loop included), and extrapolates to 20 seeds from the measured mean run time per sampler. Optuna's
own GP sampler (``gp``) is timed apart on ``--gp-seeds`` seeds of ``--gp-tables`` tables, since one
of its runs takes minutes, and Optuna's plain TPE (``tpe``) on ``--tpe-seeds`` seeds of every
table.

Run it: OMP_NUM_THREADS=1 python lab/benchmarks/compare_speed.py --seeds 20 \
    --out lab/benchmarks/results/compare_speed.md
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

from flysearch.compare import (
    Experiment,
    SamplerSpec,
    TableSpec,
    load_runs,
    model_samplers_available,
    run_experiment,
)

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "lab" / "benchmarks"
HUB = REPO.parent / "shared" / "data" / "benchmark_hub"
TABLES = [
    HUB / "convolution_milo" / "A100.json.gz",
    HUB / "convolution_milo" / "MI250X.json.gz",
    HUB / "dedispersion_milo" / "A100.json.gz",
    HUB / "dedispersion_milo" / "MI250X.json.gz",
    BENCHMARKS / "data" / "h200" / "triton_gemm__H200__1x6144x4096.table.json.gz",
    BENCHMARKS / "data" / "h200" / "triton_gemm__H200__4096x4096x4096.table.json.gz",
]
SAMPLERS = ["grid", "random", "qmc", "tpe-unseen", "cmaes", "fastgp", "costmodel", "surrogate"]
TARGET_S = 600.0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20, help="Seeds per sampler and table (target: 20).")
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--gp-seeds", type=int, default=1, help="Seeds of Optuna's gp, timed apart (0: skip).")
    ap.add_argument("--gp-tables", type=int, default=2, help="Tables (the first ones) of Optuna's gp.")
    ap.add_argument("--tpe-seeds", type=int, default=1, help="Seeds of plain tpe, timed apart (0: skip).")
    ap.add_argument("--no-stop", action="store_true", help="Spend every budget in full (no stop at optimum).")
    ap.add_argument("--out", type=Path, default=None, help="Write the markdown report here.")
    args = ap.parse_args()
    tables = tuple(TableSpec(str(p)) for p in TABLES if p.is_file())
    samplers = tuple(SamplerSpec(name) for name in SAMPLERS)
    runs, wall, skipped = _run(tables, samplers, tuple(range(args.seeds)), args)
    gp_runs: list[dict] = []
    if args.gp_seeds:
        gp_seeds = tuple(range(args.gp_seeds))
        gp_runs, _w, _s = _run(tables[: args.gp_tables], (SamplerSpec("gp"),), gp_seeds, args)
    if args.tpe_seeds:
        tpe_runs, _w, _s = _run(tables, (SamplerSpec("tpe"),), tuple(range(args.tpe_seeds)), args)
        gp_runs += tpe_runs
    lines = report(runs, gp_runs, wall, args, len(tables), skipped)
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


def _run(
    tables: tuple[TableSpec, ...], samplers: tuple[SamplerSpec, ...], seeds: tuple[int, ...],
    args: argparse.Namespace,
) -> tuple[list[dict], float, list[str]]:
    with tempfile.TemporaryDirectory() as tmp:
        exp = Experiment(
            "speed", tables, samplers, seeds=seeds, budget=args.budget, workers=args.workers, output=tmp,
            stop_at_optimum=not args.no_stop,
        )
        start = time.perf_counter()
        result = run_experiment(exp)
        wall = time.perf_counter() - start
        return load_runs(result.results_db), wall, result.skipped


def report(
    runs: list[dict], gp_runs: list[dict], wall: float, args: argparse.Namespace, n_tables: int,
    skipped: list[str],
) -> list[str]:
    busy = sum(r["wall_s"] for r in runs)
    lines = [
        "# compare speed",
        "",
        f"{time.strftime('%Y-%m-%d')}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; {n_tables} tables x {len(SAMPLERS)} samplers, budget "
        f"{args.budget}, {args.seeds} seeds, {args.workers} workers, "
        f"{'no stop' if args.no_stop else 'runs stop at the optimum'}. "
        "Command: `OMP_NUM_THREADS=1 python lab/benchmarks/compare_speed.py "
        f"--seeds {args.seeds}{' --no-stop' if args.no_stop else ''}`.",
        "",
        f"**Measured wall time: {wall:.1f} s for {len(runs)} runs** (target for 960 runs: {TARGET_S:.0f} s); "
        f"the runs themselves took {busy:.1f} core-seconds, the rest is worker start-up, table loading "
        "and fitting the leave-one-table-out priors.",
        "",
        "| sampler | runs | stopped at optimum | mean s/run | ms/trial (median) | trials/run | compiles/run "
        f"| extrapolated s for 20 seeds x {n_tables} tables on {args.workers} workers |",
        "|---|---|---|---|---|---|---|---|",
    ]
    total = 0.0
    apart = {"gp": "gp (Optuna's GP, not in the 8)", "tpe": "tpe (Optuna's plain TPE, not in the 8)"}
    for sampler in [*SAMPLERS, *apart]:
        rs = [r for r in (gp_runs if sampler in apart else runs) if r["sampler"] == sampler]
        if not rs:
            continue
        mean = statistics.mean(r["wall_s"] for r in rs)
        extra = mean * 20 * n_tables / args.workers
        if sampler not in apart:
            total += extra
        name = apart.get(sampler, sampler)
        lines.append(
            f"| {name} | {len(rs)} | {sum(r['stopped'] == 'target reached' for r in rs)} | {mean:.2f} | "
            f"{statistics.median(r['ms_per_trial'] for r in rs):.1f} | "
            f"{statistics.mean(r['trials'] for r in rs):.0f} | "
            f"{statistics.mean(r['compiles'] for r in rs):.0f} | {extra:.0f} |"
        )
    fixed = max(wall - busy / args.workers, 0.0)
    lines += [
        "",
        f"Extrapolated total for 20 seeds of the 8 samplers: {total:.0f} s of runs + {fixed:.0f} s fixed "
        f"= {(total + fixed) / 60:.1f} min (target 10 min).",
        "",
    ]
    n_gp = sum(r["sampler"] == "gp" for r in gp_runs)
    if n_gp:
        lines.append(
            f"- Optuna's GP (`gp`) was timed on {n_gp} runs ({args.gp_seeds} seed(s) of the first "
            f"{args.gp_tables} tables); it is not one of the 8 samplers above."
        )
    n_tpe = sum(r["sampler"] == "tpe" for r in gp_runs)
    if n_tpe:
        lines.append(
            f"- Optuna's plain TPE (`tpe`) was timed on {n_tpe} runs ({args.tpe_seeds} seed(s) of every "
            "table); the 8 above use `tpe-unseen` (its quality against `tpe`: "
            "`lab/benchmarks/results/compare/compare_tpe_unseen/summary.md`)."
        )
    lines += [f"- skipped: {s}" for s in skipped]
    if model_samplers_available():
        lines.append(f"- {model_samplers_available()}")
    return lines


if __name__ == "__main__":
    sys.exit(main())
