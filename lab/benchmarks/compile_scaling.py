"""How Triton compile throughput grows with the number of compile processes on this host.

    python lab/benchmarks/compile_scaling.py --workers 4,8,16,30 --configs 300 --out scaling.json

A live study whose compiles set the pace can only go as fast as the host compiles. This compiles
the same *configs* feasible configs of the split-K Triton GEMM (256x1536x7168, sm_90) with pools of
each size in ``--workers``, each into a fresh Triton cache (no cache hits), and reports configs per
second between the first compile's start and the last one's end, with the host's CPU topology
(``lscpu``: cores per socket, threads per core). No GPU is used.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from flysearch.evaluators import (  # noqa: E402
    TritonCompileTask,
    WorkerPool,
    compile_request,
    compile_task,
    warm_triton,
)
from flysearch.kernels import get_space  # noqa: E402
from flysearch.space import get_arch, parse_shape  # noqa: E402


def topology() -> dict[str, str]:
    """The lines of ``lscpu`` that say how many cores and hardware threads the host has."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.TimeoutExpired):
        return {}
    wanted = ("Model name", "Socket(s)", "Core(s) per socket", "Thread(s) per core", "CPU(s)")
    fields = (line.split(":", 1) for line in text.splitlines() if ":" in line)
    return {k.strip(): v.strip() for k, v in fields if k.strip() in wanted}


def compile_rate(payloads: list[TritonCompileTask], workers: int) -> dict[str, float]:
    """Compile *payloads* with a fresh pool of *workers* into a fresh cache; configs per second."""
    with tempfile.TemporaryDirectory(prefix="flysearch-scaling-") as cache:
        pool = WorkerPool(compile_task, workers=workers, timeout_s=300, env={"TRITON_CACHE_DIR": cache},
                          initializer=warm_triton)
        try:
            pool.start()
            pool.submit_many(enumerate(payloads))
            results = pool.drain(timeout=1800)
        finally:
            pool.close()
    spans = [r.ran for r in results if r.ran is not None]
    wall = max(end for _, end in spans) - min(start for start, _ in spans)
    ok = sum(1 for r in results if r.ok and r.value.ok)
    busy = sum(end - start for start, end in spans)
    return {"workers": workers, "configs": len(payloads), "compiled_ok": ok, "wall_s": round(wall, 2),
            "configs_per_s": round(len(payloads) / wall, 2),
            "mean_compile_s": round(busy / len(spans), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workers", default="4,8,16,30", help="pool sizes, comma-separated")
    parser.add_argument("--configs", type=int, default=300)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    try:
        sizes = [int(w) for w in args.workers.split(",")]
    except ValueError:
        parser.error(f"--workers takes comma-separated integers, not {args.workers!r}")
    shape = parse_shape("256x1536x7168")
    feasible = get_space("triton_gemm_splitk").enumerate(shape, get_arch("sm_90")).feasible
    step = max(1, len(feasible) // args.configs)
    payloads = [compile_request(c, shape, "sm_90") for c in feasible[::step][: args.configs]]
    runs = []
    for workers in sizes:
        runs.append(compile_rate(payloads, workers))
        print(json.dumps(runs[-1]), flush=True)
    base = runs[0]["configs_per_s"]
    for run in runs:
        run["speedup_over_first"] = round(run["configs_per_s"] / base, 2)
    report = {"date": dt.date.today().isoformat(), "host": platform.node(), "cpus": os.cpu_count(),
              "topology": topology(), "python": platform.python_version(), "shape": shape.key,
              "runs": runs}
    text = json.dumps(report, indent=1)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
