"""Does one GPU slow down when its neighbour works? The hardware bound of a two-GPU study.

    python lab/benchmarks/gpu_pair.py --out lab/benchmarks/results/gpu_pair_h200.json

A bf16 GEMM (cuBLAS, through ``torch.matmul``) of ``--shape`` is launched back to back for
``--seconds`` on GPU 0 alone, on GPU 1 alone, then on both at once (one process per GPU, started
together). Each phase reports the median and spread of the per-launch milliseconds over batches
of CUDA-event-timed launches, with the SM clock, power draw and temperature nvidia-smi reads at its
end. A single worker runs on GPU 0, so two GPU-bound workers cannot exceed
``t0(alone) / t0(both) + t0(alone) / t1(both)`` times its configs/s (``two_gpu_bound``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import statistics
import subprocess
import time
from pathlib import Path


def _smi(gpu: int) -> dict:
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--id={gpu}", "--query-gpu=clocks.sm,power.draw,temperature.gpu",
             "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=20, check=False,
        ).stdout.strip()
        sm, power, temp = (float(v) for v in out.split(","))
        return {"sm_mhz": sm, "power_w": power, "temp_c": temp}
    except (OSError, ValueError, subprocess.SubprocessError):
        return {}


def _worker(gpu: int, shape: tuple[int, int, int], seconds: float, barrier, queue) -> None:
    import torch

    torch.cuda.set_device(gpu)
    m, n, k = shape
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        torch.matmul(a, b)
    torch.cuda.synchronize()
    barrier.wait()
    per_launch: list[float] = []
    end_at = time.perf_counter() + seconds
    while time.perf_counter() < end_at:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(5):
            torch.matmul(a, b)
        end.record()
        end.synchronize()
        per_launch.append(start.elapsed_time(end) / 5)
    queue.put((gpu, per_launch, _smi(gpu)))


def phase(gpus: list[int], shape: tuple[int, int, int], seconds: float) -> dict:
    ctx = mp.get_context("spawn")
    barrier, queue = ctx.Barrier(len(gpus)), ctx.Queue()
    procs = [ctx.Process(target=_worker, args=(g, shape, seconds, barrier, queue)) for g in gpus]
    for p in procs:
        p.start()
    results = [queue.get() for _ in procs]
    for p in procs:
        p.join()
    out = {}
    for gpu, ms, smi in sorted(results):
        # The first seconds warm the GPU up (clocks and temperature settle): drop the first quarter.
        ms = ms[len(ms) // 4:]
        out[str(gpu)] = {"median_ms": round(statistics.median(ms), 4),
                         "p10_ms": round(sorted(ms)[len(ms) // 10], 4),
                         "p90_ms": round(sorted(ms)[9 * len(ms) // 10], 4), "batches": len(ms), **smi}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shape", default="16384x16384x16384")
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    import torch

    shape = tuple(int(v) for v in args.shape.split("x"))
    doc: dict = {"device": torch.cuda.get_device_name(0), "gpus": torch.cuda.device_count(),
                 "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"), "shape": args.shape,
                 "seconds_per_phase": args.seconds,
                 "command": f"python lab/benchmarks/gpu_pair.py --shape {args.shape} "
                            f"--seconds {args.seconds:g}"}
    doc["gpu0_alone"] = phase([0], shape, args.seconds)
    doc["gpu1_alone"] = phase([1], shape, args.seconds)
    doc["both"] = phase([0, 1], shape, args.seconds)
    doc["slowdown_when_both"] = {
        g: round(doc["both"][g]["median_ms"] / doc[f"gpu{g}_alone"][g]["median_ms"] - 1, 4)
        for g in ("0", "1")
    }
    # One worker runs on GPU 0: two GPU-bound workers give at most t0(alone)/t0(both) + t0(alone)/t1(both).
    alone = doc["gpu0_alone"]["0"]["median_ms"]
    doc["two_gpu_bound"] = round(sum(alone / doc["both"][g]["median_ms"] for g in ("0", "1")), 3)
    text = json.dumps(doc, indent=2)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
