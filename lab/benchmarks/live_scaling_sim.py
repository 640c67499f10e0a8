"""Does a live study scale from one worker to two, and on which database? Measured on this CPU.

    python lab/benchmarks/live_scaling_sim.py --out lab/benchmarks/results/live_scaling_sim.json   # --scale 4

Plays an H200 table back in real time (the ``simulated`` backend: compiles and timings sleep their
recorded seconds in the same pool processes a live Triton study uses), so the workers' own work
(sampler, claims, trial writes, table rows) is what competes for the CPU and the database. For each
storage (SQLite file; PostgreSQL 15 started on loopback as the tests do, when installed) and sampler,
runs the same budget with one worker and with two workers sharing the study, and reports configs/s
and the speed-up. On a 2-core machine two workers also share the two cores with each other.
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


def _run(storage: str, sampler: str, workers: int, args: argparse.Namespace, meta, rows) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        store = TableStore(f"{tmp}/tables.db")
        store.write(meta, rows)
        store.close()
        job = StudySpec(name=f"scale-{sampler}-{workers}-{time.time_ns()}", evaluator="simulated",
                        sampler=sampler, budget=args.budget, table=meta.name,
                        storage=storage or f"sqlite:///{tmp}/study.db", db=f"{tmp}/tables.db",
                        live=LiveSettings(gpus=tuple(str(i) for i in range(workers)), finalists=0,
                                          compile_workers=args.compile_workers, scale=args.scale))
        start = time.perf_counter()
        reports = run_live(job)
        wall = time.perf_counter() - start
    compiled = sum(r.compiled for r in reports)
    return {"workers": workers, "compiled": compiled, "wall_s": round(wall, 2),
            "configs_per_s": round(compiled / wall, 2), "trials": reports[-1].summary.trials,
            "loop_s": [round(r.loop_s, 2) for r in reports]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--table", default="triton_gemm__H200__256x1536x7168.table.json.gz")
    parser.add_argument("--samplers", default="random,surrogate")
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--scale", type=float, default=4.0)
    parser.add_argument("--compile-workers", type=int, default=7)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    meta, rows = read_table_file(BENCHMARKS / "data" / "h200" / args.table)
    storages: list[tuple[str, str]] = [("sqlite", "")]
    server = None
    from tests.pgserver import PostgresServer

    server = PostgresServer()
    if server.available is None:
        server.start()
        storages.append(("postgresql", ""))
    results = []
    try:
        for label, _ in storages:
            for sampler in args.samplers.split(","):
                one_url = server.create_database(f"one_{sampler}") if label == "postgresql" else ""
                two_url = server.create_database(f"two_{sampler}") if label == "postgresql" else ""
                one = _run(one_url, sampler, 1, args, meta, rows)
                two = _run(two_url, sampler, 2, args, meta, rows)
                results.append({"storage": label, "sampler": sampler, "one": one, "two": two,
                                "speedup": round(two["configs_per_s"] / one["configs_per_s"], 3)})
                print(json.dumps(results[-1]), flush=True)
    finally:
        if server is not None and server.available is None:
            server.stop()
    doc = {"table": meta.name, "budget": args.budget, "scale": args.scale,
           "compile_workers_per_worker": args.compile_workers, "cpus": os.cpu_count(),
           "python": platform.python_version(), "date": time.strftime("%Y-%m-%d"), "results": results}
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
