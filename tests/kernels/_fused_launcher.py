"""A launcher of the fused split-K kernel through Triton's JIT, on torch tensors: what the kernel's
tests run it with (a race launches the binary its compile workers built)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from flysearch.kernels._triton_gemm import TILE_PARAMS, gemm_operands
from flysearch.space import Config


@dataclass(frozen=True)
class FusedLaunch:
    """One launch of the fused kernel, callable with no arguments, and the buffers it keeps zero.

    Attributes:
        run: Launches the kernel once.
        workspace: The fp32 ``M x N`` workspace the splits add into.
        arrivals: One int32 counter per output tile.
    """

    run: Callable[[], None]
    workspace: Any
    arrivals: Any

    def __call__(self) -> None:
        self.run()


def gemm_launcher(a: Any, w: Any, c: Any, config: Config | dict[str, Any]) -> FusedLaunch:
    """A zero-argument launch of ``c = a @ w.T`` for *config* on CUDA tensors.

    Allocates the launcher's own zeroed fp32 workspace (``M x N``) and per-tile counters, which every
    launch leaves zero again, so the launch can be captured in a CUDA graph and replayed. Launches
    of one launcher must not overlap (one stream); a launch that fails midway leaves them dirty,
    so build a new launcher after it.

    Args:
        a: ``[M, K]`` bf16, contiguous, on a CUDA device.
        w: ``[N, K]`` bf16, contiguous (a linear layer's weight as stored).
        c: ``[M, N]`` bf16, contiguous; overwritten.
        config: A config of :func:`make_space` (num_warps and num_stages included).

    Raises:
        ValueError: on mismatched shapes or dtypes, non-contiguous tensors, or ``SPLIT_K`` < 2.
    """
    import torch

    from flysearch.kernels._triton_fused_jit import fused_splitk_gemm_kernel

    m, n, k = gemm_operands(a, w, c)
    tiles_kw = {name: int(config[name]) for name in TILE_PARAMS}
    if tiles_kw["SPLIT_K"] < 2:
        raise ValueError(f"SPLIT_K must be at least 2; got {tiles_kw['SPLIT_K']}")
    tiles = math.ceil(m / tiles_kw["BLOCK_M"]) * math.ceil(n / tiles_kw["BLOCK_N"])
    ws = torch.zeros(m, n, device=a.device, dtype=torch.float32)
    arrivals = torch.zeros(tiles, device=a.device, dtype=torch.int32)
    kernel = fused_splitk_gemm_kernel[(tiles, tiles_kw["SPLIT_K"])]
    warps, stages = int(config["num_warps"]), int(config["num_stages"])

    def launch() -> None:
        kernel(a, w, c, ws, arrivals, m, n, k, **tiles_kw, num_warps=warps, num_stages=stages)

    return FusedLaunch(launch, ws, arrivals)
