"""Features of (config, problem, arch) for the cost model.

Every feature is a named float; a table that lacks one leaves it NaN (the gradient-boosted models
handle missing values natively), so one model can train on tables of different kernels.
:func:`feature_columns` computes them column by column for many configs of one problem at once (a
sampler scores thousands of candidates before its first suggestion); :func:`config_features` is
one config's, as a dict.

* **config**: each parameter; positive numbers as log2 (a power-of-two tile becomes its log2
  ordinal), bools as 0/1, strings one-hot.
* **problem**: log2 of M, N, K for a GEMM, of each ``problem_size`` (a Kernel Tuner cache), or of
  each named size otherwise (an autotuned kernel's key values, e.g. ``n_cols``).
* **arch**: compute units, LDS KiB per CU, wave size, vendor.
* **GEMM analytics** (when the space names tiles; names are matched through :data:`GEMM_ROLES`):
  output tiles, blocks launched (tiles x split-K), waves over the CUs and wave-quantization
  efficiency, K iterations per tile, split-K work per block, arithmetic intensity per tile, LDS
  bytes, an occupancy estimate (blocks per CU by LDS and by threads) and the waves and wave
  efficiency of whole resident blocks (:data:`OCCUPANCY_WAVE_FEATURES`), tile padding waste in M and N,
  and a roofline-style pair: the tiled algorithm's memory traffic (A re-read per tile column, B
  per tile row, fp32 partials under split-K) and the flops on the critical path (whole waves of
  blocks times the flops of one block), also per CU; split-K's fixed cost against the problem's
  compulsory traffic (``g_split_fixed``: 0 without split-K, else ``1 / log2(bytes)``).
* **thread blocks** (Kernel Tuner's ``block_size_{x,y,z}`` and ``tile_size_{x,y,z}``): threads per
  block, outputs per thread, block tile per axis, blocks over ``problem_size``, grid padding,
  threads per wave and wave alignment, and a power-of-two flag per integer parameter.
* **compile-time resources** recorded in a table row's ``extra`` (``vgpr``, ``agpr``, ``sgpr``,
  ``lds_bytes``, ``spills``, ``occupancy``).

Example:
    >>> from flysearch.space import get_arch
    >>> from flysearch.space import Shape
    >>> f = config_features({"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64, "SPLIT_K": 4},
    ...                     {"M": 1, "N": 4096, "K": 4096}, get_arch("sm_90"))
    >>> f["g_tiles"], f["g_blocks"], f["g_k_iters"]
    (64.0, 256.0, 16.0)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from flysearch.space import DTYPE_BYTES

if TYPE_CHECKING:
    from flysearch.space import ArchProfile

__all__ = ["GEMM_ROLES", "OCCUPANCY_WAVE_FEATURES", "RESOURCE_FIELDS", "Columns", "columns_matrix",
           "config_features", "feature_columns", "gemm_roles"]

GEMM_ROLES: dict[str, tuple[str, ...]] = {
    "tile_m": ("BLOCK_M", "BLOCK_SIZE_M", "TILE_M", "tile_m"),
    "tile_n": ("BLOCK_N", "BLOCK_SIZE_N", "TILE_N", "tile_n"),
    "tile_k": ("BLOCK_K", "BLOCK_SIZE_K", "TILE_K", "tile_k"),
    "split_k": ("SPLIT_K", "split_k"),
    "stages": ("num_stages", "stages", "STAGES"),
    "warps": ("num_warps",),
}
_WARP_PRODUCTS = (("WARPS_M", "WARPS_N"), ("block_m_warp", "block_n_warp", "block_k_warp"))
RESOURCE_FIELDS = ("vgpr", "agpr", "sgpr", "lds_bytes", "spills", "occupancy")
OCCUPANCY_WAVE_FEATURES = ("g_occ_waves", "g_occ_wave_eff")
"""Waves over the CUs counted in whole resident blocks (the occupancy estimate, floored) instead of
one block per CU. They order some shapes better and mislead on others, so a prior averages a booster
that sees them with one that does not (:func:`flysearch.costmodel.fit_prior`)."""


Columns = dict[str, np.ndarray]
"""Feature name -> one float per config (NaN where the feature does not apply to that config)."""

_MISSING = object()


def _log2_scalar(value: float) -> float:
    return math.log2(value) if value > 0 else -1.0


def _log2(values: np.ndarray) -> np.ndarray:
    """Elementwise log2 of positive values, -1 elsewhere (NaN stays NaN). Computed with
    :func:`math.log2` on the distinct values, so a feature is the same float however many configs
    it is computed for."""
    values = np.asarray(values, dtype=float)
    distinct, inverse = np.unique(values, return_inverse=True)
    logs = np.array([v if math.isnan(v) else _log2_scalar(v) for v in distinct])
    return logs[inverse].reshape(values.shape) if distinct.size else values.copy()


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float)


def _plain_number(value: Any) -> bool:
    return _is_number(value) and not isinstance(value, bool)


def _numeric(params: Sequence[Mapping[str, Any]], name: str) -> np.ndarray:
    """Parameter *name* of every config as a float (bools as 0/1), NaN where it is absent or not
    a number."""
    return np.array([float(v) if _is_number(v := p.get(name)) else math.nan for p in params])


def _param_columns(params: Sequence[Mapping[str, Any]]) -> Columns:
    out: Columns = {}
    n = len(params)
    for name in sorted(set().union(*params)):
        values = [p.get(name, _MISSING) for p in params]
        if set(map(type, values)) <= {int, float}:
            out[f"p_{name}"] = _log2(np.array(values, dtype=float))
            continue
        number = np.full(n, math.nan)
        for i, value in enumerate(values):
            if value is _MISSING:
                continue
            if isinstance(value, bool):
                number[i] = float(value)
            elif _is_number(value):
                number[i] = _log2_scalar(value)
            else:
                out.setdefault(f"p_{name}={value}", np.full(n, math.nan))[i] = 1.0
        if not np.isnan(number).all():
            out[f"p_{name}"] = number
    return out


def _problem_features(problem: Mapping[str, Any]) -> dict[str, float]:
    if all(k in problem for k in ("M", "N", "K")):
        return {f"s_log2_{k}": _log2_scalar(problem[k]) for k in ("M", "N", "K")}
    if "problem_size" in problem:
        sizes = problem.get("problem_size") or []
        return {f"s_log2_size{i}": _log2_scalar(v) for i, v in enumerate(sizes) if _is_number(v)}
    # an autotuned kernel's key values, by name
    return {f"s_log2_{name}": _log2_scalar(v) for name, v in sorted(problem.items()) if _plain_number(v)}


def _arch_features(arch: ArchProfile | None) -> dict[str, float]:
    if arch is None:
        return {}
    return {"a_cus": float(arch.compute_units), "a_lds_kib": arch.lds_bytes / 1024.0,
            "a_wave": float(arch.wave_size), "a_amd": float(arch.vendor == "amd")}


def gemm_roles(params: Mapping[str, Any]) -> dict[str, float]:
    """The GEMM roles (tile_m, tile_n, tile_k, split_k, stages, warps) that *params* fill."""
    return {role: float(v[0]) for role, v in _role_columns([params]).items() if not math.isnan(v[0])}


def _role_columns(params: Sequence[Mapping[str, Any]]) -> Columns:
    """Each GEMM role's value per config: the first of its names that the config gives as a number
    (NaN: none); ``warps`` falls back to the product of a warp layout's parameters."""
    given = set().union(*params)
    roles: Columns = {}
    for role, names in GEMM_ROLES.items():
        value = np.full(len(params), math.nan)
        for name in names:
            if name in given:
                value = np.where(np.isnan(value), _numeric(params, name), value)
        roles[role] = value
    for names in _WARP_PRODUCTS:
        if not given.issuperset(names):
            continue
        given_all = np.array([all(n in p for n in names) for p in params])
        product = np.prod([_numeric(params, n) for n in names], axis=0)
        roles["warps"] = np.where(np.isnan(roles["warps"]) & given_all, product, roles["warps"])
    return roles


