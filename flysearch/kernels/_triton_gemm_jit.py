"""The Triton source of the split-K GEMM (imported only where Triton is installed).

``C[M, N] = A[M, K] @ W[N, K]^T`` in bf16 with an fp32 accumulator: ``A`` holds the tokens row by row
and ``W`` the weight of a linear layer as it is stored (``out_features x in_features``), which is what
``torch.matmul(A, W.t())`` computes through cuBLAS.

The grid is ``(tiles_m * tiles_n, SPLIT_K)``. Program ``(pid, pid_k)`` picks its output tile with a
grouped ordering (``GROUP_M`` tile rows share the same stretch of ``W`` while it sits in L2) and
accumulates its share of the K tiles. With ``SPLIT_K == 1`` it writes bf16 straight to ``C``; with
more splits each program adds its fp32 partial sum into a zeroed fp32 workspace with atomics, and
the caller converts the workspace to bf16 afterwards.

Rows and columns past ``M`` and ``N`` are wrapped (``% M``, ``% N``) so that loads need no mask along
them, and discarded at the store; the K tail is masked.
"""

from __future__ import annotations

import triton
import triton.language as tl

__all__ = ["splitk_gemm_kernel", "tile_partial_sum"]


@triton.jit
def tile_partial_sum(
    a_ptr, w_ptr, M, N, K, pid, pid_k,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr,
):
    """Program ``(pid, pid_k)``'s fp32 partial sum of its output tile, and the tile's rows and
    columns (unwrapped: those past ``M`` and ``N`` are the caller's to mask at the store)."""
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)

    # Grouped tile order: walk GROUP_M tile rows column by column.
    per_group = GROUP_M * tiles_n
    group = pid // per_group
    row0 = group * GROUP_M
    rows_here = tl.minimum(tiles_m - row0, GROUP_M)
    tile_m = row0 + (pid % per_group) % rows_here
    tile_n = (pid % per_group) // rows_here

    rm = tile_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = tile_n * BLOCK_N + tl.arange(0, BLOCK_N)
    rm_load = rm % M
    rn_load = rn % N

    # This split's stretch of K, in whole BLOCK_K tiles.
    k_tiles = tl.cdiv(K, BLOCK_K)
    per_split = tl.cdiv(k_tiles, SPLIT_K)
    k_lo = pid_k * per_split * BLOCK_K
    k_hi = tl.minimum(k_lo + per_split * BLOCK_K, K)

    rk = k_lo + tl.arange(0, BLOCK_K)
    a_tile = a_ptr + rm_load[:, None] * K + rk[None, :]
    w_tile = w_ptr + rn_load[None, :] * K + rk[:, None]

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(k_lo, k_hi, BLOCK_K):
        in_k = (k + tl.arange(0, BLOCK_K)) < K
        a = tl.load(a_tile, mask=in_k[None, :], other=0.0)
        w = tl.load(w_tile, mask=in_k[:, None], other=0.0)
        acc = tl.dot(a, w, acc)
        a_tile += BLOCK_K
        w_tile += BLOCK_K
    return acc, rm, rn


@triton.jit
def splitk_gemm_kernel(
    a_ptr, w_ptr, c_ptr, ws_ptr, M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, SPLIT_K: tl.constexpr,
):
    acc, rm, rn = tile_partial_sum(a_ptr, w_ptr, M, N, K, tl.program_id(0), tl.program_id(1),
                                   BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, SPLIT_K)
    out = rm[:, None] * N + rn[None, :]
    keep = (rm[:, None] < M) & (rn[None, :] < N)
    if SPLIT_K == 1:
        tl.store(c_ptr + out, acc.to(tl.bfloat16), mask=keep)
    else:
        tl.atomic_add(ws_ptr + out, acc, mask=keep, sem="relaxed")
