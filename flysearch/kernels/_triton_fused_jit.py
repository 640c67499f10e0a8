"""The Triton source of the fused split-K GEMM (imported only where Triton is installed).

The split-K GEMM of ``_triton_gemm_jit.py`` with its reduction inside the one launch. The grid is
``(tiles_m * tiles_n, SPLIT_K)``, each program sums its stretch of K for its output tile as there
(:func:`~flysearch.kernels._triton_gemm_jit.tile_partial_sum`) and adds the fp32 sum into the fp32
workspace with atomics. Then it counts its arrival on the tile's counter; the program that arrives
last reads the finished sum, rounds it into ``C`` as bf16 and puts the workspace tile and the
counter back to zero, so the next launch finds them clean and needs no zeroing launch before it.

The order the arrival relies on: every thread's atomic adds, then a barrier of the program, then
one acquire-release atomic on the counter (release: the adds before it are visible to whoever
reads the count after it; acquire: the last program's reads of the workspace come after every
other program's adds). The last program reads the workspace past the L1 cache (``.cg``), where
another SM's atomics cannot be stale, and meets its threads at a second barrier before it zeroes
the tile: the compiler lays the read and the zeroing out over the threads differently, so without
it one thread can zero an element another has not read yet.
"""

from __future__ import annotations

import triton
import triton.language as tl

from flysearch.kernels._triton_gemm_jit import tile_partial_sum

__all__ = ["fused_splitk_gemm_kernel"]


@triton.jit
def fused_splitk_gemm_kernel(
    a_ptr, w_ptr, c_ptr, ws_ptr, arrivals_ptr, M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr,
):
    tile = tl.program_id(0)
    acc, rm, rn = tile_partial_sum(a_ptr, w_ptr, M, N, K, tile, tl.program_id(1),
                                   BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, SPLIT_K)
    out = rm[:, None] * N + rn[None, :]
    keep = (rm[:, None] < M) & (rn[None, :] < N)
    tl.atomic_add(ws_ptr + out, acc, mask=keep, sem="relaxed")
    tl.debug_barrier()
    arrived = tl.atomic_add(arrivals_ptr + tile, 1, sem="acq_rel", scope="gpu")
    if arrived == SPLIT_K - 1:
        total = tl.load(ws_ptr + out, mask=keep, other=0.0, cache_modifier=".cg")
        tl.store(c_ptr + out, total.to(tl.bfloat16), mask=keep)
        tl.debug_barrier()
        tl.store(ws_ptr + out, tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32), mask=keep)
        tl.store(arrivals_ptr + tile, 0)