def _gemm_columns(roles: Columns, problem: Mapping[str, Any], arch: ArchProfile | None) -> Columns:
    if not all(k in problem for k in "MNK"):
        return {}
    tm, tn = roles["tile_m"], roles["tile_n"]
    applies = ~(np.isnan(tm) | np.isnan(tn))
    if not applies.any():
        return {}
    m, n, k = (float(problem[d]) for d in "MNK")
    tk = np.where(np.isnan(roles["tile_k"]), 32.0, roles["tile_k"])
    split = np.where(np.isnan(roles["split_k"]), 1.0, roles["split_k"])
    stages = np.where(np.isnan(roles["stages"]), 1.0, roles["stages"])
    warps = np.where(np.isnan(roles["warps"]), 4.0, roles["warps"])
    elem = DTYPE_BYTES.get(str(problem.get("dtype", "bf16")), 2)
    tiles_m, tiles_n = np.ceil(m / tm), np.ceil(n / tn)
    tiles = tiles_m * tiles_n
    blocks = tiles * split
    out = {
        "g_tiles": tiles, "g_blocks": blocks, "g_log2_blocks": _log2(blocks),
        "g_k_iters": np.ceil(k / split / tk),
        "g_k_per_block": k / split,
        "g_intensity": 2 * tm * tn * tk / ((tm + tn) * tk * elem),
        "g_pad_m": 1.0 - m / (tiles_m * tm),
        "g_pad_n": 1.0 - n / (tiles_n * tn),
        "g_lds_kib": stages * (tm + tn) * tk * elem / 1024.0,
    }
    # Traffic of the tiled algorithm: A is read once per column of tiles, B once per row of tiles,
    # C written (fp32 partials under split-K); the critical path is whole waves of blocks.
    traffic = m * k * elem * tiles_n + n * k * elem * tiles_m + m * n * np.where(split > 1, 4 * split, elem)
    flops_per_block = 2 * tm * tn * k / split
    out.update({"g_log2_traffic": _log2(traffic), "g_log2_block_flops": _log2(flops_per_block),
                "g_log2_useful_frac": _log2(m * n / (tiles * tm * tn))})
    # Split-K's fixed cost (a zeroed fp32 workspace, atomics, a final cast: more launches) against
    # the problem's compulsory traffic: a small problem cannot amortize it (1x1536x1536 on the H200:
    # every split-K config is more than 1.2x the SPLIT_K=1 optimum, though its few output tiles are
    # what favours split-K on decode shapes with a long K).
    compulsory = (m * k + n * k + m * n) * elem
    out["g_split_fixed"] = np.where(split > 1, 1.0 / math.log2(compulsory), 0.0)
    if arch is not None:
        cus = float(arch.compute_units)
        out["g_log2_path_flops"] = _log2(np.ceil(blocks / cus) * flops_per_block)
        out["g_log2_traffic_per_cu"] = _log2(traffic / np.minimum(blocks, cus))
        waves = blocks / cus
        out["g_waves"] = waves
        out["g_wave_eff"] = blocks / (np.ceil(waves) * cus)
        by_lds = arch.lds_bytes / 1024.0 / np.maximum(out["g_lds_kib"], 1e-9)
        by_threads = 2048.0 / (warps * arch.wave_size)
        out["g_blocks_per_cu"] = np.minimum(np.minimum(by_lds, by_threads), 32.0)
        # Waves of whole resident blocks: a block that fits 3 times instead of 4 on a CU can turn
        # one wave of tiles into two (64x28672x4096 on the H200: 1.00x with 3 stages, 1.25x with 4).
        slots = cus * np.maximum(np.floor(out["g_blocks_per_cu"]), 1.0)
        out["g_occ_waves"] = occ_waves = blocks / slots
        out["g_occ_wave_eff"] = blocks / (np.ceil(occ_waves) * slots)
    return {name: np.where(applies, col, math.nan) for name, col in out.items()}


