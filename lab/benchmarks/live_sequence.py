"""Several shapes, one study each: separate runs (pools started per study) against one sequence
(`flysearch.study.run_live` given all of them: one compile pool and one GPU timer for all).

    python lab/benchmarks/live_sequence.py --out lab/benchmarks/results/live_sequence_h200.json   # a GPU host
    OMP_NUM_THREADS=1 python lab/benchmarks/live_sequence.py --evaluator simulated --scale 0.2 \\
        --out lab/benchmarks/results/live_sequence_sim.json                                    # this CPU

For each shape (``--shapes``, exhaustive tables in lab/benchmarks/data/h200) a live study of
``--budget`` compiles with ``--sampler``, from a cold Triton cache: first each in a run of its own,
then all of them as one sequence. Reports per study the wall-clock, the overhead and when the GPU
was ready, and the total wall-clock of both ways. With ``--evaluator simulated`` the tables are
played back in real time (``--scale`` times their recorded seconds) on this CPU: the pools and the
pipeline are real, the GPU's start-up is not.
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


def _jobs(args: argparse.Namespace, tmp: str, tag: str) -> list[StudySpec]:
    jobs = []
    for shape in args.shapes.split(","):
        table = f"triton_gemm/H200/{shape}"
        common = {"name": f"{tag}-{shape}", "sampler": args.sampler, "budget": args.budget, "seed": 0,
                  "storage": f"sqlite:///{tmp}/{tag}.db", "db": f"{tmp}/tables.db"}
        if args.evaluator == "simulated":
            live = LiveSettings(compile_workers=args.compile_workers, scale=args.scale)
            jobs.append(StudySpec(evaluator="simulated", table=table, live=live, **common))
        else:
            live = LiveSettings(compile_workers=args.compile_workers,
                                cache_dir=os.path.join(tmp, f"cache-{tag}"))
            jobs.append(StudySpec(evaluator="triton", shape=shape, live=live, **common))
    return jobs


def _row(report) -> dict:
    return {"study": report.summary.study_name, "compiles": report.summary.compiles,
            "wall_s": round(report.wall_s, 2), "busy_s": round(report.busy_s, 2),
            "compile_busy_s": round(report.compile_busy_s, 2), "timer_busy_s": round(report.timer_busy_s, 2),
            "head_s": round(report.head_s, 3), "tail_s": round(report.tail_s, 3),
            "overhead": round(report.overhead, 4),
            "overhead_after_start": round(report.overhead_after_start, 4),
            "overhead_after_ready": round(report.overhead_after_ready, 4),
            "timer_ready_s": round(report.timer_ready_s, 3),
            "first_compile_s": round(report.first_compile_s, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shapes", default="1x6144x4096,256x1536x7168,4096x4096x4096")
    parser.add_argument("--sampler", default="tpe-unseen")
    parser.add_argument("--budget", type=int, default=100)
    parser.add_argument("--evaluator", choices=["triton", "simulated"], default="triton")
    parser.add_argument("--scale", type=float, default=1.0, help="Simulated: time scale of the playback.")
    parser.add_argument("--compile-workers", type=int, default=14)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    doc: dict = {"evaluator": args.evaluator, "sampler": args.sampler, "budget": args.budget,
                 "compile_workers": args.compile_workers, "cpus": os.cpu_count(),
                 "python": platform.python_version(), "date": time.strftime("%Y-%m-%d")}
    if args.evaluator == "simulated":
        doc["scale"] = args.scale
    else:
        import torch

        doc["device"] = torch.cuda.get_device_name(0)
    with tempfile.TemporaryDirectory() as tmp:
        store = TableStore(f"{tmp}/tables.db")
        for shape in args.shapes.split(","):
            path = BENCHMARKS / "data" / "h200" / f"triton_gemm__H200__{shape}.table.json.gz"
            store.write(*read_table_file(path))
        store.close()
        start = time.perf_counter()
        separate = [run_live(job)[0] for job in _jobs(args, tmp, "separate")]
        separate_wall = time.perf_counter() - start
        start = time.perf_counter()
        together = run_live(_jobs(args, tmp, "sequence"))
        together_wall = time.perf_counter() - start
    doc["separate"] = {"wall_s": round(separate_wall, 2), "studies": [_row(r) for r in separate]}
    doc["sequence"] = {"wall_s": round(together_wall, 2), "studies": [_row(r) for r in together]}
    doc["sequence_saves_s"] = round(separate_wall - together_wall, 2)
    text = json.dumps(doc, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
