"""Speed of ``flysearch compare``: seeds x samplers x tables at a 200-compile budget, on this machine.

The issue's target: 20 seeds x 8 samplers x 6 tables (960 runs) within 10 minutes on 2 cores, GP
included. This script runs the grid (or a subset of seeds: ``--seeds``), reports wall time and the
per-sampler overhead per trial (ms per suggestion, study loop included), and extrapolates to 20
seeds from the measured mean run time per sampler.

Run it: python benchmarks/compare_speed.py --seeds 2 --out benchmarks/results/compare_speed.md
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

from flysearch.compare import load_runs, model_samplers_available, run_experiment
from flysearch.experiment import Experiment, SamplerSpec, TableSpec

REPO = Path(__file__).resolve().parents[1]
HUB = REPO.parent / "shared" / "data" / "benchmark_hub"
TABLES = [
    HUB / "convolution_milo" / "A100.json.gz",
    HUB / "convolution_milo" / "MI250X.json.gz",
    HUB / "dedispersion_milo" / "A100.json.gz",
    HUB / "dedispersion_milo" / "MI250X.json.gz",
    REPO / "benchmarks" / "data" / "h200" / "triton_gemm__H200__1x6144x4096.table.json.gz",
    REPO / "benchmarks" / "data" / "h200" / "triton_gemm__H200__4096x4096x4096.table.json.gz",
]
SAMPLERS = ["grid", "random", "qmc", "tpe", "cmaes", "gp", "costmodel", "surrogate"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=20, help="Seeds per sampler and table (target: 20).")
    ap.add_argument("--gp-seeds", type=int, default=None, help="Seeds for gp (default: --seeds).")
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None, help="Write the markdown report here.")
    args = ap.parse_args()
    tables = tuple(TableSpec(str(p)) for p in TABLES if p.is_file())
    samplers = tuple(
        SamplerSpec(name, seeds=tuple(range(args.gp_seeds)) if name == "gp" and args.gp_seeds else None)
        for name in SAMPLERS
    )
    with tempfile.TemporaryDirectory() as tmp:
        exp = Experiment(
            "speed",
            tables,
            samplers,
            seeds=tuple(range(args.seeds)),
            budget=args.budget,
            workers=args.workers,
            output=tmp,
        )
        start = time.perf_counter()
        result = run_experiment(exp)
        wall = time.perf_counter() - start
        runs = load_runs(result.results_db)
    lines = report(runs, wall, args, len(tables), result.skipped)
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


def report(
    runs: list[dict], wall: float, args: argparse.Namespace, n_tables: int, skipped: list[str]
) -> list[str]:
    lines = [
        "# compare speed",
        "",
        f"{time.strftime('%Y-%m-%d')}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}; {n_tables} tables x {len(SAMPLERS)} samplers, budget "
        f"{args.budget}, {args.seeds} seeds (gp {args.gp_seeds or args.seeds}), {args.workers} workers.",
        "",
        f"Measured wall time: {wall:.1f} s for {len(runs)} runs.",
        "",
        "| sampler | runs | mean s/run | ms/trial (median) | trials/run | extrapolated s for 20 seeds x "
        f"{n_tables} tables on {args.workers} workers |",
        "|---|---|---|---|---|---|",
    ]
    total = 0.0
    for sampler in SAMPLERS:
        rs = [r for r in runs if r["sampler"] == sampler]
        if not rs:
            lines.append(f"| {sampler} | 0 | skipped | | | |")
            continue
        mean = statistics.mean(r["wall_s"] for r in rs)
        extra = mean * 20 * n_tables / args.workers
        total += extra
        lines.append(
            f"| {sampler} | {len(rs)} | {mean:.2f} | "
            f"{statistics.median(r['ms_per_trial'] for r in rs):.1f} | "
            f"{statistics.mean(r['trials'] for r in rs):.0f} | {extra:.0f} |"
        )
    lines += [
        "",
        f"Extrapolated total for 20 seeds: {total:.0f} s ({total / 60:.1f} min; target 10 min).",
        "",
    ]
    lines += [f"- skipped: {s}" for s in skipped]
    if model_samplers_available():
        lines.append(f"- {model_samplers_available()}")
    return lines


if __name__ == "__main__":
    sys.exit(main())
