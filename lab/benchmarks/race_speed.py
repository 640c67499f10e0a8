"""End-to-end race rate (compile + validate + time, configs/s) against the naive serial rate.

Both start from an empty Triton cache. The serial path compiles one config, then validates and times
it, then the next (``TritonEvaluator``: compile in one worker process, time in the GPU timer) over a
random subset of the shape's feasible configs; the race runs the whole feasible set with the
compile pool and the GPU timer in a pipeline. Rates count every config that got a row, failures
included, over the wall time from the start of each path (process start-up and the cuBLAS timing
of the race included).

Run on a GPU machine::

    python lab/benchmarks/race_speed.py --shape 256x1536x7168 --serial 24 --out lab/benchmarks/results/x.json
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from flysearch.evaluators import TritonEvaluator
from flysearch.kernels import get_space
from flysearch.race import RaceSettings, RaceShape, run_race
from flysearch.space import get_arch, parse_shape
from flysearch.tables import TableStore


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def serial(shape: Any, configs: list[Any], cache_dir: str) -> dict[str, Any]:
    compile_s, bench_s, outcomes = [], [], []
    t0 = time.monotonic()
    with TritonEvaluator(cache_dir=cache_dir) as ev:
        for config in configs:
            compiled = ev.compile(config, shape)
            m = ev.time(compiled)
            compile_s.append(compiled.compile_s or 0.0)
            bench_s.append(m.bench_s or 0.0)
            outcomes.append(m.outcome.value)
    wall = time.monotonic() - t0
    return {"configs": len(configs), "wall_s": wall, "configs_per_s": len(configs) / wall,
            "median_compile_s": _median(compile_s), "median_bench_s": _median(bench_s),
            "outcomes": {o: outcomes.count(o) for o in sorted(set(outcomes))}}


def race(shape: Any, cache_dir: str, workers: int | None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        store = TableStore(Path(tmp) / "race.db")
        settings = RaceSettings(workers=workers, cache_dir=cache_dir)
        report = run_race(get_space("triton_gemm_splitk"), [RaceShape(shape)], store, settings)
        table = store.load(report.shapes[0].table)
    rows = list(table.rows.values())
    return {
        "configs": report.measured, "wall_s": report.wall_s, "configs_per_s": report.configs_per_s,
        "workers": settings.workers or max(1, (os.cpu_count() or 2) - 2),
        "median_compile_s": _median([r.compile_s for r in rows if r.compile_s is not None]),
        "median_bench_s": _median([r.bench_s for r in rows if r.bench_s is not None]),
        "outcomes": report.shapes[0].counts, "best_ms": report.shapes[0].best_ms,
        "cublas_ms": report.shapes[0].vendor_ms, "device": report.device, "versions": report.versions,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="256x1536x7168")
    parser.add_argument("--serial", type=int, default=24, help="Configs in the serial subset.")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--out", default=None, help="Write the result as JSON here.")
    args = parser.parse_args()
    shape = parse_shape(args.shape)
    space = get_space("triton_gemm_splitk")
    feasible = space.enumerate(shape, get_arch("sm_90")).feasible
    subset = random.Random(0).sample(feasible, min(args.serial, len(feasible)))
    with tempfile.TemporaryDirectory() as c1, tempfile.TemporaryDirectory() as c2:
        ser = serial(shape, subset, c1)
        print(f"serial: {ser['configs']} configs in {ser['wall_s']:.1f} s = "
              f"{ser['configs_per_s']:.2f} configs/s (median compile {ser['median_compile_s']:.2f} s)",
              flush=True)
        par = race(shape, c2, args.workers)
    print(f"race:   {par['configs']} configs in {par['wall_s']:.1f} s = {par['configs_per_s']:.2f} configs/s "
          f"with {par['workers']} compile workers (median compile {par['median_compile_s']:.2f} s, "
          f"median validate+time {par['median_bench_s'] * 1e3:.1f} ms)")
    print(f"speed-up {par['configs_per_s'] / ser['configs_per_s']:.1f}x; space {space.size} configs, "
          f"{len(feasible)} feasible for {args.shape}; device {par['device']}; {par['versions']}")
    result = {"date": dt.date.today().isoformat(), "shape": args.shape, "space_size": space.size,
              "feasible": len(feasible), "cpus": os.cpu_count(), "serial": ser, "race": par}
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        Path(args.out).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
