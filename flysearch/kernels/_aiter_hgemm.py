"""The aiter FlyDSL split-K HGEMM space (gfx942, gfx950) and the rules aiter enforces on it.

aiter races a catalogue of FlyDSL bf16 HGEMM kernels against its other backends. Each kernel is one
assignment of twelve knobs: the block tile (``tile_m x tile_n x tile_k``), the software-pipeline
depth (``stages``), the K split (``split_k``), the waves per block along M, N and K
(``block_*_warp``) and four code-generation flags. The domains below are the ones aiter's current
catalogue enumerates; the constraints are the checks its catalogue, its tuner and its compile path
apply (each constraint's ``doc`` names the aiter source it restates). Numbers that belong to the
target (LDS per block, wave size) come from :mod:`flysearch.space`.

Example:
    >>> from flysearch.space import get_arch
    >>> from flysearch.kernels import aiter_hgemm_space
    >>> from flysearch.space import Shape
    >>> space = aiter_hgemm_space()
    >>> space.size
    353808
    >>> config = space.config(tile_m=16, tile_n=64, tile_k=128, stages=5, split_k=2,
    ...                       block_m_warp=1, block_n_warp=2, block_k_warp=1, async_copy=True,
    ...                       b_to_lds=True, b_preshuffle=False, c_to_lds=False)
    >>> space.reject_reason(config, Shape(1, 6144, 2048), get_arch("gfx950")) is None
    True
    >>> space.reject_reason(config, Shape(1, 6144, 2048), get_arch("gfx942"))
    'async_copy_fixed_by_arch'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flysearch.kernels._registry import register_space
from flysearch.space import Config, Constraint, Param, Space

if TYPE_CHECKING:
    from flysearch.space import ArchProfile, Shape

__all__ = [
    "LARGE_GEMM_CONFIG",
    "PARAM_NAMES",
    "SPACE_NAME",
    "aiter_hgemm_space",
    "async_copy_for_arch",
    "lds_estimate_bytes",
]

SPACE_NAME = "aiter_flydsl_hgemm"

PARAM_NAMES: tuple[str, ...] = (
    "tile_m", "tile_n", "tile_k", "stages", "split_k", "block_m_warp", "block_n_warp",
    "block_k_warp", "async_copy", "b_to_lds", "b_preshuffle", "c_to_lds",
)

# NOTE(aiter gemm_kernels.py, HGEMM_*_OPTIONS): the catalogue's domains. The catalogue sets
# b_to_lds=True for every variant, and its name builder refuses b_preshuffle=True and
# c_to_lds=True for the generic HGEMM family, so those flags have one value here.
_DOMAINS: dict[str, tuple[int | bool, ...]] = {
    "tile_m": (16, 32, 48, 64, 80, 96, 128, 256),
    "tile_n": (64, 128, 256),
    "tile_k": (64, 128, 256),
    "stages": (2, 3, 4, 5, 6, 7, 8),
    "split_k": tuple(range(1, 14)),
    "block_m_warp": (1, 2, 4),
    "block_n_warp": (1, 2, 4),
    "block_k_warp": (1, 2, 4),
    "async_copy": (False, True),
    "b_to_lds": (True,),
    "b_preshuffle": (False,),
    "c_to_lds": (False,),
}

# NOTE(aiter gemm_kernels.py, HGEMM_WARP_SHAPE_OPTIONS): wm * wn * wk <= 16 waves per block.
_MAX_WAVES_PER_BLOCK = 16
# NOTE(aiter gemm_kernels.py, _validate_hgemm_tiling): the MFMA atom each wave owns is 16x16.
_WARP_ATOM = 16
# NOTE(aiter gemm_kernels.py, _validate_hgemm_tiling): global loads move 8 elements per thread.
_LDG_VEC = 8
# NOTE(aiter gemm_kernels.py, _estimate_hgemm_lds_bytes): the kernel takes bf16/fp16 only.
_ELEM_BYTES = 2
_SIXTEEN_BIT = ("bf16", "fp16")
# NOTE(aiter gemm_a16w16_tune.py, _get_flydsl_tasks): at most 128 output tiles under split-K
# (the tuner's cap; the launcher's semaphore holds 256, SPLIT_K_SEMAPHORE_MAX_LEN).
_MAX_SPLIT_K_TILES = 128
# NOTE(aiter gemm_a16w16_tune.py, _get_flydsl_tasks): min_tile_m of the catalogue.
_MIN_TILE_M = 16
# NOTE(aiter gemm_kernels.py, selection_filter): when M, N and K are all >= 4096 the compile path
# accepts this one config and no other.
_LARGE_DIM = 4096
LARGE_GEMM_CONFIG: dict[str, int] = {
    "tile_m": 256, "tile_n": 256, "tile_k": 64, "stages": 2, "split_k": 1,
    "block_m_warp": 2, "block_n_warp": 4, "block_k_warp": 1,
}


def async_copy_for_arch(arch: ArchProfile) -> bool:
    """The one ``async_copy`` value aiter compiles for *arch*: off on gfx942, on elsewhere.

    Example:
        >>> from flysearch.space import get_arch
        >>> async_copy_for_arch(get_arch("gfx942")), async_copy_for_arch(get_arch("gfx950"))
        (False, True)
    """
    # NOTE(aiter gemm_kernels.py, KERNEL_ASYNC_COPY = get_rocm_arch() != "gfx942").
    return arch.name != "gfx942"


def lds_estimate_bytes(config: Config) -> int:
    """aiter's LDS estimate: the larger of the A/B pipeline buffers and the C reduction buffer.

    Example:
        >>> from flysearch.space import Config
        >>> lds_estimate_bytes(Config.from_dict({"tile_m": 16, "tile_n": 64, "tile_k": 128,
        ...     "stages": 5, "block_k_warp": 1, "b_to_lds": True}))
        102400
    """
    c = config.as_dict()
    stages, tm, tn, tk = int(c["stages"]), int(c["tile_m"]), int(c["tile_n"]), int(c["tile_k"])
    pipeline = stages * tm * tk * _ELEM_BYTES
    if c["b_to_lds"]:
        pipeline += stages * tn * tk * _ELEM_BYTES
    c_reduce = int(c["block_k_warp"]) * tm * tn * _ELEM_BYTES
    return max(pipeline, c_reduce)


def _waves(c: Config) -> int:
    return int(c["block_m_warp"]) * int(c["block_n_warp"]) * int(c["block_k_warp"])


def _async_copy_fixed(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return arch is None or c["async_copy"] == async_copy_for_arch(arch)


def _vector_loads_divide(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    if arch is None:
        return True
    per_block = _LDG_VEC * _waves(c) * arch.wave_size
    tm, tn, tk = int(c["tile_m"]), int(c["tile_n"]), int(c["tile_k"])
    return all(area % per_block == 0 for area in (tm * tk, tn * tk, tm * tn))


def _lds_fits(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return arch is None or lds_estimate_bytes(c) <= arch.max_lds_per_block


def _k_slice(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    if shape is None:
        return True
    split_k, tile_k = int(c["split_k"]), int(c["tile_k"])
    if shape.K % split_k:
        return False
    k_slice = shape.K // split_k
    return k_slice >= tile_k and k_slice % tile_k == 0


def _split_k_tiles(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    if shape is None or c["split_k"] == 1:
        return True
    tm, tn = int(c["tile_m"]), int(c["tile_n"])
    return -(-shape.M // tm) * (shape.N // tn) <= _MAX_SPLIT_K_TILES


def _large_gemm(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    if shape is None or min(shape.M, shape.N, shape.K) < _LARGE_DIM:
        return True
    return all(c[name] == value for name, value in LARGE_GEMM_CONFIG.items())


_SRC = "aiter/ops/flydsl/gemm_kernels.py"
_TUNER = "csrc/gemm_a16w16/gemm_a16w16_tune.py"

_CONSTRAINTS: tuple[Constraint, ...] = (
    Constraint(
        "async_copy_fixed_by_arch", _async_copy_fixed,
        doc=f"async_copy is off on gfx942 and on elsewhere ({_SRC}: KERNEL_ASYNC_COPY, "
        "_normalize_supported_kernel_metadata)",
    ),
    Constraint(
        "waves_per_block_le_16", lambda c, s, a: _waves(c) <= _MAX_WAVES_PER_BLOCK,
        doc=f"block_m_warp * block_n_warp * block_k_warp <= 16 ({_SRC}: HGEMM_WARP_SHAPE_OPTIONS)",
    ),
    Constraint(
        "tile_m_divisible_by_m_warps",
        lambda c, s, a: int(c["tile_m"]) % (int(c["block_m_warp"]) * _WARP_ATOM) == 0,
        doc=f"tile_m % (block_m_warp * 16) == 0 ({_SRC}: _validate_hgemm_tiling)",
    ),
    Constraint(
        "tile_n_divisible_by_n_warps",
        lambda c, s, a: int(c["tile_n"]) % (int(c["block_n_warp"]) * _WARP_ATOM) == 0,
        doc=f"tile_n % (block_n_warp * 16) == 0 ({_SRC}: _validate_hgemm_tiling)",
    ),
    Constraint(
        "vector_loads_divide_tiles", _vector_loads_divide,
        doc="tile_m*tile_k, tile_n*tile_k and tile_m*tile_n are multiples of 8 elements x the "
        f"block's threads (waves x wave size), so every thread moves whole vectors ({_SRC}: "
        "_validate_hgemm_tiling, ldg_vec_size)",
    ),
    Constraint(
        "lds_fits", _lds_fits,
        doc="max(stages*(tile_m+tile_n)*tile_k, block_k_warp*tile_m*tile_n) * 2 bytes <= the "
        f"arch's LDS per block ({_SRC}: _estimate_hgemm_lds_bytes, selection_filter)",
    ),
    Constraint(
        "input_dtype_16bit", lambda c, s, a: s is None or s.dtype in _SIXTEEN_BIT,
        doc=f"the kernel takes bf16 or fp16 inputs only ({_SRC}: _to_kernel_dtype; the tuner "
        f"races FlyDSL for bf16 only, {_TUNER}: _get_flydsl_tasks)",
    ),
    Constraint(
        "tile_n_divides_n",
        lambda c, s, a: s is None or (s.N >= int(c["tile_n"]) and s.N % int(c["tile_n"]) == 0),
        doc=f"N >= tile_n and N % tile_n == 0: no N tail ({_SRC}: _validate_hgemm_tiling)",
    ),
    Constraint(
        "split_k_divides_k", _k_slice,
        doc="K % split_k == 0 and the K slice K/split_k is a positive multiple of tile_k "
        f"({_SRC}: _validate_hgemm_tiling, _hgemm_split_k_options)",
    ),
    Constraint(
        "tile_m_le_max_m_16", lambda c, s, a: s is None or int(c["tile_m"]) <= max(s.M, _MIN_TILE_M),
        doc=f"tile_m <= max(M, 16): the tuner skips tiles taller than the problem ({_TUNER}: "
        "_get_flydsl_tasks; looser: the catalogue's tile_m <= max(96, 2M))",
    ),
    Constraint(
        "split_k_tiles_le_128", _split_k_tiles,
        doc="with split_k > 1, ceil(M/tile_m) * (N/tile_n) <= 128 output tiles, one semaphore "
        f"counter each ({_TUNER}: _get_flydsl_tasks; the launcher's hard limit is 256, {_SRC}: "
        "_check_split_k_semaphore_capacity)",
    ),
    Constraint(
        "large_gemm_single_config", _large_gemm,
        doc="when M, N and K are all >= 4096 only 256x256x64, 2 stages, split_k 1, warps 2x4x1 "
        f"compiles ({_SRC}: selection_filter)",
    ),
)

def aiter_hgemm_space() -> Space:
    """Build the aiter FlyDSL split-K HGEMM space with its twelve constraints.

    Example:
        >>> aiter_hgemm_space().name
        'aiter_flydsl_hgemm'
    """
    params = [Param(name, _DOMAINS[name]) for name in PARAM_NAMES]
    return Space(SPACE_NAME, params, _CONSTRAINTS)


register_space(SPACE_NAME, aiter_hgemm_space)
