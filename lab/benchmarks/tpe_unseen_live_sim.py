"""Suggestions TPE and tpe-unseen need in a live study, simulated on this CPU.

    OMP_NUM_THREADS=1 python lab/benchmarks/tpe_unseen_live_sim.py \
        > lab/benchmarks/results/tpe_unseen_live_sim.txt

A live study (the claim-based pipeline of ``flysearch.study``, one worker, 2 compile processes)
plays back the committed H200 table of ``--shape`` in real time (``--scale`` times its compile and
timing seconds) with each sampler, seed 0, budget ``--budget``: suggestions made, compiles, wall
seconds, seconds spent asking the sampler, and the best time found. On a small space plain TPE
proposes mostly configs it already tried, and each of those suggestions costs time that grows
with the trials so far.
"""

from __future__ import annotations

import argparse
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="1x6144x4096")
    parser.add_argument("--samplers", default="tpe-unseen,tpe")
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--scale", type=float, default=0.2)
    args = parser.parse_args()
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    tables = BENCHMARKS / "data" / "h200"
    meta, rows = read_table_file(tables / f"triton_gemm__H200__{args.shape}.table.json.gz")
    print(f"{time.strftime('%Y-%m-%d')}, {platform.machine()}, Python {platform.python_version()}; "
          f"table {meta.name}, budget {args.budget}, scale {args.scale}, seed 0, 2 compile processes")
    print("| sampler | suggestions | compiles | wall s | asking s | best ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for sampler in args.samplers.split(","):
        with tempfile.TemporaryDirectory() as tmp:
            store = TableStore(f"{tmp}/tables.db")
            store.write(meta, rows)
            store.close()
            job = StudySpec(name="sim", evaluator="simulated", sampler=sampler, budget=args.budget,
                            table=meta.name, storage=f"sqlite:///{tmp}/study.db", db=f"{tmp}/tables.db",
                            live=LiveSettings(compile_workers=2, finalists=0, table="live/sim",
                                              scale=args.scale))
            (r,) = run_live(job)
        print(f"| {sampler} | {r.summary.trials} | {r.summary.compiles} | {r.wall_s:.1f} | "
              f"{r.loop_parts.get('ask', 0.0):.1f} | {r.summary.best_ms:.5f} |", flush=True)


if __name__ == "__main__":
    main()
