"""A fake kernel for the autotune tests: a CPU function whose first call of each config (its build)
is logged to a file, so that a test counts builds across processes. Its outputs are right for every
config but ``chunk == 512`` (wrong result) and it raises for ``chunk == 32`` (a config that does not
run)."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

import flysearch

SPACE = {"chunk": [32, 64, 128, 256, 512, 1024], "unroll": [1, 2, 4]}


_built: set[tuple[int, int]] = set()


def kernel(x, out, n, chunk, unroll, log=None, pause=0.0):
    if (chunk, unroll) not in _built:  # a first call builds: it is logged and takes *pause* s
        _built.add((chunk, unroll))
        if log:
            with open(log, "a") as f:
                f.write(json.dumps({"pid": os.getpid(), "chunk": chunk, "unroll": unroll}) + "\n")
        time.sleep(pause)
    if chunk == 32:
        raise RuntimeError("chunk 32 does not run")
    for i in range(0, n, chunk):
        out[i:i + chunk] = x[i:i + chunk] * 2
    if chunk == 512:
        out[0] += 1.0


def reference(x, out, n, **_):
    return x * 2


def tuned(store: str, **options):
    options.setdefault("budget", 8)
    return flysearch.autotune(space=SPACE, key=["n"], store=store, reference=reference, outputs=["out"],
                              **options)(kernel)


def calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


if __name__ == "__main__":  # python _fake.py STORE LOG N PAUSE: one process meeting key N
    store, log, n, pause = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    k = tuned(store)
    x, out = np.arange(float(n)), np.empty(n)
    k(x, out, n, log=log, pause=pause)
    print(json.dumps(k.best_config(n=n)))
