"""The live study's own cost on this CPU, with an H200 table played back in real time.

    python lab/benchmarks/live_overhead_sim.py --out lab/benchmarks/results/live_overhead_sim.json

Compiles sleep their recorded H200 compile time and timings their recorded timing time (the
``simulated`` backend: the same pool processes, pipes, claims, SQLite study and table writes as a
live Triton study), so what is not sleeping is flysearch's own work: the sampler, the database, the
pipeline. Reports per sampler the wall-clock, the time a compile or a timing was running, the study
loop's own seconds and the overhead share, on the machine it runs on (a 2-core CPU here, where the
loop shares the cores with nothing else but the sleeping workers).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "lab" / "benchmarks"
sys.path.insert(0, str(ROOT))

from flysearch.study import LiveSettings, StudySpec, run_live  # noqa: E402
from flysearch.tables import TableStore, read_table_file  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--table", default="triton_gemm__H200__1x6144x4096.table.json.gz")
    parser.add_argument("--samplers", default="tpe,surrogate,random")
    parser.add_argument("--budget", type=int, default=96)
    parser.add_argument("--compile-workers", type=int, default=14)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    meta, rows = read_table_file(BENCHMARKS / "data" / "h200" / args.table)
    results = []
    for sampler in args.samplers.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            store = TableStore(f"{tmp}/tables.db")
            store.write(meta, rows)
            store.close()
            job = StudySpec(name=f"sim-{sampler}", evaluator="simulated", sampler=sampler, budget=args.budget,
                            table=meta.name, storage=f"sqlite:///{tmp}/study.db", db=f"{tmp}/tables.db",
                            live=LiveSettings(compile_workers=args.compile_workers, scale=1.0))
            (rep,) = run_live(job)
        results.append({
            "sampler": sampler, "compiles": rep.summary.compiles, "trials": rep.summary.trials,
            "wall_s": round(rep.wall_s, 2), "busy_s": round(rep.busy_s, 2), "loop_s": round(rep.loop_s, 2),
            "startup_s": round(rep.startup_s, 2), "overhead": round(rep.overhead, 4),
            "loop_ms_per_trial": round(1000 * rep.loop_s / max(1, rep.summary.trials), 1),
        })
        print(json.dumps(results[-1]), flush=True)
    doc = {"table": meta.name, "budget": args.budget, "compile_workers": args.compile_workers,
           "cpus": os.cpu_count(), "python": platform.python_version(), "date": time.strftime("%Y-%m-%d"),
           "results": results}
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
