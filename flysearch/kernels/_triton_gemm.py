"""flysearch's own split-K bf16 GEMM in Triton: its space, its constraints and its compile step.

The kernel (``_triton_gemm_jit.py``) computes ``C[M, N] = A[M, K] @ W[N, K]^T`` with an fp32
accumulator, the linear layer ``y = x W^T`` that ``torch.matmul(A, W.t())`` sends to cuBLAS. With
``SPLIT_K > 1`` the K loop is cut into ``SPLIT_K`` stretches whose fp32 partial sums meet in a zeroed
fp32 workspace through atomics; a copy then rounds the workspace to bf16.

This module imports without Triton: the space and its constraints are plain Python, and Triton is
imported only by :func:`kernel_source` and :func:`compile_config`.

The space (``triton_gemm_splitk``) is the cartesian product of BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
SPLIT_K, num_warps and num_stages (6,400 configs); the analytic constraints, in the order they are
charged, are:

========================= ==================================================================
constraint                keeps a config when
========================= ==================================================================
smem_fits                 ``num_stages * (BLOCK_M + BLOCK_N) * BLOCK_K * 2`` bytes fit in one
                          block's shared memory (``arch.max_lds_per_block``)
acc_registers_fit         the fp32 accumulator needs at most 128 registers a thread
warps_fill_tile           8 warps only for tiles of at least 16 x 64 (1,024 outputs: four a
                          thread); on decode shapes 8 warps on 16 x 64 and 16 x 128 tiles are
                          often the fastest, on 16 x 32 never
tile_m_fits_shape         ``BLOCK_M <= 2 * max(16, next_pow2(M))`` (at most one wasted half)
tile_n_fits_shape         ``BLOCK_N <= max(32, next_pow2(N))``
tile_k_fits_shape         ``BLOCK_K <= max(32, next_pow2(K))``
split_k_has_work          every split gets at least two BLOCK_K tiles of K
split_k_needs_few_tiles   split-K only while the grid stays within 8 waves of the SMs
group_m_needs_rows        ``GROUP_M > 1`` only with more than one tile row (else it is GROUP_M=1)
========================= ==================================================================

Example:
    >>> from flysearch.kernels._triton_gemm import make_space
    >>> from flysearch.space import get_arch
    >>> from flysearch.space import Shape
    >>> make_space().size
    6400
    >>> len(make_space().enumerate(Shape(1, 4096, 4096), get_arch("sm_90")).feasible) > 0
    True
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from flysearch.kernels._registry import TritonFamily, register_space, register_triton_family
from flysearch.space import Config, Constraint, Param, Space

if TYPE_CHECKING:
    from flysearch.space import ArchProfile, Shape

__all__ = [
    "KERNEL_NAME",
    "SPACE_NAME",
    "compile_config",
    "gemm_operands",
    "grid",
    "kernel_source",
    "make_space",
    "smem_bytes",
    "spec_key",
]

SPACE_NAME = "triton_gemm_splitk"
KERNEL_NAME = "triton_gemm"

TILE_PARAMS: tuple[str, ...] = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "SPLIT_K")

# NOTE(flysearch): 16 is the smallest M tile of Hopper's wgmma; 256 x 256 is the largest tile whose
# accumulator fits in the registers of 8 warps. Stages 2..5: the unpruned races of the pruning
# audit (lab/benchmarks/results/pruning_audit.md) put the optimum at 5 stages on 6 of 10 development
# shapes, 2.5-6.2% ahead of the best with 4 on three of them. Tables raced while the set stopped at
# 4 keep their own value sets in replay (flysearch.tables.space_for_table).
PARAMS: tuple[Param, ...] = (
    Param("BLOCK_M", (16, 32, 64, 128, 256)),
    Param("BLOCK_N", (32, 64, 128, 256)),
    Param("BLOCK_K", (32, 64, 128, 256)),
    Param("GROUP_M", (1, 8)),
    Param("SPLIT_K", (1, 2, 4, 8, 16)),
    Param("num_warps", (4, 8)),
    Param("num_stages", (2, 3, 4, 5)),
)

_BF16_BYTES = 2
# NOTE(flysearch): 255 registers per thread is the hardware cap; keeping the accumulator at half of
# it leaves room for addresses and the operand fragments, so larger accumulators only spill.
_MAX_ACC_REGS = 128
_MAX_WAVES_SPLIT = 8
_DEFAULT_SMS = 132


def next_pow2(x: int) -> int:
    """The smallest power of two >= *x* (1 for *x* <= 1)."""
    return 1 << max(0, (x - 1).bit_length())


def smem_bytes(config: Config) -> int:
    """Shared memory the pipelined A and W tiles take: stages x (BLOCK_M + BLOCK_N) x BLOCK_K x 2."""
    return int(config["num_stages"]) * (int(config["BLOCK_M"]) + int(config["BLOCK_N"])) * int(
        config["BLOCK_K"]
    ) * _BF16_BYTES


def output_tiles(config: Config | dict[str, Any], shape: Shape) -> int:
    """Output tiles of *shape* for *config*'s BLOCK_M x BLOCK_N."""
    return math.ceil(shape.M / int(config["BLOCK_M"])) * math.ceil(shape.N / int(config["BLOCK_N"]))