_AXES = ("x", "y", "z")


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _thread_block_columns(params: Sequence[Mapping[str, Any]], problem: Mapping[str, Any],
                          arch: ArchProfile | None) -> Columns:
    """Kernel Tuner's conventions: ``block_size_{x,y,z}`` threads and ``tile_size_{x,y,z}`` outputs
    per thread; the grid divides ``problem_size`` by their product on each axis. Also whether each
    integer parameter is a power of two."""
    axes = [f"block_size_{a}" for a in _AXES] + [f"tile_size_{a}" for a in _AXES]
    given = set().union(*params)
    if given.isdisjoint(axes[:3]):
        return {}
    applies = np.array([any(f"block_size_{a}" in p for a in _AXES)
                        and all(_positive_int(p.get(name, 1)) for name in axes) for p in params])
    if not applies.any():
        return {}
    n = len(params)
    per_axis = np.array([[p.get(name, 1) if ok else 1 for name in axes]
                         for p, ok in zip(params, applies, strict=True)], dtype=float).reshape(n, 6)
    block, tile = per_axis[:, :3], per_axis[:, 3:]
    threads = block.prod(axis=1)
    # Powers of two: on some GPUs (gfx90a here) a block width that is not one runs 10x slower.
    out: Columns = {}
    for name in sorted(given):
        pow2 = np.full(n, math.nan)
        for i, p in enumerate(params):
            value = p.get(name, _MISSING)
            if applies[i] and _positive_int(value):
                pow2[i] = float(value & (value - 1) == 0)
        if not np.isnan(pow2).all():
            out[f"q_{name}_pow2"] = pow2
    out |= {"t_log2_threads": _log2(threads), "t_log2_outputs_per_thread": _log2(tile.prod(axis=1))}
    for j, a in enumerate(_AXES):
        out[f"t_log2_block_tile_{a}"] = _log2(block[:, j] * tile[:, j])
    sizes = [float(v) for v in (problem.get("problem_size") or []) if _is_number(v)]
    if sizes:
        axes_used = len(sizes[:3])  # sizes beyond z have no block axis
        span = block[:, :axes_used] * tile[:, :axes_used]
        grid = np.ceil(np.array(sizes[:3]) / span)
        out["t_log2_blocks"] = _log2(grid.prod(axis=1))
        out["t_pad"] = 1.0 - math.prod(sizes) / (grid * span).prod(axis=1)
    if arch is not None:
        out["t_threads_per_wave"] = threads / arch.wave_size
        out["t_wave_aligned"] = (threads % arch.wave_size == 0).astype(float)
        out["t_x_wave_aligned"] = (block[:, 0] % arch.wave_size == 0).astype(float)
    return {name: np.where(applies, col, math.nan) for name, col in out.items()}


