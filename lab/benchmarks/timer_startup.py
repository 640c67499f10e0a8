"""What a live study's GPU timer spends before it can time a config, in a fresh process.

    python lab/benchmarks/timer_startup.py      # on a GPU host, with torch and Triton

Importing torch, creating the CUDA context, importing Triton and asking ``nvidia-smi`` for the driver
version (what ``flysearch.evaluators._gpu_bench.device_info`` did before it read
``/proc/driver/nvidia/version``), each timed once.
"""

from __future__ import annotations

import subprocess
import time


def main() -> None:
    t0 = time.perf_counter()
    import torch

    t1 = time.perf_counter()
    torch.cuda.get_device_properties(0)
    t2 = time.perf_counter()
    import triton  # noqa: F401

    t3 = time.perf_counter()
    subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                   capture_output=True, check=False)
    t4 = time.perf_counter()
    print(f"timer start-up parts: import torch {t1 - t0:.2f} s, CUDA context {t2 - t1:.2f} s, "
          f"import triton {t3 - t2:.2f} s, nvidia-smi {t4 - t3:.2f} s")


if __name__ == "__main__":
    main()
