"""A small FlyDSL kernel for the evaluator tests: C = A + B in BLOCK_M x 64 tiles (fp32).

No ``from __future__ import annotations`` here: flydsl reads the ``fx.Constexpr`` annotations of a
``@flyc.jit`` function at run time, and string annotations make every constexpr a dynamic value.
"""

from dataclasses import dataclass
from typing import Any

from flysearch.space import Shape


@dataclass(frozen=True)
class ToyCall:
    fn: Any
    args: tuple[Any, ...]
    output: Any
    reference: Any


def _kernels() -> Any:
    import flydsl.compiler as flyc
    import flydsl.expr as fx

    @flyc.kernel
    def toy_add_kernel(A: fx.Tensor, B: fx.Tensor, C: fx.Tensor, tiled_copy: fx.TiledCopy):
        tid = fx.thread_idx.x
        bid_x, bid_y = fx.block_idx.x, fx.block_idx.y
        tile = tiled_copy.tile_mn
        thr = tiled_copy.get_slice(tid)
        ga = thr.partition_S(fx.flat_divide(A, tile)[None, None, bid_x, bid_y])
        gb = thr.partition_S(fx.flat_divide(B, tile)[None, None, bid_x, bid_y])
        gc = thr.partition_D(fx.flat_divide(C, tile)[None, None, bid_x, bid_y])
        ra, rb, rc = fx.make_fragment_like(ga), fx.make_fragment_like(gb), fx.make_fragment_like(gc)
        atom = fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32)
        fx.copy(atom, ga, ra)
        fx.copy(atom, gb, rb)
        rc.store(ra.load() + rb.load())
        fx.copy(atom, rc, gc)

    @flyc.jit
    def toy_add(A: fx.Tensor, B: fx.Tensor, C: fx.Tensor, BLOCK_M: fx.Constexpr[int],
                num_warps: fx.Constexpr[int], stream: fx.Stream = fx.Stream(None)):
        atom = fx.make_copy_atom(fx.UniversalCopy128b(), fx.Float32)
        rows = num_warps * 64 // 16
        tc = fx.make_tiled_copy_tv(atom, fx.make_ordered_layout((rows, 16), order=(1, 0)),
                                   fx.make_ordered_layout((BLOCK_M // rows, 4), order=(0, 1)))
        M, N = A.shape.unpack()
        toy_add_kernel(A, B, C, tc).launch(grid=(M // BLOCK_M, N // 64, 1), block=(rows * 16, 1, 1),
                                           stream=stream)

    return toy_add


def toy_factory(shape: Shape, device: str = "cpu") -> ToyCall:
    import torch

    a = torch.randn(shape.M, shape.N, device=device)
    b = torch.randn(shape.M, shape.N, device=device)
    c = torch.empty(shape.M, shape.N, device=device)
    return ToyCall(_kernels(), (a, b, c), c, lambda: a + b)