def grid(config: Config, shape: Shape) -> tuple[int, int, int]:
    """The launch grid: ``(output tiles, SPLIT_K, 1)``."""
    return (output_tiles(config, shape), int(config["SPLIT_K"]), 1)


def _smem_fits(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return arch is None or smem_bytes(c) <= arch.max_lds_per_block


def acc_registers_fit(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    warp = arch.wave_size if arch is not None else 32
    return int(c["BLOCK_M"]) * int(c["BLOCK_N"]) <= _MAX_ACC_REGS * warp * int(c["num_warps"])


def _warps_fill_tile(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return int(c["num_warps"]) <= 4 or int(c["BLOCK_M"]) * int(c["BLOCK_N"]) >= 16 * 64


def tile_fits(param: str, dim: str, floor: int, slack: int = 1) -> Any:
    def predicate(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
        return shape is None or int(c[param]) <= slack * max(floor, next_pow2(getattr(shape, dim)))

    return predicate


def _split_k_has_work(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    if shape is None:
        return True
    return math.ceil(shape.K / int(c["BLOCK_K"])) >= 2 * int(c["SPLIT_K"])


def _split_k_needs_few_tiles(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    if shape is None or int(c["SPLIT_K"]) == 1:
        return True
    sms = arch.compute_units if arch is not None else _DEFAULT_SMS
    return output_tiles(c, shape) * int(c["SPLIT_K"]) <= _MAX_WAVES_SPLIT * sms


def group_m_needs_rows(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return shape is None or int(c["GROUP_M"]) == 1 or math.ceil(shape.M / int(c["BLOCK_M"])) > 1


CONSTRAINTS: tuple[Constraint, ...] = (
    Constraint("smem_fits", _smem_fits, "pipelined A and W tiles fit in one block's shared memory"),
    Constraint("acc_registers_fit", acc_registers_fit, "fp32 accumulator <= 128 registers a thread"),
    Constraint("warps_fill_tile", _warps_fill_tile, "8 warps only for tiles of at least 16 x 64"),
    Constraint(
        "tile_m_fits_shape", tile_fits("BLOCK_M", "M", 16, slack=2), "BLOCK_M <= 2 * next_pow2(M)"
    ),
    Constraint("tile_n_fits_shape", tile_fits("BLOCK_N", "N", 32), "BLOCK_N <= next_pow2(N)"),
    Constraint("tile_k_fits_shape", tile_fits("BLOCK_K", "K", 32), "BLOCK_K <= next_pow2(K)"),
    Constraint("split_k_has_work", _split_k_has_work, "every split gets >= 2 BLOCK_K tiles"),
    Constraint(
        "split_k_needs_few_tiles", _split_k_needs_few_tiles,
        "split-K only while tiles x SPLIT_K stay within 8 waves of the SMs",
    ),
    Constraint("group_m_needs_rows", group_m_needs_rows, "GROUP_M > 1 needs several tile rows"),
)


def make_space() -> Space:
    """The ``triton_gemm_splitk`` space (6,400 configs before constraints)."""
    return Space(SPACE_NAME, PARAMS, CONSTRAINTS)


register_space(SPACE_NAME, make_space, table_kernel="triton_gemm")


# -- compiling -----------------------------------------------------------------------------------


def spec_key(shape: Shape) -> str:
    """Which specialization of the kernel *shape* needs: N and K divisible by 16 or not.

    Triton compiles one binary per (config, specialization). Only the divisibility of N and K (the
    row strides of C, A and W) changes the code; M is never specialized, so every shape of one
    specialization shares each config's binary.
    """
    return f"n16={int(shape.N % 16 == 0)},k16={int(shape.K % 16 == 0)}"


def _spec_flags(spec: str) -> tuple[bool, bool]:
    parts = dict(p.split("=") for p in spec.split(","))
    return parts["n16"] == "1", parts["k16"] == "1"


def kernel_source(config: Config | dict[str, Any], spec: str) -> Any:
    """The Triton ``ASTSource`` of *config* for specialization *spec* (see :func:`spec_key`)."""
    from flysearch.kernels._triton_gemm_jit import splitk_gemm_kernel

    return splitk_source(splitk_gemm_kernel, {"ws_ptr": "*fp32"}, config, spec)


def splitk_source(kernel: Any, buffers: dict[str, str], config: Config | dict[str, Any], spec: str) -> Any:
    """The ``ASTSource`` of a GEMM kernel with the split-K signature: ``a_ptr, w_ptr, c_ptr``, then
    the pointers of *buffers* (name: Triton type), then ``M, N, K`` and the tile constexprs of
    :data:`TILE_PARAMS`; every pointer 16-byte aligned, N and K as *spec* says."""
    from triton.compiler import ASTSource

    n16, k16 = _spec_flags(spec)
    signature = {"a_ptr": "*bf16", "w_ptr": "*bf16", "c_ptr": "*bf16", **buffers,
                 "M": "i32", "N": "i32", "K": "i32"}
    pointers = 3 + len(buffers)
    signature.update({name: "constexpr" for name in TILE_PARAMS})
    constexprs = {(pointers + 3 + i,): int(config[name]) for i, name in enumerate(TILE_PARAMS)}
    aligned = [(i,) for i in range(pointers)] + ([(pointers + 1,)] if n16 else []) + (
        [(pointers + 2,)] if k16 else []
    )
    attrs = {idx: [["tt.divisibility", 16]] for idx in aligned}
    return ASTSource(kernel, signature, constexprs, attrs)


def target_for(arch: str) -> Any:
    """The Triton ``GPUTarget`` of an NVIDIA arch name (``"sm_90"``)."""
    from triton.backends.compiler import GPUTarget

    return GPUTarget("cuda", int(arch.removeprefix("sm_")), 32)


def compile_config(config: Config | dict[str, Any], spec: str, arch: str = "sm_90") -> Any:
    """Compile (or load from the Triton cache) *config*; returns Triton's ``CompiledKernel``.

    Needs no GPU: the target is named, so CPU worker processes can fill the cache that the process
    timing on the GPU then reads.
    """
    return compile_source(kernel_source(config, spec), config, arch)


def compile_source(source: Any, config: Config | dict[str, Any], arch: str) -> Any:
    """``triton.compile`` of *source* for *arch* with *config*'s num_warps and num_stages."""
    import triton

    options = {"num_warps": int(config["num_warps"]), "num_stages": int(config["num_stages"])}
    return triton.compile(source, target=target_for(arch), options=options)


register_triton_family(TritonFamily(SPACE_NAME, compile_config, lambda shape, sms: spec_key(shape)))


def gemm_operands(a: Any, w: Any, c: Any) -> tuple[int, int, int]:
    """``(M, N, K)`` of ``c = a @ w.T`` on torch tensors: ``a`` ``[M, K]``, ``w`` ``[N, K]`` (a linear
    layer's weight as stored), ``c`` ``[M, N]``, all contiguous bf16 (the launchers' common checks).

    Raises:
        ValueError: on mismatched shapes, another dtype or a non-contiguous tensor.
    """
    import torch

    m, k = a.shape
    n = w.shape[0]
    if w.shape[1] != k or tuple(c.shape) != (m, n):
        raise ValueError(f"shapes do not match: a {tuple(a.shape)}, w {tuple(w.shape)}, "
                         f"c {tuple(c.shape)}; want a [M, K], w [N, K], c [M, N]")
    if any(t.dtype != torch.bfloat16 or not t.is_contiguous() for t in (a, w, c)):
        raise ValueError("a, w and c must be contiguous bf16 tensors")
    return int(m), int(n), int(k)
