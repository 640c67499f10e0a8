"""How long a pool of spawned workers takes to answer its first task, with and without the parent's
main module re-run in every worker.

    OMP_NUM_THREADS=1 python lab/benchmarks/pool_start.py > lab/benchmarks/results/pool_start.txt

The parent imports what the ``flysearch`` CLI imports (scikit-learn through the cost model, Optuna,
rich), as a live study started from the CLI or a benchmark does. A spawned child re-imports the
parent's main module (this script) before anything else, unless the pool starts it inside
:func:`flysearch.evaluators.main_module_hidden` (what ``WorkerPool`` does when its function does
not live in ``__main__``). Reports the median over a few repeats of the seconds from starting the pool
to the first task's start, measured by the workers themselves. With ``--warm triton --workers 14``
(where Triton is installed) it also times the pool of a live Triton study, whose workers import
Triton and the GEMM kernel before their first task.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import flysearch.cli  # noqa: E402  (the CLI's imports, as under `flysearch study run`)
import flysearch.costmodel  # noqa: E402,F401
from flysearch.evaluators import WorkerPool, warm_triton  # noqa: E402


def in_main(initializer: Callable[[], None] | None) -> None:
    """Run *initializer* (if any) from ``__main__``: a pool whose workers need a function of the main
    module (this script) cannot hide it from them (:func:`flysearch.evaluators.main_module_hidden`),
    so every worker re-runs the script, and its imports, before its first task."""
    if initializer is not None:
        initializer()


def first_task_s(workers: int, hide: bool, warm: str | None = None) -> float:
    initializer = None
    if warm == "triton":  # what a live Triton study's compile processes import before their first task
        initializer = warm_triton
    if not hide:
        initializer = functools.partial(in_main, initializer)
    t0 = time.monotonic()
    pool = WorkerPool(abs, workers=workers, timeout_s=120, initializer=initializer)
    pool.start()
    try:
        pool.submit_many((i, -i) for i in range(workers))
        results = pool.drain(timeout=120)
    finally:
        pool.close()
    return min(r.ran[0] for r in results if r.ran is not None) - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warm", choices=["triton"], default=None,
                        help="Also time pools whose workers import Triton and the GEMM kernel first.")
    args = parser.parse_args()
    print(f"# pool start, {time.strftime('%Y-%m-%d')}, {platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}, {args.workers} workers, median of {args.repeats}")
    medians = {}
    for hide in (False, True):
        runs = [first_task_s(args.workers, hide) for _ in range(args.repeats)]
        medians[hide] = statistics.median(runs)
        label = "main module hidden" if hide else "main module re-run"
        print(f"{label}: first task starts after {medians[hide]:.2f} s (runs: "
              f"{', '.join(f'{r:.2f}' for r in runs)})")
    print(f"ratio: {medians[False] / medians[True]:.0f}x")
    if args.warm:
        runs = [first_task_s(args.workers, True, args.warm) for _ in range(args.repeats)]
        print(f"main module hidden, workers import {args.warm} first: first task starts after "
              f"{statistics.median(runs):.2f} s (runs: {', '.join(f'{r:.2f}' for r in runs)})")


if __name__ == "__main__":
    main()
