"""Features of (config, problem, arch) for the cost model.

Every feature is a named float; a table that lacks one leaves it NaN (the gradient-boosted models
handle missing values natively), so one model can train on tables of different kernels.

* **config**: each parameter; positive numbers as log2 (a power-of-two tile becomes its log2
  ordinal), bools as 0/1, strings one-hot.
* **problem**: log2 of M, N, K for a GEMM, of each problem size otherwise.
* **arch**: compute units, LDS KiB per CU, wave size, vendor.
* **GEMM analytics** (when the space names tiles; names are matched through :data:`GEMM_ROLES`):
  output tiles, blocks launched (tiles x split-K), waves over the CUs and wave-quantization
  efficiency, K iterations per tile, split-K work per block, arithmetic intensity per tile, LDS
  bytes, an occupancy estimate (blocks per CU by LDS and by threads), tile padding waste in M and N,
  and a roofline-style pair: the tiled algorithm's memory traffic (A re-read per tile column, B
  per tile row, fp32 partials under split-K) and the flops on the critical path (whole waves of
  blocks times the flops of one block), also per CU.
* **thread blocks** (Kernel Tuner's ``block_size_{x,y,z}`` and ``tile_size_{x,y,z}``): threads per
  block, outputs per thread, block tile per axis, blocks over ``problem_size``, grid padding,
  threads per wave and wave alignment, and a power-of-two flag per integer parameter.
* **compile-time resources** recorded in a table row's ``extra`` (``vgpr``, ``agpr``, ``sgpr``,
  ``lds_bytes``, ``spills``, ``occupancy``).

Example:
    >>> from flysearch.arch import get_arch
    >>> from flysearch.shapes import Shape
    >>> f = config_features({"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64, "SPLIT_K": 4},
    ...                     {"M": 1, "N": 4096, "K": 4096}, get_arch("sm_90"))
    >>> f["g_tiles"], f["g_blocks"], f["g_k_iters"]
    (64.0, 256.0, 16.0)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from flysearch.shapes import DTYPE_BYTES

if TYPE_CHECKING:
    from flysearch.arch import ArchProfile

__all__ = ["GEMM_ROLES", "RESOURCE_FIELDS", "config_features", "feature_matrix", "gemm_roles"]

GEMM_ROLES: dict[str, tuple[str, ...]] = {
    "tile_m": ("BLOCK_M", "BLOCK_SIZE_M", "tile_m"),
    "tile_n": ("BLOCK_N", "BLOCK_SIZE_N", "tile_n"),
    "tile_k": ("BLOCK_K", "BLOCK_SIZE_K", "tile_k"),
    "split_k": ("SPLIT_K", "split_k"),
    "stages": ("num_stages", "stages", "STAGES"),
    "warps": ("num_warps",),
}
_WARP_PRODUCTS = (("WARPS_M", "WARPS_N"), ("block_m_warp", "block_n_warp", "block_k_warp"))
RESOURCE_FIELDS = ("vgpr", "agpr", "sgpr", "lds_bytes", "spills", "occupancy")


def _log2(value: float) -> float:
    return math.log2(value) if value > 0 else -1.0


def gemm_roles(params: Mapping[str, Any]) -> dict[str, float]:
    """The GEMM roles (tile_m, tile_n, tile_k, split_k, stages, warps) that *params* fill."""
    roles: dict[str, float] = {}
    for role, names in GEMM_ROLES.items():
        for name in names:
            if name in params and isinstance(params[name], int | float):
                roles[role] = float(params[name])
                break
    for names in _WARP_PRODUCTS:
        if "warps" not in roles and all(n in params for n in names):
            roles["warps"] = float(math.prod(params[n] for n in names))
    return roles


def _param_features(params: Mapping[str, Any]) -> dict[str, float]:
    out = {}
    for name, value in params.items():
        if isinstance(value, bool):
            out[f"p_{name}"] = float(value)
        elif isinstance(value, int | float):
            out[f"p_{name}"] = _log2(float(value))
        else:
            out[f"p_{name}={value}"] = 1.0
    return out


def _problem_features(problem: Mapping[str, Any]) -> dict[str, float]:
    if all(k in problem for k in ("M", "N", "K")):
        return {f"s_log2_{k}": _log2(float(problem[k])) for k in ("M", "N", "K")}
    sizes = problem.get("problem_size") or []
    return {f"s_log2_size{i}": _log2(float(v)) for i, v in enumerate(sizes) if isinstance(v, int | float)}


def _arch_features(arch: ArchProfile | None) -> dict[str, float]:
    if arch is None:
        return {}
    return {"a_cus": float(arch.compute_units), "a_lds_kib": arch.lds_bytes / 1024.0,
            "a_wave": float(arch.wave_size), "a_amd": float(arch.vendor == "amd")}


def _gemm_features(roles: Mapping[str, float], problem: Mapping[str, Any],
                   arch: ArchProfile | None) -> dict[str, float]:
    if not all(k in roles for k in ("tile_m", "tile_n")) or not all(k in problem for k in "MNK"):
        return {}
    m, n, k = (float(problem[d]) for d in "MNK")
    tm, tn = roles["tile_m"], roles["tile_n"]
    tk = roles.get("tile_k", 32.0)
    split = roles.get("split_k", 1.0)
    elem = DTYPE_BYTES.get(str(problem.get("dtype", "bf16")), 2)
    tiles = math.ceil(m / tm) * math.ceil(n / tn)
    blocks = tiles * split
    out = {
        "g_tiles": float(tiles), "g_blocks": float(blocks), "g_log2_blocks": _log2(blocks),
        "g_k_iters": float(math.ceil(k / split / tk)),
        "g_k_per_block": k / split,
        "g_intensity": 2 * tm * tn * tk / ((tm + tn) * tk * elem),
        "g_pad_m": 1.0 - m / (math.ceil(m / tm) * tm),
        "g_pad_n": 1.0 - n / (math.ceil(n / tn) * tn),
        "g_lds_kib": roles.get("stages", 1.0) * (tm + tn) * tk * elem / 1024.0,
    }
    # Traffic of the tiled algorithm: A is read once per column of tiles, B once per row of tiles,
    # C written (fp32 partials under split-K); the critical path is whole waves of blocks.
    traffic = (m * k * elem * math.ceil(n / tn) + n * k * elem * math.ceil(m / tm)
               + m * n * (4 * split if split > 1 else elem))
    flops_per_block = 2 * tm * tn * k / split
    out.update({"g_log2_traffic": _log2(traffic), "g_log2_block_flops": _log2(flops_per_block),
                "g_log2_useful_frac": _log2(m * n / (tiles * tm * tn))})
    if arch is not None:
        cus = float(arch.compute_units)
        out["g_log2_path_flops"] = _log2(math.ceil(blocks / cus) * flops_per_block)
        out["g_log2_traffic_per_cu"] = _log2(traffic / min(blocks, cus))
        waves = blocks / cus
        out["g_waves"] = waves
        out["g_wave_eff"] = blocks / (math.ceil(waves) * cus)
        by_lds = arch.lds_bytes / 1024.0 / max(out["g_lds_kib"], 1e-9)
        threads = roles.get("warps", 4.0) * arch.wave_size
        by_threads = 2048.0 / threads
        out["g_blocks_per_cu"] = min(by_lds, by_threads, 32.0)
    return out


_AXES = ("x", "y", "z")


def _thread_block_features(params: Mapping[str, Any], problem: Mapping[str, Any],
                           arch: ArchProfile | None) -> dict[str, float]:
    """Kernel Tuner's conventions: ``block_size_{x,y,z}`` threads and ``tile_size_{x,y,z}`` outputs
    per thread; the grid divides ``problem_size`` by their product on each axis. Also whether each
    integer parameter is a power of two."""
    block = [params.get(f"block_size_{a}", 1) for a in _AXES]
    tile = [params.get(f"tile_size_{a}", 1) for a in _AXES]
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in block + tile):
        return {}
    if not any(f"block_size_{a}" in params for a in _AXES):
        return {}
    threads = math.prod(block)
    # Powers of two: on some GPUs (gfx90a here) a block width that is not one runs 10x slower.
    out = {f"q_{name}_pow2": float(value & (value - 1) == 0) for name, value in params.items()
           if isinstance(value, int) and not isinstance(value, bool) and value > 0}
    out |= {"t_log2_threads": _log2(threads), "t_log2_outputs_per_thread": _log2(math.prod(tile))}
    for a, b, t in zip(_AXES, block, tile, strict=True):
        out[f"t_log2_block_tile_{a}"] = _log2(b * t)
    sizes = [v for v in (problem.get("problem_size") or []) if isinstance(v, int | float)]
    if sizes:
        blocks = math.prod(math.ceil(s / (b * t)) for s, b, t in zip(sizes, block, tile, strict=False))
        out["t_log2_blocks"] = _log2(blocks)
        out["t_pad"] = 1.0 - math.prod(sizes) / math.prod(
            math.ceil(s / (b * t)) * b * t for s, b, t in zip(sizes, block, tile, strict=False))
    if arch is not None:
        out["t_threads_per_wave"] = threads / arch.wave_size
        out["t_wave_aligned"] = float(threads % arch.wave_size == 0)
        out["t_x_wave_aligned"] = float(block[0] % arch.wave_size == 0)
    return out


def config_features(
    params: Mapping[str, Any], problem: Mapping[str, Any], arch: ArchProfile | None,
    resources: Mapping[str, Any] | None = None,
) -> dict[str, float]:
    """All features of one config (see the module docstring)."""
    out = _param_features(params)
    out.update(_problem_features(problem))
    out.update(_arch_features(arch))
    out.update(_gemm_features(gemm_roles(params), problem, arch))
    out.update(_thread_block_features(params, problem, arch))
    for name in RESOURCE_FIELDS:
        value = (resources or {}).get(name)
        if isinstance(value, int | float) and not isinstance(value, bool):
            out[f"r_{name}"] = float(value)
    return out


def feature_matrix(rows: Iterable[Mapping[str, float]], schema: list[str]) -> np.ndarray:
    """Stack feature dicts into a float matrix in *schema* order; absent features are NaN."""
    rows = list(rows)
    matrix = np.full((len(rows), len(schema)), np.nan)
    index = {name: j for j, name in enumerate(schema)}
    for i, row in enumerate(rows):
        for name, value in row.items():
            j = index.get(name)
            if j is not None:
                matrix[i, j] = value
    return matrix
