"""flysearch's own FlyDSL bf16 GEMM for AMD CDNA3/CDNA4: a tiled, LDS-staged MFMA kernel and its space.

**Compile-verified only.** This kernel has been compiled for gfx942 and gfx950 on a CPU
(``COMPILE_ONLY=1``); it has never run on an AMD GPU, so its numerical correctness and its speed are
unmeasured. The reasoning below is what it rests on until it runs on hardware.

The kernel computes ``C[M, N] = A[M, K] @ B[N, K]^T`` in bf16 with an fp32 accumulator: ``B`` is
stored N x K ("NT"), as a linear layer stores its weight, so ``C = torch.nn.functional.linear(A, B)``.

Tiling:

- each workgroup owns one ``BLOCK_M x BLOCK_N`` tile of C (grid ``(M / BLOCK_M, N / BLOCK_N)``) and
  runs ``WARPS_M * WARPS_N`` waves (``num_warps``; 64 threads each);
- the waves form a ``WARPS_M x WARPS_N`` grid of 16 x 16 x 16 bf16 MFMA atoms
  (``v_mfma_f32_16x16x16_bf16``), repeated over the tile, so each wave accumulates
  ``BLOCK_M * BLOCK_N / (256 * num_warps)`` 16 x 16 blocks in fp32 registers;
- K is walked in ``BLOCK_K`` steps. A and B tiles pass global -> registers (128-bit buffer loads,
  8 bf16 a thread, K-contiguous) -> LDS (128-bit stores) into a ring of ``STAGES`` buffers, so the
  kernel allocates ``STAGES * (BLOCK_M + BLOCK_N) * BLOCK_K * 2`` bytes of LDS. ``STAGES - 1`` tiles
  are in LDS before the first MFMA; at step ``k`` the loads of tile ``k + STAGES - 1`` are issued
  before the MFMAs of tile ``k`` (their latency hides behind the math), and written to LDS after
  them, into the buffer that step ``k - 1`` read. One workgroup barrier a step then orders both
  hazards: every wave has finished reading that buffer (it passed the barrier of step ``k - 1``), and
  tile ``k + 1`` is complete before anyone reads it. Stage indices are compile-time constants: the
  K loop is unrolled ``STAGES`` times around a runtime loop;
- the MFMA operands are read from LDS one 16-wide K slice at a time (64-bit LDS reads);
- the epilogue rounds the fp32 accumulator to bf16 and stores it with 16-bit buffer stores.

Supported shapes: ``M % BLOCK_M == 0``, ``N % BLOCK_N == 0``, ``K % BLOCK_K == 0`` and
``K / BLOCK_K >= STAGES``, and every operand under 2 GiB (buffer addressing); the launcher raises
:class:`ValueError` otherwise (and the space's constraints prune such configs before anything is
compiled). Nothing is masked: there is no tail handling in M, N or K. A, B and C must be contiguous
row-major tensors.

The space (``flydsl_gemm``) is the product of BLOCK_M (32..256), BLOCK_N (64..256), BLOCK_K (32, 64),
WARPS_M and WARPS_N (1, 2, 4) and STAGES (2, 4): 432 configs. Its constraints, in the order they are
charged:

======================= ===========================================================================
constraint              keeps a config when
======================= ===========================================================================
lds_fits                ``STAGES * (BLOCK_M + BLOCK_N) * BLOCK_K * 2 <= arch.lds_bytes``
warp_tile_divides       ``BLOCK_M % (16 * WARPS_M) == 0`` and ``BLOCK_N % (16 * WARPS_N) == 0``
threads_fit             ``WARPS_M * WARPS_N * arch.wave_size <= 1024``
copy_tile_divides       the global->LDS copy (8 bf16 a thread, ``BLOCK_K / 8`` threads a row)
                        covers the A and B tiles in whole passes
acc_registers_fit       the fp32 accumulator takes at most 256 registers a thread (VGPR + AGPR
                        hold 512; larger accumulators can only spill)
tiles_divide_shape      BLOCK_M, BLOCK_N, BLOCK_K divide M, N, K
k_tiles_fill_pipeline   ``K / BLOCK_K >= STAGES``
======================= ===========================================================================

Example:
    >>> from flysearch.space import get_arch
    >>> from flysearch.space import Shape
    >>> space = flydsl_gemm_space()
    >>> space.size
    432
    >>> big = space.config(BLOCK_M=256, BLOCK_N=256, BLOCK_K=64, WARPS_M=2, WARPS_N=2, STAGES=2)
    >>> lds_bytes(big)
    131072
    >>> space.reject_reason(big, Shape(4096, 4096, 4096), get_arch("gfx942"))
    'lds_fits'
    >>> space.reject_reason(big, Shape(4096, 4096, 4096), get_arch("gfx950")) is None
    True
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flysearch.kernels._registry import register_space
from flysearch.space import Config, Constraint, Param, Space

if TYPE_CHECKING:
    from flysearch.space import ArchProfile, Shape

__all__ = [
    "MFMA_K",
    "MFMA_M",
    "MFMA_N",
    "SPACE_NAME",
    "FlydslCall",
    "check_shape",
    "flydsl_gemm_space",
    "gemm_factory",
    "jit_launcher",
    "lds_bytes",
    "num_warps",
]

SPACE_NAME = "flydsl_gemm"

# NOTE(flysearch): v_mfma_f32_16x16x16_bf16 exists on CDNA3 (gfx942) and CDNA4 (gfx950); one atom
# shape for both keeps the kernel identical across the two targets.
MFMA_M, MFMA_N, MFMA_K = 16, 16, 16
_WAVE = 64
_COPY_VEC = 8  # bf16 elements in one 128-bit global load / LDS store
_BF16_BYTES = 2
_MAX_THREADS = 1024
_BUFFER_LIMIT = 2**31  # bytes a buffer resource addresses with its 32-bit offsets
# NOTE(flysearch): CDNA3/CDNA4 give a lane 512 registers (256 VGPRs + 256 AGPRs); an accumulator
# above 256 leaves nothing for operands and addresses, so it can only spill.
_MAX_ACC_REGS = 256

PARAMS: tuple[Param, ...] = (
    Param("BLOCK_M", (32, 64, 128, 256)),
    Param("BLOCK_N", (64, 128, 256)),
    Param("BLOCK_K", (32, 64)),
    Param("WARPS_M", (1, 2, 4)),
    Param("WARPS_N", (1, 2, 4)),
    Param("STAGES", (2, 4)),
)


# -- the space ------------------------------------------------------------------------------------


def _i(config: Config | dict[str, Any], name: str) -> int:
    return int(config[name])


def lds_bytes(config: Config | dict[str, Any]) -> int:
    """LDS the kernel allocates: ``STAGES * (BLOCK_M + BLOCK_N) * BLOCK_K * 2`` bytes."""
    return (
        _i(config, "STAGES") * (_i(config, "BLOCK_M") + _i(config, "BLOCK_N"))
        * _i(config, "BLOCK_K") * _BF16_BYTES
    )


def _wave(arch: ArchProfile | None) -> int:
    return arch.wave_size if arch is not None else _WAVE


def _threads(config: Config | dict[str, Any], arch: ArchProfile | None) -> int:
    return _i(config, "WARPS_M") * _i(config, "WARPS_N") * _wave(arch)


def _lds_fits(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return arch is None or lds_bytes(c) <= arch.lds_bytes


def _warp_tile_divides(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return (
        _i(c, "BLOCK_M") % (MFMA_M * _i(c, "WARPS_M")) == 0
        and _i(c, "BLOCK_N") % (MFMA_N * _i(c, "WARPS_N")) == 0
        and _i(c, "BLOCK_K") % MFMA_K == 0
    )


def _threads_fit(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return _threads(c, arch) <= _MAX_THREADS


def _copy_tile_divides(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    threads = _threads(c, arch)
    cols = _i(c, "BLOCK_K") // _COPY_VEC
    if threads % cols:
        return False
    rows = threads // cols
    return _i(c, "BLOCK_M") % rows == 0 and _i(c, "BLOCK_N") % rows == 0


def _acc_registers_fit(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return _i(c, "BLOCK_M") * _i(c, "BLOCK_N") <= _MAX_ACC_REGS * _threads(c, arch)


def _tiles_divide_shape(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    if shape is None:
        return True
    return (
        shape.M % _i(c, "BLOCK_M") == 0
        and shape.N % _i(c, "BLOCK_N") == 0
        and shape.K % _i(c, "BLOCK_K") == 0
    )


def _k_tiles_fill_pipeline(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return shape is None or shape.K // _i(c, "BLOCK_K") >= _i(c, "STAGES")


CONSTRAINTS: tuple[Constraint, ...] = (
    Constraint("lds_fits", _lds_fits, "STAGES x (BLOCK_M + BLOCK_N) x BLOCK_K x 2 bytes fit in LDS"),
    Constraint("warp_tile_divides", _warp_tile_divides, "16 x 16 MFMA tiles of the waves divide the tile"),
    Constraint("threads_fit", _threads_fit, "WARPS_M x WARPS_N waves are at most 1024 threads"),
    Constraint("copy_tile_divides", _copy_tile_divides, "the global->LDS copy covers A and B tiles"),
    Constraint("acc_registers_fit", _acc_registers_fit, "fp32 accumulator <= 256 registers a thread"),
    Constraint("tiles_divide_shape", _tiles_divide_shape, "BLOCK_M, BLOCK_N, BLOCK_K divide M, N, K"),
    Constraint("k_tiles_fill_pipeline", _k_tiles_fill_pipeline, "K / BLOCK_K >= STAGES"),
)


def flydsl_gemm_space() -> Space:
    """The ``flydsl_gemm`` space: 432 configs before constraints (see the module docstring)."""
    return Space(SPACE_NAME, PARAMS, CONSTRAINTS, kernel=f"{__name__}:gemm_factory")


def check_shape(
    M: int, N: int, K: int, BLOCK_M: int, BLOCK_N: int, BLOCK_K: int, STAGES: int
) -> None:
    """Raise :class:`ValueError` unless the kernel supports (M, N, K) with these tiles.

    Raises:
        ValueError: a tile does not divide its dimension, K has fewer than STAGES tiles, or an
            operand reaches 2 GiB (buffer loads and stores address with 32-bit offsets).
    """
    for name, elems in (("A", M * K), ("B", N * K), ("C", M * N)):
        if elems * _BF16_BYTES >= _BUFFER_LIMIT:
            raise ValueError(
                f"flydsl_gemm addresses {name} with 32-bit buffer offsets, but {name} of this shape "
                f"takes {elems * _BF16_BYTES} bytes; split the GEMM so each operand stays under 2 GiB."
            )
    for dim, size, tile in (("M", M, BLOCK_M), ("N", N, BLOCK_N), ("K", K, BLOCK_K)):
        if size % tile:
            raise ValueError(
                f"flydsl_gemm needs {dim}={size} to be a multiple of BLOCK_{dim}={tile}; "
                f"pad {dim} or pick a BLOCK_{dim} that divides it."
            )
    if STAGES < 2 or K // BLOCK_K < STAGES:
        raise ValueError(
            f"flydsl_gemm needs STAGES >= 2 and K / BLOCK_K >= STAGES, got K={K}, "
            f"BLOCK_K={BLOCK_K}, STAGES={STAGES}; lower STAGES or BLOCK_K."
        )


# -- the kernel -----------------------------------------------------------------------------------

fx: Any = None  # flydsl.expr, imported by _build() on first use


@dataclass(frozen=True)
class _Operand:
    """The trace-time views of one operand (A or B), all partitioned for the calling thread.

    Attributes:
        g_tiles: Global tiles for the 128-bit copy, ``(V, R, C, k_tiles)``.
        s_write: The LDS ring for the same copy, ``(V, R, C, STAGES)``.
        regs: Registers one tile passes through on its way to LDS, ``(V, R, C)``.
        s_read: The LDS ring for the 64-bit MFMA operand reads, ``(V, rep, K/16, STAGES)``.
        frag: The MFMA operand fragment, ``(V, rep, K/16)``.
        frag_read: ``frag`` as the LDS->register copy sees it.
    """

    g_tiles: Any
    s_write: Any
    regs: Any
    s_read: Any
    frag: Any
    frag_read: Any


def _operand(
    tid: Any, g_k: Any, rows: int, meta: tuple[int, int, int], tiled_mma: Any, lds: Any, which: str
) -> _Operand:
    """Allocate one operand's LDS ring and partition it for the copies and the MFMA.

    Global -> LDS: threads sit ``BLOCK_K / 8`` to a row (consecutive threads read consecutive
    16-byte chunks of a K-contiguous row), ``threads / (BLOCK_K / 8)`` rows a pass; passes repeat
    down the tile. LDS holds ``(rows, BLOCK_K, STAGES)`` with K contiguous, then rows, then stages.

    Args:
        g_k: The workgroup's global tiles, ``(rows, BLOCK_K, k_tiles)``.
        rows: BLOCK_M for A, BLOCK_N for B.
        meta: ``(BLOCK_K, STAGES, threads)``.
        lds: The kernel's ``fx.SharedAllocator``.
        which: ``"A"`` or ``"B"``.
    """
    block_k, stages, threads = meta
    ring = fx.make_ordered_layout((rows, block_k, stages), (1, 0, 2))
    array = fx.Array[fx.BFloat16, stages * rows * block_k, 16]
    s_ring = lds.allocate(array).peek().view(ring)
    cols = block_k // _COPY_VEC
    tile_mn, tv = fx.make_layout_tv(
        fx.make_layout((threads // cols, cols), (cols, 1)), fx.make_layout((1, _COPY_VEC), (1, 1))
    )
    thr = fx.make_tiled_copy(_atoms()["load"], tv, tile_mn).get_slice(tid)
    g_tiles = thr.partition_S(g_k)
    make_copy = fx.make_tiled_copy_A if which == "A" else fx.make_tiled_copy_B
    reader = make_copy(_atoms()["read"], tiled_mma).get_slice(tid)
    thr_mma = tiled_mma.thr_slice(tid)
    frag = (thr_mma.make_fragment_A if which == "A" else thr_mma.make_fragment_B)(s_ring[None, None, 0])
    return _Operand(
        g_tiles, thr.partition_D(s_ring), fx.make_fragment_like(g_tiles[None, None, None, 0]),
        reader.partition_S(s_ring), frag, reader.retile(frag),
    )


def _atoms() -> dict[str, Any]:
    """The copy atoms: 128-bit buffer loads, 128-bit LDS stores, 64-bit LDS operand reads, 16-bit
    buffer stores of C."""
    return {
        "load": fx.make_copy_atom(fx.rocdl.BufferCopy128b(), fx.BFloat16),
        "stash": fx.make_copy_atom(fx.UniversalCopy128b(), fx.BFloat16),
        "read": fx.make_copy_atom(fx.UniversalCopy64b(), fx.BFloat16),
        "store": fx.make_copy_atom(fx.rocdl.BufferCopy16b(), fx.BFloat16),
    }


def _load(ops: tuple[_Operand, _Operand], k_tile: Any) -> None:
    """Global -> registers: K tile *k_tile* (runtime or constant) of A and B."""
    for op in ops:
        fx.copy(_atoms()["load"], op.g_tiles[None, None, None, k_tile], op.regs)


def _stash(ops: tuple[_Operand, _Operand], stage: int) -> None:
    """Registers -> LDS buffer *stage*."""
    for op in ops:
        fx.copy(_atoms()["stash"], op.regs, op.s_write[None, None, None, stage])


def _mma_tile(ops: tuple[_Operand, _Operand], stage: int, block_k: int, tiled_mma: Any, acc: Any) -> None:
    """acc += the A and B tiles in LDS buffer *stage*, one 16-wide K slice at a time."""
    a, b = ops
    for kk in range(block_k // MFMA_K):
        for op in ops:
            fx.copy(_atoms()["read"], op.s_read[None, None, kk, stage], op.frag_read[None, None, kk])
        fx.gemm(tiled_mma, acc, a.frag[None, None, kk], b.frag[None, None, kk], acc)


def _store_c(tid: Any, tiled_mma: Any, acc: Any, g_c: Any) -> None:
    """Round the fp32 accumulator to bf16 and store it (16-bit stores: an MFMA lane holds four rows
    of one column of C)."""
    store_atom = _atoms()["store"]
    thr = fx.make_tiled_copy_C(store_atom, tiled_mma).get_slice(tid)
    out = fx.make_fragment_like(acc, fx.BFloat16)
    out.store(acc.load().to(fx.BFloat16))
    fx.copy(store_atom, thr.retile(out), thr.partition_D(g_c))


def _define_kernel(flyc: Any) -> Any:
    """The ``@flyc.kernel``; its K loop is the pipeline of the module docstring."""

    @flyc.kernel
    def flysearch_gemm_kernel(
        A: fx.Tensor, B: fx.Tensor, C: fx.Tensor, K: fx.Constexpr[int],
        BLOCK_M: fx.Constexpr[int], BLOCK_N: fx.Constexpr[int], BLOCK_K: fx.Constexpr[int],
        WARPS_M: fx.Constexpr[int], WARPS_N: fx.Constexpr[int], STAGES: fx.Constexpr[int],
    ) -> None:
        tid = fx.thread_idx.x
        bid_m, bid_n, _ = fx.block_idx
        g_a = fx.flat_divide(fx.rocdl.make_buffer_tensor(A), (BLOCK_M, BLOCK_K))[None, None, bid_m, None]
        g_b = fx.flat_divide(fx.rocdl.make_buffer_tensor(B), (BLOCK_N, BLOCK_K))[None, None, bid_n, None]
        g_c = fx.flat_divide(fx.rocdl.make_buffer_tensor(C), (BLOCK_M, BLOCK_N))[None, None, bid_m, bid_n]
        mfma = fx.make_mma_atom(fx.rocdl.MFMA(MFMA_M, MFMA_N, MFMA_K, fx.BFloat16))
        tiled_mma = fx.make_tiled_mma(mfma, fx.make_layout((WARPS_M, WARPS_N, 1), (1, WARPS_M, 0)))
        lds = fx.SharedAllocator()
        meta = (BLOCK_K, STAGES, WARPS_M * WARPS_N * _WAVE)
        ops = (_operand(tid, g_a, BLOCK_M, meta, tiled_mma, lds, "A"),
               _operand(tid, g_b, BLOCK_N, meta, tiled_mma, lds, "B"))
        acc = tiled_mma.thr_slice(tid).make_fragment_C(g_c)
        acc.fill(0)

        def step(k_tile: Any, stage: int, prefetch: bool) -> None:  # MFMAs of tile k_tile, LDS `stage`
            if prefetch:
                _load(ops, k_tile + STAGES - 1)
            _mma_tile(ops, stage, BLOCK_K, tiled_mma, acc)
            if prefetch:
                _stash(ops, (stage + STAGES - 1) % STAGES)
            fx.gpu.barrier()

        steady = K // BLOCK_K - (STAGES - 1)  # steps that prefetch a later tile
        head = steady % STAGES
        for s in fx.range_constexpr(STAGES - 1):
            _load(ops, s)
            _stash(ops, s)
        fx.gpu.barrier()
        for j in fx.range_constexpr(head):
            step(j, j % STAGES, True)
        for base in range(head, steady, STAGES):
            for j in fx.range_constexpr(STAGES):
                step(base + j, (head + j) % STAGES, True)
        for j in fx.range_constexpr(STAGES - 1):
            step(steady + j, (steady + j) % STAGES, False)
        _store_c(tid, tiled_mma, acc, g_c)

    return flysearch_gemm_kernel


@functools.cache
def _build() -> tuple[Callable[..., Any], Callable[..., Any]]:
    """Define the ``@flyc.kernel`` and its ``@flyc.jit`` launcher (imports flydsl).

    flydsl resolves the (PEP 563 string) annotations ``fx.Tensor`` / ``fx.Constexpr[int]`` in the
    module's globals, so the lazy import binds ``fx`` there.
    """
    global fx
    import flydsl.compiler as flyc
    import flydsl.expr as fx

    kernel = _define_kernel(flyc)
    default_stream = fx.Stream(None)

    @flyc.jit
    def flysearch_gemm(
        A: fx.Tensor, B: fx.Tensor, C: fx.Tensor,
        M: fx.Constexpr[int], N: fx.Constexpr[int], K: fx.Constexpr[int],
        BLOCK_M: fx.Constexpr[int] = 128, BLOCK_N: fx.Constexpr[int] = 128,
        BLOCK_K: fx.Constexpr[int] = 32, WARPS_M: fx.Constexpr[int] = 2,
        WARPS_N: fx.Constexpr[int] = 2, STAGES: fx.Constexpr[int] = 2,
        stream: fx.Stream = default_stream,
    ) -> None:
        check_shape(M, N, K, BLOCK_M, BLOCK_N, BLOCK_K, STAGES)
        kernel(A, B, C, K, BLOCK_M, BLOCK_N, BLOCK_K, WARPS_M, WARPS_N, STAGES).launch(
            grid=(M // BLOCK_M, N // BLOCK_N, 1), block=(WARPS_M * WARPS_N * _WAVE, 1, 1), stream=stream
        )

    return kernel, flysearch_gemm


def jit_launcher() -> Callable[..., Any]:
    """The ``@flyc.jit`` launcher ``flysearch_gemm(A, B, C, M, N, K, *, BLOCK_M, ..., STAGES)``."""
    return _build()[1]


# -- the evaluator's entry point ------------------------------------------------------------------


@dataclass(frozen=True)
class FlydslCall:
    """One compilable (and, on an AMD GPU, runnable) call of a FlyDSL kernel for one shape.

    The tunable constexprs are not in ``args``: the evaluator passes a config's values as keywords,
    ``flyc.compile(call.fn, *call.args, **config_kwargs)``.

    Attributes:
        fn: The ``@flyc.jit`` launcher.
        args: Its positional arguments: torch tensors on the chosen device, then ints.
        output: The tensor the kernel writes.
        reference: A zero-argument callable returning the fp32 torch reference of ``output``.
    """

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    output: Any
    reference: Callable[[], Any]


def num_warps(config: Config | dict[str, Any]) -> int:
    """Waves a workgroup runs: ``WARPS_M * WARPS_N`` (derived, not a parameter of the space)."""
    return _i(config, "WARPS_M") * _i(config, "WARPS_N")


def _smallest(name: str) -> int:
    return min(int(v) for p in PARAMS if p.name == name for v in p.values)


def gemm_factory(shape: Shape, device: str = "cpu") -> FlydslCall:
    """Build the call of the FlyDSL GEMM for *shape*: ``C = A @ B^T`` in bf16, B stored N x K.

    On a CPU device the tensors are compile placeholders (``COMPILE_ONLY=1``); on an AMD GPU the
    call runs. ``args`` is ``(A, B, C, M, N, K)``.

    Args:
        shape: The GEMM; its dtype must be ``"bf16"``.
        device: The torch device of the tensors.

    Raises:
        ValueError: the dtype is not bf16, or a dimension is not a multiple of the smallest tile the
            space offers for it (no config could run it).
    """
    import torch

    if shape.dtype != "bf16":
        raise ValueError(f"flydsl_gemm is a bf16 kernel, got dtype={shape.dtype!r}; use dtype='bf16'.")
    for dim, name in (("M", "BLOCK_M"), ("N", "BLOCK_N"), ("K", "BLOCK_K")):
        size, tile = getattr(shape, dim), _smallest(name)
        if size % tile:
            raise ValueError(
                f"flydsl_gemm supports {dim} in multiples of {tile} (its smallest {name}), "
                f"got {dim}={size}; pad {dim} to a multiple of {tile}."
            )
    gen = torch.Generator(device="cpu").manual_seed(0)
    a = torch.randn(shape.M, shape.K, generator=gen, dtype=torch.bfloat16).to(device)
    b = torch.randn(shape.N, shape.K, generator=gen, dtype=torch.bfloat16).to(device)
    c = torch.zeros(shape.M, shape.N, dtype=torch.bfloat16, device=device)
    return FlydslCall(
        fn=jit_launcher(),
        args=(a, b, c, shape.M, shape.N, shape.K),
        output=c,
        reference=lambda: a.float() @ b.float().t(),
    )


register_space(SPACE_NAME, flydsl_gemm_space)
