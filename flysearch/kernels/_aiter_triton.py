"""aiter's Triton bf16 GEMM on gfx942 and gfx950: its config space, its rules, and the tile
constexprs its launch passes.

The kernel is ``_gemm_a16_w16_kernel`` of ``aiter/ops/triton/_triton_kernels/gemm_a16w16.py``
(wrapper ``aiter.ops.triton.gemm_a16w16.gemm_a16w16``): ``Y = X @ W^T`` in bf16 with an fp32
accumulator; with ``NUM_KSPLIT > 1`` each split writes an fp32 partial and a second kernel sums
them. Its config is one dict per launch: the kernel's constexprs (the ``BLOCK_SIZE_*`` tiles,
``GROUP_SIZE_M``, ``NUM_KSPLIT``, ``cache_modifier`` of the weight loads) plus the options of
Triton's AMD backend (``num_warps``, ``num_stages``, ``waves_per_eu``, ``matrix_instr_nonkdim``,
``kpack``; ``HIPOptions`` in ``triton/backends/amd/compiler.py``). The space's parameters carry
aiter's key names; ``cache_modifier`` is ``""`` where aiter writes ``null`` (``""`` is ``tl.load``'s
own default, and both lower to the same load).

The space (``aiter_triton_gemm``, 480,000 configs) and its analytic rules, in the order they are
charged (numbers of the target come from :mod:`flysearch.space`'s arch profile):

=============================== ================================================================
rule                            keeps a config when
=============================== ================================================================
group_m_unused_under_split_k    ``GROUP_SIZE_M == 1`` or ``NUM_KSPLIT == 1``
kpack_fixed_by_arch             ``kpack == 1`` on gfx950 (Triton 3.6 overwrites 2 with 1 there)
mfma_tiles_block                ``matrix_instr_nonkdim`` divides ``BLOCK_SIZE_M`` and ``_N``
waves_per_eu_honored            ``waves_per_eu`` is 0 or at least ``ceil(num_warps / SIMDs)``
lds_fits                        ``max(1, num_stages - 1) * (BM + BN) * BK * 2`` bytes fit
                                ``arch.max_lds_per_block``
registers_fit                   accumulator + 5/4 x global prefetch + one MFMA's operands + 8
                                registers a lane fit the budget ``waves_per_eu`` leaves
occupancy_fits_lds              ``waves_per_eu`` no higher than the waves per SIMD that LDS lets
                                co-reside
tile_m_fits_shape               ``BLOCK_SIZE_M <= 2 * max(16, next_pow2(M))``
tile_n_fits_shape               ``BLOCK_SIZE_N <= max(16, next_pow2(N))``
split_k_tile_fits               ``BLOCK_SIZE_K <= cdiv(K, NUM_KSPLIT)`` (aiter's split size)
split_k_needs_idle_cus          ``NUM_KSPLIT == 1`` or half the split still leaves CUs idle
group_m_needs_rows              ``GROUP_SIZE_M == 1`` or ``GROUP_SIZE_M < 2 * cdiv(M, BM)``
=============================== ================================================================

Each rule's reason is in its ``doc``. Shape rules keep every config when no shape is given; arch
rules keep every config when no arch is given.

:func:`launch_constexprs` gives the tile constexprs aiter's launch passes for a config at a shape,
``BLOCK_SIZE_K`` lowered to fit one K split as aiter's ``_get_config`` lowers it (the one copy of
that clamp: the ``triton-amd-compile`` evaluator uses it, and the lab's reading of the configs aiter
ships, ``lab/benchmarks/_aiter_shipped.py``, through it).

Example:
    >>> from flysearch.kernels._aiter_triton import make_space
    >>> from flysearch.space import Config, Shape, get_arch
    >>> space = make_space()
    >>> space.size
    480000
    >>> config = space.config(BLOCK_SIZE_M=256, BLOCK_SIZE_N=256, BLOCK_SIZE_K=64, GROUP_SIZE_M=4,
    ...     NUM_KSPLIT=1, num_warps=8, num_stages=2, waves_per_eu=2, matrix_instr_nonkdim=16,
    ...     kpack=1, cache_modifier="")
    >>> space.reject_reason(config, Shape(8192, 4096, 4096), get_arch("gfx942")) is None
    True
    >>> deeper = Config.from_dict({**config.as_dict(), "num_stages": 3})
    >>> space.reject_reason(deeper, Shape(8192, 4096, 4096), get_arch("gfx942"))
    'lds_fits'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from flysearch.kernels._flydsl_config import ConfigMappingError
from flysearch.kernels._registry import register_space
from flysearch.kernels._triton_gemm import next_pow2
from flysearch.space import Config, Constraint, Param, Shape, Space

if TYPE_CHECKING:
    from flysearch.space import ArchProfile

__all__ = ["SPACE_NAME", "launch_constexprs", "lds_bytes", "make_space", "register_demand", "vgpr_budget"]

SPACE_NAME = "aiter_triton_gemm"

# NOTE(flysearch): value sets, chosen from what the hardware and Triton 3.6's AMD backend accept,
# not from aiter's shipped values (``coverage`` reports which shipped values fall outside).
PARAMS: tuple[Param, ...] = (
    # NOTE(flysearch): powers of two from 16, the smallest M and N of a bf16 MFMA (16x16 or 32x32
    # output), to 256, the largest tile whose fp32 accumulator fits 8 waves (128 registers a lane).
    # Smaller tiles still compile (Triton runs them on one MFMA with duplicated rows), but every
    # MFMA they issue computes at most half useful outputs; they are left out.
    Param("BLOCK_SIZE_M", (16, 32, 64, 128, 256)),
    Param("BLOCK_SIZE_N", (16, 32, 64, 128, 256)),
    # NOTE(flysearch): 32 is the smallest K tile that feeds a whole bf16 MFMA K step on both
    # archs (gfx950's 16x16x32) and a kpack=2 pair on gfx942 (2 x 16x16x16); aiter lowers BK to
    # 16 only when a split holds fewer than 32 K elements. 512: one more doubling needs 64 KiB per
    # LDS buffer for even the 16+16-row tile pair, all of gfx942's LDS.
    Param("BLOCK_SIZE_K", (32, 64, 128, 256, 512)),
    # NOTE(flysearch): 1 (row-major tile order) to 16 rows per group, every power of two: grouping
    # trades L2 reuse of W across tile rows; 16 rows of 256 already span 4096 tokens.
    Param("GROUP_SIZE_M", (1, 2, 4, 8, 16)),
    # NOTE(flysearch): powers of two to 8. split_k_needs_idle_cus keeps a split only while half
    # of it leaves CUs idle, so 16 would serve only grids of fewer than 38 (gfx942) or 32
    # (gfx950) output tiles (N of about 512 at most, at a 16-wide N tile and one tile row); it is
    # left out to keep the space under 500,000 configs.
    Param("NUM_KSPLIT", (1, 2, 4, 8)),
    # NOTE(flysearch): HIPOptions wants a power of two. 4 is the fewest that give each of a CU's
    # 4 SIMDs a wave of the workgroup; 16 (1,024 threads, a workgroup's most) puts 4 waves of it
    # on every SIMD at a 128-register budget and is left out to keep the space small.
    Param("num_warps", (4, 8)),
    # NOTE(flysearch): Triton's AMD stream pipeliner keeps num_stages - 1 LDS buffers plus one
    # global prefetch in registers (checked against ttg.shared of compiles); 1 turns the prefetch
    # off and saves no LDS (one buffer either way); 4 (three buffers) fits gfx942's 64 KiB only
    # where (BM + BN) x BK <= 10,922 (64 x 64 x 64, 128 x 128 x 32) and is left out to keep the
    # space under 500,000 configs.
    Param("num_stages", (2, 3)),
    # NOTE(flysearch): 0 is "no hint" (HIPOptions' default); w >= 1 becomes LLVM's
    # "amdgpu-waves-per-eu"="w, w", a budget of 512 / w registers a lane: 1-4 give 512, 256, 168
    # and 128, where MFMA accumulators of 64 x 64 to 256 x 256 tiles live; 8 is full occupancy
    # (64 registers) for decode tiles; 5-7 (96, 80, 72) lie between 128 and 64.
    Param("waves_per_eu", (0, 1, 2, 3, 4, 8)),
    # NOTE(flysearch): the MFMA's M = N: 16 or 32 for bf16 on CDNA3/CDNA4. 0 lets Triton pick
    # (32 when both tiles are >= 32, else 16: a duplicate of one of these); 4 (4x4 MFMAs) only
    # serves tiles below 16.
    Param("matrix_instr_nonkdim", (16, 32)),
    # NOTE(flysearch): 2 makes each LDS read feed two MFMAs (ds_read_b128 on gfx942); Triton 3.6
    # rewrites it to 1 on gfx950 (rule kpack_fixed_by_arch).
    Param("kpack", (1, 2)),
    # NOTE(flysearch): on gfx942/gfx950 Triton lowers .ca to the default bits and .cs to .cg's
    # (getCtrlBitsForCacheModifierOnGFX_942_950), and .cv makes every load system-coherent
    # (wrong for a weight re-read by every tile row); "" is tl.load's default.
    Param("cache_modifier", ("", ".cg")),
)

_BF16_BYTES = 2
_REG_BYTES = 4
# NOTE(flysearch): CDNA3/CDNA4 allocate a wave's VGPRs and AGPRs (one unified file of
# arch.vgprs_per_simd_lane registers a lane) in granules of 8, as flysearch.evaluators._resources.
_VGPR_GRANULE = 8
# NOTE(flysearch): bf16 elements a lane feeds one MFMA (kBase in Triton's AccelerateAMDMatmul):
# 4 for v_mfma_f32_{16x16x16,32x32x8}_bf16 (CDNA3), 8 for {16x16x32,32x32x16} (CDNA4); the
# compiled kernels use exactly these instructions.
_MFMA_K_BASE = {"gfx942": 4, "gfx950": 8}
_DEFAULT_K_BASE = 4
# NOTE(flysearch): HIPOptions.__post_init__ (triton 3.6) warns and sets kpack = 1 on gfx950; the
# compiled code of kpack=2 is then byte-identical to kpack=1.
_KPACK_FIXED = {"gfx950": 1}
# NOTE(flysearch): registers a lane besides the accumulator, the prefetch and one MFMA's operands
# (loop state, base offsets, masks): the largest multiple of 4 that rejected no config compiled
# without spills in a calibration sample (1,085 compiles of random configs at every waves_per_eu
# budget, both archs, triton 3.6); lab/benchmarks/aiter_triton_coverage.py re-checks it on a fresh one.
_RESERVE_REGS = 8
# NOTE(flysearch): buffer loads (Triton's AMD default) keep one 32-bit offset a lane per 16-byte
# load besides its 4 data registers.
_LOAD_BYTES = 16
_PREFETCH_FACTOR = 1 + _REG_BYTES / _LOAD_BYTES


def _c(config: Config, name: str) -> int:
    return int(config[name])


def lds_bytes(config: Config) -> int:
    """LDS the pipelined A and B tiles take: ``max(1, num_stages - 1)`` buffers of
    ``(BM + BN) x BK`` bf16 (Triton 3.6's AMD stream pipeliner without async copy, its default:
    ``num_stages=2`` holds one LDS buffer and prefetches the next tile into registers).

    Example:
        >>> lds_bytes(Config.from_dict({"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 256,
        ...     "BLOCK_SIZE_K": 64, "num_stages": 2}))
        65536
    """
    buffers = max(1, _c(config, "num_stages") - 1)
    tiles = (_c(config, "BLOCK_SIZE_M") + _c(config, "BLOCK_SIZE_N")) * _c(config, "BLOCK_SIZE_K")
    return buffers * tiles * _BF16_BYTES


def _waves_per_simd(config: Config, arch: ArchProfile) -> int:
    """Waves of one workgroup on each SIMD: the whole workgroup lives on one CU."""
    return math.ceil(_c(config, "num_warps") / arch.simds_per_cu)


def vgpr_budget(config: Config, arch: ArchProfile) -> int:
    """Registers a lane one wave may hold: the unified file (``arch.vgprs_per_simd_lane``) over
    the waves per SIMD that ``waves_per_eu`` asks for, or that the workgroup forces (whichever is
    more), rounded down to the allocation granule.

    Example:
        >>> from flysearch.space import get_arch
        >>> cfg = Config.from_dict({"num_warps": 8, "waves_per_eu": 3})
        >>> vgpr_budget(cfg, get_arch("gfx942"))
        168
    """
    waves = max(_c(config, "waves_per_eu"), _waves_per_simd(config, arch), 1)
    return arch.vgprs_per_simd_lane // waves // _VGPR_GRANULE * _VGPR_GRANULE


def register_demand(config: Config, arch: ArchProfile) -> float:
    """Registers a lane the kernel needs at least: the fp32 accumulator (a wave holds at least
    one MFMA output tile), the register prefetch of the next A and B tiles with one offset per
    16-byte load, one MFMA's A and B operands, and a reserve (see the module's notes).

    Example:
        >>> from flysearch.space import get_arch
        >>> cfg = Config.from_dict({"BLOCK_SIZE_M": 256, "BLOCK_SIZE_N": 256, "BLOCK_SIZE_K": 64,
        ...     "num_warps": 8, "matrix_instr_nonkdim": 16, "kpack": 1})
        >>> register_demand(cfg, get_arch("gfx942"))
        180.0
    """
    bm, bn, bk = _c(config, "BLOCK_SIZE_M"), _c(config, "BLOCK_SIZE_N"), _c(config, "BLOCK_SIZE_K")
    warps, nonk = _c(config, "num_warps"), _c(config, "matrix_instr_nonkdim")
    lanes = arch.wave_size
    acc = max(bm * bn / warps, nonk * nonk) / lanes
    prefetch = (bm + bn) * bk * _BF16_BYTES / (_REG_BYTES * lanes * warps)
    per_operand = _MFMA_K_BASE.get(arch.name, _DEFAULT_K_BASE) * _c(config, "kpack") * _BF16_BYTES
    operands = 2 * per_operand / _REG_BYTES  # A and B
    return acc + _PREFETCH_FACTOR * prefetch + operands + _RESERVE_REGS



# -- shape-free rules ----------------------------------------------------------------------------


def _kpack_fixed_by_arch(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return arch is None or arch.name not in _KPACK_FIXED or _c(c, "kpack") == _KPACK_FIXED[arch.name]


def _mfma_tiles_block(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    nonk = _c(c, "matrix_instr_nonkdim")
    return _c(c, "BLOCK_SIZE_M") % nonk == 0 and _c(c, "BLOCK_SIZE_N") % nonk == 0


def _waves_per_eu_honored(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    waves = _c(c, "waves_per_eu")
    return arch is None or waves == 0 or waves >= _waves_per_simd(c, arch)


def _group_m_unused_under_split_k(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return _c(c, "GROUP_SIZE_M") == 1 or _c(c, "NUM_KSPLIT") == 1


def _lds_fits(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return arch is None or lds_bytes(c) <= arch.max_lds_per_block


def _registers_fit(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return arch is None or register_demand(c, arch) <= vgpr_budget(c, arch)


def _occupancy_fits_lds(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    waves = _c(c, "waves_per_eu")
    if arch is None or waves == 0:
        return True
    groups = arch.lds_bytes // lds_bytes(c)
    return waves <= min(arch.max_waves_per_simd, groups * _waves_per_simd(c, arch))


# -- shape rules ---------------------------------------------------------------------------------


def _tile_m_fits_shape(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return shape is None or _c(c, "BLOCK_SIZE_M") <= 2 * max(16, next_pow2(shape.M))


def _tile_n_fits_shape(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return shape is None or _c(c, "BLOCK_SIZE_N") <= max(16, next_pow2(shape.N))


def _split_k_tile_fits(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return shape is None or _c(c, "BLOCK_SIZE_K") <= math.ceil(shape.K / _c(c, "NUM_KSPLIT"))


def _output_tiles(c: Config, shape: Shape) -> int:
    return math.ceil(shape.M / _c(c, "BLOCK_SIZE_M")) * math.ceil(shape.N / _c(c, "BLOCK_SIZE_N"))


def _split_k_needs_idle_cus(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    splits = _c(c, "NUM_KSPLIT")
    if shape is None or arch is None or splits == 1:
        return True
    return _output_tiles(c, shape) * (splits // 2) < arch.compute_units


def _group_m_needs_rows(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    group = _c(c, "GROUP_SIZE_M")
    return shape is None or group == 1 or group < 2 * math.ceil(shape.M / _c(c, "BLOCK_SIZE_M"))


CONSTRAINTS: tuple[Constraint, ...] = (
    Constraint(
        "group_m_unused_under_split_k", _group_m_unused_under_split_k,
        "GROUP_SIZE_M > 1 only without split-K: with NUM_KSPLIT > 1 aiter's kernel maps tiles "
        "row-major and never reads GROUP_SIZE_M",
    ),
    Constraint(
        "kpack_fixed_by_arch", _kpack_fixed_by_arch,
        "kpack is 1 on gfx950: Triton 3.6 (HIPOptions) deprecates kpack there and overwrites 2 "
        "with 1, so a kpack=2 config compiles to the kpack=1 code",
    ),
    Constraint(
        "mfma_tiles_block", _mfma_tiles_block,
        "matrix_instr_nonkdim divides BLOCK_SIZE_M and BLOCK_SIZE_N: an enforced MFMA larger than "
        "the tile is still used (AccelerateAMDMatmul skips its divisibility check when the size "
        "is enforced) and computes duplicated rows",
    ),
    Constraint(
        "waves_per_eu_honored", _waves_per_eu_honored,
        "waves_per_eu is 0 or at least ceil(num_warps / SIMDs per CU): a workgroup lives on one "
        "CU and puts that many waves on each SIMD anyway, so a lower hint changes nothing (the "
        "compiled code equals waves_per_eu=0's)",
    ),
    Constraint(
        "lds_fits", _lds_fits,
        "max(1, num_stages - 1) LDS buffers of (BM + BN) x BK bf16 fit one workgroup's LDS "
        "(arch.max_lds_per_block); equal to ttg.shared of every compile checked",
    ),
    Constraint(
        "registers_fit", _registers_fit,
        "accumulator + 5/4 x register prefetch + one MFMA's operands + 8 registers a lane fit "
        "512 / max(waves_per_eu, waves the workgroup puts on a SIMD), in granules of 8",
    ),
    Constraint(
        "occupancy_fits_lds", _occupancy_fits_lds,
        "waves_per_eu no higher than the waves per SIMD the LDS lets co-reside "
        "(floor(LDS per CU / LDS per workgroup) x waves per SIMD of one workgroup): a higher "
        "hint cuts registers for occupancy that cannot happen",
    ),
    Constraint(
        "tile_m_fits_shape", _tile_m_fits_shape,
        "BLOCK_SIZE_M <= 2 * max(16, next_pow2(M)): at most one wasted half of the M tile (the "
        "rule of triton_gemm_splitk)",
    ),
    Constraint(
        "tile_n_fits_shape", _tile_n_fits_shape,
        "BLOCK_SIZE_N <= max(16, next_pow2(N)): a wider N tile only adds masked columns to the one "
        "tile column N has",
    ),
    Constraint(
        "split_k_tile_fits", _split_k_tile_fits,
        "BLOCK_SIZE_K <= cdiv(K, NUM_KSPLIT): each split holds a whole K tile; aiter's loader "
        "rewrites a larger BLOCK_SIZE_K to a smaller one, so the config would not run as written",
    ),
    Constraint(
        "split_k_needs_idle_cus", _split_k_needs_idle_cus,
        "NUM_KSPLIT > 1 only while output tiles x NUM_KSPLIT / 2 < CUs: the split is the smallest "
        "power of two that fills the device; each split costs an fp32 partial and a reduce",
    ),
    Constraint(
        "group_m_needs_rows", _group_m_needs_rows,
        "GROUP_SIZE_M == 1 or GROUP_SIZE_M < 2 * cdiv(M, BM): groups of at least the tile rows "
        "all map tiles alike, so only the smallest such group is kept",
    ),
)

def make_space() -> Space:
    """The ``aiter_triton_gemm`` space (480,000 configs before the rules)."""
    return Space(SPACE_NAME, PARAMS, CONSTRAINTS)


register_space(SPACE_NAME, make_space)


def _lowered_k_tile(bk: int, k: int, splits: int) -> int:
    """BLOCK_SIZE_K as aiter's ``_get_config`` hands it to the kernel for this K and split: a K
    tile wider than one split (``cdiv(K, NUM_KSPLIT)``) becomes the split's next power of two, a
    quarter of that when it overshoots, and never less than 16."""
    split = -(-k // splits)
    if bk > split:
        bk = next_pow2(split)
        if bk > split:
            bk //= 4
    return max(bk, 16)


# The keys a config of aiter's kernel may have: its tile constexprs, then Triton's AMD options.
_CONSTEXPR_KEYS = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "NUM_KSPLIT",
                  "cache_modifier")
_OPTION_KEYS = ("num_warps", "num_stages", "waves_per_eu", "matrix_instr_nonkdim", "kpack")
_LAUNCH_REQUIRED = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "num_warps")
_LAUNCH_DTYPES = ("bf16", "fp16")


def launch_constexprs(config: Mapping[str, Any], shape: Shape) -> dict[str, Any]:
    """The tile constexprs aiter's launch passes the kernel for *config* at *shape*: the config's
    own, ``SPLITK_BLOCK_SIZE = cdiv(K, NUM_KSPLIT)`` added, ``BLOCK_SIZE_K`` lowered as aiter's
    ``_get_config`` lowers it, ``GROUP_SIZE_M``
    and ``NUM_KSPLIT`` 1 when absent, ``cache_modifier`` ``None`` where the config has none.

    Raises:
        ConfigMappingError: *config* has keys the kernel does not take, lacks one it needs, or
            *shape*'s dtype is not bf16 or fp16.

    Example:
        >>> got = launch_constexprs({"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 128, "BLOCK_SIZE_K": 128,
        ...     "NUM_KSPLIT": 4, "num_warps": 4}, Shape(16, 4096, 256))
        >>> got["SPLITK_BLOCK_SIZE"], got["BLOCK_SIZE_K"], got["cache_modifier"]
        (64, 64, None)
    """
    if shape.dtype not in _LAUNCH_DTYPES:
        raise ConfigMappingError(f"aiter's a16w16 GEMM takes bf16 or fp16, not {shape.dtype!r}.")
    unknown = sorted(set(config) - {*_CONSTEXPR_KEYS, *_OPTION_KEYS})
    missing = [k for k in _LAUNCH_REQUIRED if k not in config]
    if unknown or missing:
        allowed = ", ".join((*_CONSTEXPR_KEYS, *_OPTION_KEYS))
        raise ConfigMappingError(
            f"aiter's Triton GEMM takes the keys {allowed} (requires {', '.join(_LAUNCH_REQUIRED)}); "
            f"got unknown {unknown or 'none'}, missing {missing or 'none'}."
        )
    splits = int(config.get("NUM_KSPLIT", 1))
    modifier = config.get("cache_modifier")
    return {
        "BLOCK_SIZE_M": int(config["BLOCK_SIZE_M"]), "BLOCK_SIZE_N": int(config["BLOCK_SIZE_N"]),
        "BLOCK_SIZE_K": _lowered_k_tile(int(config["BLOCK_SIZE_K"]), shape.K, splits),
        "GROUP_SIZE_M": int(config.get("GROUP_SIZE_M", 1)), "NUM_KSPLIT": splits,
        "SPLITK_BLOCK_SIZE": -(-shape.K // splits),
        "cache_modifier": None if modifier in (None, "", "none", "None") else str(modifier),
    }
