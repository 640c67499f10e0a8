"""A live study on the GPU: the sampler asks, configs are compiled and timed for real.

    python lab/benchmarks/live_study_h200.py --out lab/benchmarks/results/live_study_h200.json

On an NVIDIA H200 (sm_90), for three shapes that have exhaustive tables in lab/benchmarks/data/h200,
runs a TPE study and a cost-model study (prior trained on the *other* 13 committed tables) with the
live Triton evaluator (compile in a worker process, validate and time in a GPU timer process; cold
Triton cache per study), and reports unique compiles, wall-clock seconds, the winner's live time, and
the winner's time in the exhaustive table against the table's optimum.
"""

from __future__ import annotations

import argparse
import glob
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "lab" / "benchmarks"
sys.path.insert(0, str(ROOT))

import optuna  # noqa: E402

from flysearch.costmodel import fit_prior  # noqa: E402
from flysearch.evaluators import TritonEvaluator  # noqa: E402
from flysearch.kernels import get_space  # noqa: E402
from flysearch.space import get_arch, parse_shape  # noqa: E402
from flysearch.study import StudySpec, run_study  # noqa: E402
from flysearch.tables import TableStore, read_table_file  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shapes", default="1x6144x4096,256x1536x7168,4096x4096x4096")
    parser.add_argument("--samplers", default="costmodel,tpe")
    parser.add_argument("--budget", type=int, default=24)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    import torch

    store = TableStore(":memory:")
    for path in sorted(glob.glob(str(BENCHMARKS / "data" / "h200" / "*.table.json.gz"))):
        store.write(*read_table_file(path))
    space, arch = get_space("triton_gemm_splitk"), get_arch("sm_90")
    results = []
    for text in args.shapes.split(","):
        shape = parse_shape(text)
        name = f"triton_gemm/H200/{shape.M}x{shape.N}x{shape.K}"
        table = store.load(name)
        others = [store.load(n) for n in store.names() if n != name]
        prior = fit_prior(others)
        for sampler in args.samplers.split(","):
            with tempfile.TemporaryDirectory() as cache, TritonEvaluator(arch="sm_90", cache_dir=cache) as ev:
                start = time.perf_counter()
                summary = run_study(f"live-{sampler}-{text}", space, ev,
                                    StudySpec(sampler=sampler, budget=args.budget, seed=0, space=space.name),
                                    shape=shape, arch=arch, storage=":memory:", problem=shape.as_dict(),
                                    prior=prior if sampler == "costmodel" else None)
                wall = time.perf_counter() - start
            row = table.rows.get(summary.best_key or "")
            optimum = table.best().time_ms
            results.append({
                "shape": text, "sampler": sampler, "compiles": summary.compiles, "trials": summary.trials,
                "wall_s": round(wall, 1), "best_key": summary.best_key, "live_best_ms": summary.best_ms,
                "table_ms_of_winner": row.time_ms if row else None, "table_optimum_ms": optimum,
                "winner_vs_optimum_in_table": (row.time_ms / optimum) if row and row.ok and optimum else None,
                "feasible": len(table.rows),
            })
            print(json.dumps(results[-1]), flush=True)
    doc = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "python": platform.python_version(), "date": time.strftime("%Y-%m-%d"), "budget": args.budget,
           "results": results}
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
