"""A Triton kernel for the autotune tests, run under ``TRITON_INTERPRET=1`` on the CPU:
``python _triton_toy.py STORE`` tunes a scaled copy for two sizes and prints the stored keys."""

from __future__ import annotations

import json
import sys

import torch
import triton
import triton.language as tl

import flysearch


def _fits(config, key, arch):
    return config["BLOCK"] <= 4 * key["n"]


def _one_warp(configs, nargs):  # triton.autotune's early_config_prune, on triton.Config objects
    return [c for c in configs if c.num_warps == 1 and nargs["scale"] > 0]


@flysearch.autotune(space={"BLOCK": [16, 32, 64, 128], "num_warps": [1, 2]}, key=["n"],
                    constraints=[_fits], reference=lambda x, y, n, scale: x * scale, outputs=["y"],
                    store=sys.argv[1] if __name__ == "__main__" else None, budget=4, rounds=2,
                    finalists=2, prune_configs_by={"early_config_prune": _one_warp})
@triton.jit
def scale_kernel(x, y, n, scale, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y + offs, tl.load(x + offs, mask=mask) * scale, mask=mask)


if __name__ == "__main__":
    for n in (10, 100):
        x, y = torch.arange(n, dtype=torch.float32), torch.empty(n)
        scale_kernel[lambda meta, n=n: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n, 3.0)
        assert torch.equal(y, x * 3.0)
    print(json.dumps({t.key: [t.config, t.report["n_feasible"]] for t in scale_kernel.store.tuned()}))
