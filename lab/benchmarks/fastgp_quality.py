"""Quality of flysearch's fast GP (``fastgp``) against Optuna's GP (``gp``): compiles to 1% of the optimum.

Replays both samplers on a few benchmark_hub tables through ``flysearch compare``'s harness (runs stop
once they found the optimum: the metrics are those of the full budget) and prints, per table and
sampler, the median compiles to within 1% and 0% of the exhaustive optimum, the success rate within
the budget and the sampler's cost per trial.

Run it: OMP_NUM_THREADS=1 python lab/benchmarks/fastgp_quality.py --seeds 10 --gp-seeds 3 \
    --out lab/benchmarks/results/fastgp_quality.md
"""

from __future__ import annotations

import argparse
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
    load_table_infos,
    run_experiment,
    summary_rows,
)

REPO = Path(__file__).resolve().parents[2]
BENCHMARKS = REPO / "lab" / "benchmarks"
HUB = REPO.parent / "shared" / "data" / "benchmark_hub"
TABLES = [
    HUB / "dedispersion_milo" / "MI250X.json.gz",
    HUB / "convolution_milo" / "A100.json.gz",
    BENCHMARKS / "data" / "h200" / "triton_gemm__H200__4096x4096x4096.table.json.gz",
]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10, help="Seeds of fastgp.")
    ap.add_argument("--gp-seeds", type=int, default=3, help="Seeds of Optuna's gp (0: skip it).")
    ap.add_argument("--budget", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    tables = tuple(TableSpec(str(p)) for p in TABLES if p.is_file())
    samplers = [SamplerSpec("fastgp", seeds=tuple(range(args.seeds)))]
    if args.gp_seeds:
        samplers.append(SamplerSpec("gp", seeds=tuple(range(args.gp_seeds))))
    with tempfile.TemporaryDirectory() as tmp:
        exp = Experiment("fastgp-quality", tables, tuple(samplers), seeds=tuple(range(args.seeds)),
                         budget=args.budget, workers=args.workers, output=tmp)
        start = time.perf_counter()
        run_experiment(exp)
        wall = time.perf_counter() - start
        runs = load_runs(Path(tmp) / "results.db")
        rows = summary_rows(runs, load_table_infos(exp), args.budget)
    lines = [
        "# fastgp against Optuna's GP: compiles to the optimum",
        "",
        f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, Python {platform.python_version()}; budget "
        f"{args.budget}; fastgp {args.seeds} seeds, gp {args.gp_seeds} seeds; {wall:.0f} s wall on "
        f"{args.workers} workers. Regenerate: `OMP_NUM_THREADS=1 python lab/benchmarks/fastgp_quality.py "
        f"--seeds {args.seeds} --gp-seeds {args.gp_seeds}`.",
        "",
        "| table | sampler | runs | compiles to 1%: median (IQR) | success | to 0%: median (success) "
        "| ms/trial (median) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["level"] != "table" or r["sampler"] not in ("fastgp", "gp"):
            continue
        ms = statistics.median(
            x["ms_per_trial"] for x in runs if x["table_label"] == r["where"] and x["sampler"] == r["sampler"]
        )
        lines.append(
            f"| {r['where']} | {r['sampler']} | {r['runs']} | {_n(r['compiles_1pct_median'])} "
            f"({_n(r['compiles_1pct_q25'])}–{_n(r['compiles_1pct_q75'])}) | "
            f"{r['compiles_1pct_success']:.0%} | {_n(r['compiles_0pct_median'])} "
            f"({r['compiles_0pct_success']:.0%}) | {ms:.1f} |"
        )
    text = "\n".join(lines)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


def _n(x: float) -> str:
    return ">B" if x == float("inf") else f"{x:g}"


if __name__ == "__main__":
    sys.exit(main())
