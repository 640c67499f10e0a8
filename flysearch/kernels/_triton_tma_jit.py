"""The Triton source of the persistent TMA GEMM (imported only where Triton is installed).

``C[M, N] = A[M, K] @ W[N, K]^T`` in bf16 with an fp32 accumulator, the same linear-layer convention
as the split-K kernel (``_triton_gemm_jit.py``): ``A`` holds the tokens row by row and ``W`` the weight
as it is stored (``out_features x in_features``).

The kernel is persistent: the host launches ``min(NUM_SMS, tiles)`` programs and program ``p`` walks
output tiles ``p, p + NUM_SMS, p + 2 * NUM_SMS, ...`` in a grouped order (``GROUP_M`` tile rows share
the same stretch of ``W`` while it sits in L2). Every operand moves through a host-built tensor
descriptor (TMA): ``A`` and ``W`` tiles of ``[BLOCK_M, BLOCK_K]`` and ``[BLOCK_N, BLOCK_K]`` come in
through the async copy engine, and ``W``'s tile is transposed in shared memory for ``tl.dot``. TMA
fills rows and columns past ``M``, ``N`` and ``K`` with zeros and drops them at the store, so the
kernel needs no masks.

The tile loop and the K loop are flattened into one software-pipelined loop (``num_stages`` copies
in flight), so the next tile's first loads overlap this tile's epilogue. ``WARP_SPECIALIZE`` asks
Triton to split the tile loop into a producer partition (TMA loads) and consumer warps (wgmma, the
epilogue) and pipelines only the K loop; the space keeps it off, because Triton 3.6 does not
warp-specialize this loop correctly on sm_90 (see ``_triton_tma.py``), and the flag stays for
Blackwell, where Triton supports it.
With ``EPILOGUE_SUBTILE`` the accumulator is stored as two ``[BLOCK_M, BLOCK_N / 2]`` halves, which
halves the shared-memory staging tile of ``C``.
"""

from __future__ import annotations

import triton
import triton.language as tl

__all__ = ["tma_gemm_kernel"]


@triton.jit
def _tile_origin(tile, tiles_m, tiles_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                 GROUP_M: tl.constexpr):
    # Grouped tile order: walk GROUP_M tile rows column by column.
    per_group = GROUP_M * tiles_n
    group = tile // per_group
    row0 = group * GROUP_M
    rows_here = tl.minimum(tiles_m - row0, GROUP_M)
    tile_m = row0 + (tile % per_group) % rows_here
    tile_n = (tile % per_group) // rows_here
    return tile_m * BLOCK_M, tile_n * BLOCK_N


@triton.jit
def _store_c(c_desc, acc, off_m, off_n, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
             EPILOGUE_SUBTILE: tl.constexpr):
    if EPILOGUE_SUBTILE:
        # [BM, BN] -> [BM, 2, BN/2] -> [BM, BN/2, 2], then split the last axis into two halves.
        halves = tl.permute(tl.reshape(acc, (BLOCK_M, 2, BLOCK_N // 2)), (0, 2, 1))
        left, right = tl.split(halves)
        c_desc.store([off_m, off_n], left.to(tl.bfloat16))
        c_desc.store([off_m, off_n + BLOCK_N // 2], right.to(tl.bfloat16))
    else:
        c_desc.store([off_m, off_n], acc.to(tl.bfloat16))


@triton.jit
def tma_gemm_kernel(
    a_desc, w_desc, c_desc, M, N, K,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
    GROUP_M: tl.constexpr, NUM_SMS: tl.constexpr,
    WARP_SPECIALIZE: tl.constexpr, EPILOGUE_SUBTILE: tl.constexpr,
):
    first = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    k_tiles = tl.cdiv(K, BLOCK_K)
    tiles = tiles_m * tiles_n

    for tile in tl.range(first, tiles, NUM_SMS, flatten=not WARP_SPECIALIZE,
                         warp_specialize=WARP_SPECIALIZE):
        off_m, off_n = _tile_origin(tile, tiles_m, tiles_n, BLOCK_M, BLOCK_N, GROUP_M)
        acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
        for kt in range(k_tiles):
            off_k = kt * BLOCK_K
            a = a_desc.load([off_m, off_k])
            w = w_desc.load([off_n, off_k])
            acc = tl.dot(a, w.T, acc)
        _store_c(c_desc, acc, off_m, off_n, BLOCK_M, BLOCK_N, EPILOGUE_SUBTILE)
