"""Two small kernels under ``@flysearch.autotune`` for the compile-only check for AMD archs, and
their workloads (``flysearch tune check tests/tune/amd_kernels.py:softmax_workload ...``).

``softmax_rows`` (Triton) keeps a whole row of ``BLOCK`` fp32 values live across its max and sum: a
wide row on one warp needs more registers than a gfx942 lane has and spills. ``add_tiles`` (FlyDSL)
adds ``BLOCK_M x 64`` tiles; its values per thread grow with ``BLOCK_M`` and shrink with
``num_warps``.

No ``from __future__ import annotations`` here: flydsl reads the ``fx.Constexpr`` annotations of a
``@flyc.jit`` function at run time.
"""

import os

import torch
import triton
import triton.language as tl

import flysearch

STORE = os.environ.get("FLYSEARCH_AUTOTUNE_DB")


@flysearch.autotune(space={"BLOCK": [1024, 8192], "num_warps": [1, 8]}, key=["n_cols"], store=STORE,
                    constraints={"row_fits": lambda c, k, a: c["BLOCK"] >= k["n_cols"]})
@triton.jit
def softmax_rows(x_ptr, y_ptr, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols, other=-float("inf"))
    e = tl.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * n_cols + cols, e / tl.sum(e, axis=0), mask=cols < n_cols)


def softmax_workload(n_cols: int, n_rows: int = 4) -> None:
    x = torch.randn(n_rows, n_cols)
    softmax_rows[(n_rows,)](x, torch.empty_like(x), n_cols)


def _add_tiles():
    import flydsl.compiler as flyc
    import flydsl.expr as fx

    @flyc.kernel
    def add_tiles_kernel(A: fx.Tensor, B: fx.Tensor, C: fx.Tensor, tiled_copy: fx.TiledCopy):
        tid = fx.thread_idx.x
        bid_x, bid_y = fx.block_idx.x, fx.block_idx.y
        thr = tiled_copy.get_slice(tid)
        ga = thr.partition_S(fx.flat_divide(A, tiled_copy.tile_mn)[None, None, bid_x, bid_y])
        gb = thr.partition_S(fx.flat_divide(B, tiled_copy.tile_mn)[None, None, bid_x, bid_y])
        gc = thr.partition_D(fx.flat_divide(C, tiled_copy.tile_mn)[None, None, bid_x, bid_y])
        ra, rb, rc = fx.make_fragment_like(ga), fx.make_fragment_like(gb), fx.make_fragment_like(gc)
        atom = fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32)
        fx.copy(atom, ga, ra)
        fx.copy(atom, gb, rb)
        rc.store(ra.load() + rb.load())
        fx.copy(atom, rc, gc)

    @flyc.jit
    def add_tiles(A: fx.Tensor, B: fx.Tensor, C: fx.Tensor, BLOCK_M: fx.Constexpr[int],
                  num_warps: fx.Constexpr[int], stream: fx.Stream = fx.Stream(None)):  # noqa: B008
        atom = fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32)
        rows = num_warps * 64 // 16
        tc = fx.make_tiled_copy_tv(atom, fx.make_ordered_layout((rows, 16), order=(1, 0)),
                                   fx.make_ordered_layout((BLOCK_M // rows, 4), order=(0, 1)))
        M, N = A.shape.unpack()
        add_tiles_kernel(A, B, C, tc).launch(grid=(M // BLOCK_M, N // 64, 1), block=(rows * 16, 1, 1),
                                             stream=stream)

    return add_tiles


try:
    import flydsl  # noqa: F401
except ImportError:  # the Triton kernel's tests run without flydsl
    add_tiles = None
else:
    add_tiles = flysearch.autotune(space={"BLOCK_M": [16, 512], "num_warps": [1, 4]}, key=["A"],
                                   store=STORE)(_add_tiles())


def add_workload(m: int, n: int = 64) -> None:
    a, b = torch.randn(m, n), torch.randn(m, n)
    add_tiles(a, b, torch.empty_like(a))


@flysearch.autotune(space={"chunk": [64, 256]}, key=["n"], store=STORE)
def double(x, out, n, chunk):
    out[:n] = x[:n] * 2


def cpu_workload(n: int) -> None:
    x = torch.arange(float(n))
    double(x, torch.empty_like(x), n)