def feature_columns(
    params: Sequence[Mapping[str, Any]], problem: Mapping[str, Any], arch: ArchProfile | None,
    resources: Sequence[Mapping[str, Any] | None] | None = None,
) -> Columns:
    """All features of many configs of one (*problem*, *arch*), computed column by column: a
    feature no config has is left out, and a config that lacks one has NaN in its column.
    *resources*, when given, holds each config's compile-time resources (or ``None``)."""
    n = len(params)
    if resources is not None and len(resources) != n:
        raise ValueError(f"{len(resources)} resource records for {n} configs.")
    out = _param_columns(params)
    constants = _problem_features(problem) | _arch_features(arch)
    out.update({name: np.full(n, value) for name, value in constants.items()})
    out.update(_gemm_columns(_role_columns(params), problem, arch))
    out.update(_thread_block_columns(params, problem, arch))
    if resources is not None:
        for name in RESOURCE_FIELDS:
            values = [(r or {}).get(name) for r in resources]
            if any(_plain_number(v) for v in values):
                out[f"r_{name}"] = np.array([float(v) if _plain_number(v) else math.nan for v in values])
    return out


def config_features(
    params: Mapping[str, Any], problem: Mapping[str, Any], arch: ArchProfile | None,
    resources: Mapping[str, Any] | None = None,
) -> dict[str, float]:
    """All features of one config (see the module docstring); :func:`feature_columns` computes
    them for many configs at once."""
    columns = feature_columns([params], problem, arch, None if resources is None else [resources])
    return {name: float(col[0]) for name, col in columns.items() if not math.isnan(col[0])}


def columns_matrix(columns: Columns, schema: list[str], n: int) -> np.ndarray:
    """Stack the *n*-row *columns* into a float matrix in *schema* order; absent features are NaN."""
    matrix = np.full((n, len(schema)), np.nan)
    for j, name in enumerate(schema):
        col = columns.get(name)
        if col is not None:
            matrix[:, j] = col
    return matrix
