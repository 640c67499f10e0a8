"""flysearch's persistent TMA bf16 GEMM for Hopper in Triton: its space, constraints and launcher.

The kernel (``_triton_tma_jit.py``) computes ``C[M, N] = A[M, K] @ W[N, K]^T`` with an fp32
accumulator, the linear-layer convention of the split-K family (``_triton_gemm.py``). It is
persistent: ``min(SMs, tiles)`` programs loop over the output tiles in a grouped order, and ``A``,
``W`` and ``C`` move through host-built TMA tensor descriptors
(``triton.tools.tensor_descriptor.TensorDescriptor``). Host descriptors are built once per tensor
and passed as kernel arguments; device-side ``tl.make_tensor_descriptor`` would rebuild them in every
program and needs a global-memory allocator (``triton.set_allocator``) set before each launch, which
a CUDA graph would have to capture as well.

This module imports without Triton or torch: the space and its constraints are plain Python, and
Triton is imported only by :func:`kernel_source`, :func:`compile_config` and :func:`gemm_launcher`.

The space (``triton_gemm_tma``) is the cartesian product of BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M,
num_stages, num_warps and EPILOGUE_SUBTILE (864 configs). Warp specialization is not an axis: on
sm_90, Triton 3.6's ``tl.range(..., warp_specialize=True)`` either leaves the loop unpartitioned
(8 warps), fails in the Hopper data-partitioning pass (4 warps, BLOCK_M >= 128, or with a subtiled
epilogue), or gives both consumer warp groups the whole tile's wgmma (4 warps, BLOCK_M = 64); Triton
documents it as Blackwell-only. The analytic constraints, in the order they are charged, are:

========================= ==================================================================
constraint                keeps a config when
========================= ==================================================================
tma_strides_aligned       ``N`` and ``K`` are multiples of 8: TMA needs 16-byte aligned row
                          strides of ``A``, ``W`` (``K * 2`` bytes) and ``C`` (``N * 2``)
smem_fits                 ``num_stages * (BLOCK_M + BLOCK_N) * BLOCK_K * 2`` bytes of operand
                          buffers plus the ``C`` staging tile (``BLOCK_M * BLOCK_N * 2``, half
                          of it with EPILOGUE_SUBTILE) plus 1 KiB of barriers fit in one
                          block's shared memory (``arch.max_lds_per_block``)
acc_registers_fit         the fp32 accumulator needs at most 128 registers a thread
warps_fill_tile           8 warps (two warp groups) only for tiles of at least 64 x 128, so
                          that each warp group's wgmma is at least m64n64
subtile_needs_wide_tile   EPILOGUE_SUBTILE only with BLOCK_N >= 128 (halves of >= 64 columns)
subtile_keeps_layout      no EPILOGUE_SUBTILE on 64-row tiles with 8 warps: the two warp groups
                          already split N, so the halves go through a shared-memory layout
                          conversion that costs more than the staging tile saves (compiled:
                          +16 to +32 KiB, 253,992 bytes at 64 x 256 x 64 x 5 stages)
tile_m_fits_shape         ``BLOCK_M <= max(64, next_pow2(M))``: 64 is wgmma's M
tile_n_fits_shape         ``BLOCK_N <= max(64, next_pow2(N))``
tile_k_fits_shape         ``BLOCK_K <= max(32, next_pow2(K))``
group_m_needs_rows        ``GROUP_M > 1`` only with more than one tile row (else it is GROUP_M=1)
========================= ==================================================================

Example:
    >>> from flysearch.kernels._triton_tma import make_space
    >>> from flysearch.space import get_arch
    >>> from flysearch.space import Shape
    >>> make_space().size
    864
    >>> len(make_space().enumerate(Shape(1, 4096, 4096), get_arch("sm_90")).feasible) > 0
    True
    >>> make_space().reject_reason(make_space().config(BLOCK_M=64, BLOCK_N=64, BLOCK_K=64,
    ...     GROUP_M=1, num_stages=3, num_warps=4, EPILOGUE_SUBTILE=False), Shape(1, 4100, 4096),
    ...     get_arch("sm_90"))
    'tma_strides_aligned'
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flysearch.kernels._registry import TritonFamily, register_space, register_triton_family
from flysearch.kernels._triton_gemm import (
    acc_registers_fit,
    gemm_operands,
    group_m_needs_rows,
    output_tiles,
    tile_fits,
)
from flysearch.space import Config, Constraint, Param, Space

if TYPE_CHECKING:
    from flysearch.space import ArchProfile, Shape

__all__ = [
    "KERNEL_NAME",
    "SPACE_NAME",
    "bind",
    "compile_config",
    "compiled_resources",
    "gemm_launcher",
    "grid",
    "kernel_source",
    "make_space",
    "race_spec",
    "smem_bytes",
    "spec_key",
]

SPACE_NAME = "triton_gemm_tma"
KERNEL_NAME = "triton_gemm_tma"

TILE_PARAMS: tuple[str, ...] = ("BLOCK_M", "BLOCK_N", "BLOCK_K", "GROUP_M", "EPILOGUE_SUBTILE")

# NOTE(flysearch): BLOCK_M starts at 64, the M of one warp group's wgmma (a smaller tile wastes the
# instruction); 256 x 256 is the largest tile whose fp32 accumulator fits 8 warps' registers and
# 256 is also TMA's largest box side. BLOCK_K 32..128 spans 64- to 256-byte rows of the 128-byte
# swizzled TMA box (Triton splits wider rows into several copies). num_stages goes to 5 because the
# split-K tables measured outside this project (issue 45) put the optimum at 5 on 6 of 8 shapes.
# GROUP_M 1 or 8: grouping either off or at the depth Triton's GEMMs use for L2 reuse. 4 or 8 warps:
# one or two consumer warp groups. EPILOGUE_SUBTILE halves the C staging tile, which buys a stage
# on the largest tiles (128 x 256 x 64 goes from 3 to 4 stages). Warp specialization is left out:
# see the module docstring.
PARAMS: tuple[Param, ...] = (
    Param("BLOCK_M", (64, 128, 256)),
    Param("BLOCK_N", (64, 128, 256)),
    Param("BLOCK_K", (32, 64, 128)),
    Param("GROUP_M", (1, 8)),
    Param("num_stages", (2, 3, 4, 5)),
    Param("num_warps", (4, 8)),
    Param("EPILOGUE_SUBTILE", (False, True)),
)

_BF16_BYTES = 2
# NOTE(flysearch): Triton reports 24 bytes of mbarriers on top of the buffers for the configs
# compiled (``metadata.shared``); 1 KiB leaves room for the alignment of larger pipelines.
_BARRIER_BYTES = 1024
# NOTE(flysearch): as in the split-K family: half of the 255-register cap for the accumulator.
# NOTE(flysearch): TMA's global strides must be multiples of 16 bytes: 8 bf16 elements.
_TMA_ALIGN_ELEMS = 8
_DEFAULT_SMS = 132



def smem_bytes(config: Config | dict[str, Any]) -> int:
    """Shared memory the kernel takes: pipelined A and W tiles, the C staging tile, barriers."""
    bm, bn, bk = int(config["BLOCK_M"]), int(config["BLOCK_N"]), int(config["BLOCK_K"])
    operands = int(config["num_stages"]) * (bm + bn) * bk * _BF16_BYTES
    staging = bm * bn * _BF16_BYTES // (2 if config["EPILOGUE_SUBTILE"] else 1)
    return operands + staging + _BARRIER_BYTES



def grid(config: Config | dict[str, Any], shape: Shape, sms: int = _DEFAULT_SMS) -> tuple[int, int, int]:
    """The persistent launch grid: ``(min(sms, output tiles), 1, 1)``."""
    return (min(sms, output_tiles(config, shape)), 1, 1)


def _tma_strides_aligned(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return shape is None or (shape.N % _TMA_ALIGN_ELEMS == 0 and shape.K % _TMA_ALIGN_ELEMS == 0)


def _smem_fits(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return arch is None or smem_bytes(c) <= arch.max_lds_per_block



def _warps_fill_tile(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return int(c["num_warps"]) <= 4 or int(c["BLOCK_M"]) * int(c["BLOCK_N"]) >= 64 * 128


def _subtile_needs_wide_tile(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return not c["EPILOGUE_SUBTILE"] or int(c["BLOCK_N"]) >= 128


def _subtile_keeps_layout(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
    return not c["EPILOGUE_SUBTILE"] or int(c["num_warps"]) <= 4 or int(c["BLOCK_M"]) >= 128




CONSTRAINTS: tuple[Constraint, ...] = (
    Constraint(
        "tma_strides_aligned", _tma_strides_aligned,
        "N and K multiples of 8 (TMA needs 16-byte aligned row strides)",
    ),
    Constraint(
        "smem_fits", _smem_fits,
        "pipelined A and W tiles plus the C staging tile fit in one block's shared memory",
    ),
    Constraint("acc_registers_fit", acc_registers_fit, "fp32 accumulator <= 128 registers a thread"),
    Constraint("warps_fill_tile", _warps_fill_tile, "8 warps only for tiles of at least 64 x 128"),
    Constraint(
        "subtile_needs_wide_tile", _subtile_needs_wide_tile, "EPILOGUE_SUBTILE only with BLOCK_N >= 128"
    ),
    Constraint(
        "subtile_keeps_layout", _subtile_keeps_layout,
        "no EPILOGUE_SUBTILE on 64-row tiles with 8 warps (the halves need a layout conversion)",
    ),
    Constraint("tile_m_fits_shape", tile_fits("BLOCK_M", "M", 64), "BLOCK_M <= max(64, next_pow2(M))"),
    Constraint("tile_n_fits_shape", tile_fits("BLOCK_N", "N", 64), "BLOCK_N <= max(64, next_pow2(N))"),
    Constraint("tile_k_fits_shape", tile_fits("BLOCK_K", "K", 32), "BLOCK_K <= max(32, next_pow2(K))"),
    Constraint("group_m_needs_rows", group_m_needs_rows, "GROUP_M > 1 needs several tile rows"),
)


def make_space() -> Space:
    """The ``triton_gemm_tma`` space (864 configs before constraints)."""
    return Space(SPACE_NAME, PARAMS, CONSTRAINTS)


register_space(SPACE_NAME, make_space, table_kernel=KERNEL_NAME)


# -- compiling -----------------------------------------------------------------------------------


def spec_key(shape: Shape) -> str:
    """Which specialization of the kernel *shape* needs, as Triton's JIT would pick it.

    ``M``, ``N`` and ``K`` are the kernel's only integer arguments; the JIT specializes an integer
    that equals 1 into a constant and marks one divisible by 16, so ``m`` is ``1``, ``16`` or ``0``
    and ``n16``/``k16`` say whether N and K are multiples of 16. The descriptors carry no
    specialization beyond their block shapes, which the config fixes.
    """
    m = 1 if shape.M == 1 else (16 if shape.M % 16 == 0 else 0)
    return f"m={m},n16={int(shape.N % 16 == 0)},k16={int(shape.K % 16 == 0)}"


def race_spec(shape: Shape, sms: int) -> str:
    """:func:`spec_key` of *shape* on a GPU with *sms* SMs: the tile loop's stride is a compile-time
    constant, so a binary serves one SM count (``"m=1,n16=1,k16=1,sms=132"``)."""
    return f"{spec_key(shape)},sms={sms}"


def _spec_parts(spec: str) -> dict[str, str]:
    return dict(p.split("=") for p in spec.split(","))


def _spec_sms(spec: str, sms: int) -> int:
    """The SM count *spec* names (:func:`race_spec`), else *sms*."""
    return int(_spec_parts(spec).get("sms", sms))


def _c_block(config: Config | dict[str, Any]) -> tuple[int, int]:
    bn = int(config["BLOCK_N"])
    return int(config["BLOCK_M"]), bn // 2 if config["EPILOGUE_SUBTILE"] else bn


def _constexprs(config: Config | dict[str, Any], sms: int) -> dict[str, Any]:
    return {
        "BLOCK_M": int(config["BLOCK_M"]), "BLOCK_N": int(config["BLOCK_N"]),
        "BLOCK_K": int(config["BLOCK_K"]), "GROUP_M": int(config["GROUP_M"]), "NUM_SMS": sms,
        "WARP_SPECIALIZE": False, "EPILOGUE_SUBTILE": bool(config["EPILOGUE_SUBTILE"]),
    }


def kernel_source(config: Config | dict[str, Any], spec: str, sms: int = _DEFAULT_SMS) -> Any:
    """The Triton ``ASTSource`` of *config* for specialization *spec* (see :func:`spec_key`) on a
    GPU with *sms* SMs (the tile loop's stride is a compile-time constant; an ``sms`` in *spec*,
    :func:`race_spec`, wins)."""
    from triton.compiler import ASTSource

    from flysearch.kernels._triton_tma_jit import tma_gemm_kernel

    parts = _spec_parts(spec)
    sms = _spec_sms(spec, sms)
    bm, bn, bk = int(config["BLOCK_M"]), int(config["BLOCK_N"]), int(config["BLOCK_K"])
    cm, cn = _c_block(config)
    signature = {
        "a_desc": f"tensordesc<bf16[{bm}, {bk}]>", "w_desc": f"tensordesc<bf16[{bn}, {bk}]>",
        "c_desc": f"tensordesc<bf16[{cm}, {cn}]>", "M": "i32", "N": "i32", "K": "i32",
    }
    kwargs = _constexprs(config, sms)
    signature.update({name: "constexpr" for name in kwargs})
    constexprs: dict[tuple[int, ...], Any] = {(6 + i,): v for i, v in enumerate(kwargs.values())}
    if parts["m"] == "1":
        signature["M"] = "constexpr"
        constexprs[(3,)] = 1
    aligned = ([(3,)] if parts["m"] == "16" else []) + ([(4,)] if parts["n16"] == "1" else []) + (
        [(5,)] if parts["k16"] == "1" else []
    )
    attrs = {idx: [["tt.divisibility", 16]] for idx in aligned}
    return ASTSource(tma_gemm_kernel, signature, constexprs, attrs)


def target_for(arch: str) -> Any:
    """The Triton ``GPUTarget`` of an NVIDIA arch name (``"sm_90"``)."""
    from triton.backends.compiler import GPUTarget

    return GPUTarget("cuda", int(arch.removeprefix("sm_")), 32)


def compile_config(
    config: Config | dict[str, Any], spec: str, arch: str = "sm_90", sms: int = _DEFAULT_SMS
) -> Any:
    """Compile (or load from the Triton cache) *config*; returns Triton's ``CompiledKernel``.

    Needs no GPU: the target is named, so CPU worker processes can fill the Triton cache. *spec*
    is :func:`spec_key`'s or :func:`race_spec`'s (whose SM count replaces *sms*).
    """
    import triton

    options = {"num_warps": int(config["num_warps"]), "num_stages": int(config["num_stages"])}
    return triton.compile(kernel_source(config, spec, sms), target=target_for(arch), options=options)


def compiled_resources(kernel: Any) -> dict[str, int | None]:
    """``{"shared", "registers", "spills"}`` of a ``CompiledKernel``, without a GPU.

    ``shared`` is Triton's ``metadata.shared``; registers come from ``cuobjdump`` (bundled with
    Triton) on the cubin, since ``CompiledKernel.n_regs`` is only filled when a GPU loads the
    binary. ``None`` where cuobjdump is missing or its output is not understood.
    """
    import os
    import re
    import subprocess
    import tempfile

    import triton

    out: dict[str, int | None] = {"shared": int(kernel.metadata.shared), "registers": None,
                                  "spills": None}
    tool = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "cuobjdump")
    cubin = kernel.asm.get("cubin") if hasattr(kernel, "asm") else None
    if not cubin or not os.path.exists(tool):
        return out
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        text = subprocess.run([tool, "--dump-resource-usage", f.name], capture_output=True,
                              text=True, check=False).stdout
    regs = re.search(r"REG:(\d+)", text)
    local = re.search(r"LOCAL:(\d+)", text)
    out["registers"] = int(regs.group(1)) if regs else None
    out["spills"] = int(local.group(1)) if local else None
    return out


# -- launching -----------------------------------------------------------------------------------


def bind(kernel: Any, a: Any, w: Any, c: Any, config: Config | dict[str, Any],
         spec: str) -> Callable[[], None]:
    """A zero-argument launch of ``c = a @ w.T`` by *kernel*, the binary of *config* compiled for
    *spec* (:func:`race_spec`) and loaded from the Triton cache, on CUDA tensors: the race's timer
    launches exactly what its compile workers built (no JIT, whose cache key could differ). The TMA
    descriptors are built once here, so the launch can be captured in a CUDA graph.
    """
    from triton.tools.tensor_descriptor import TensorDescriptor

    m, n, k = gemm_operands(a, w, c)
    if n % _TMA_ALIGN_ELEMS or k % _TMA_ALIGN_ELEMS:
        raise ValueError(f"TMA needs N and K multiples of {_TMA_ALIGN_ELEMS}; got N={n}, K={k}")
    bm, bn, bk = int(config["BLOCK_M"]), int(config["BLOCK_N"]), int(config["BLOCK_K"])
    descs = (TensorDescriptor.from_tensor(a, [bm, bk]), TensorDescriptor.from_tensor(w, [bn, bk]),
             TensorDescriptor.from_tensor(c, list(_c_block(config))))
    sms = _spec_sms(spec, _DEFAULT_SMS)
    args = (*descs, m, n, k, *_constexprs(config, sms).values())
    runner = kernel[(min(sms, math.ceil(m / bm) * math.ceil(n / bn)), 1, 1)]

    def launch() -> None:
        runner(*args)

    return launch


register_triton_family(TritonFamily(SPACE_NAME, compile_config, race_spec, bind=bind, min_sm=90, needs="TMA"))


def gemm_launcher(a: Any, w: Any, c: Any, config: Config | dict[str, Any],
                  programs: int | None = None) -> Callable[[], None]:
    """A zero-argument launch of ``c = a @ w.T`` for *config* on CUDA tensors.

    Builds the three TMA descriptors once; the returned callable only launches, so it can be
    captured in a CUDA graph and replayed (the first call compiles through Triton's JIT cache, so
    call it once before capturing).

    Args:
        a: ``[M, K]`` bf16, contiguous, on a CUDA device.
        w: ``[N, K]`` bf16, contiguous (a linear layer's weight as stored).
        c: ``[M, N]`` bf16, contiguous; overwritten.
        config: A config of :func:`make_space` (num_warps and num_stages included).
        programs: How many programs walk the tiles (1 to the tile count; the tile loop's stride is
            this count). ``None``: ``min(SMs, tiles)``, one program per SM, as the races ran.

    Raises:
        ValueError: on mismatched shapes or dtypes, non-contiguous tensors, N or K not a
            multiple of 8 (TMA's 16-byte stride rule; see ``tma_strides_aligned``), or a program
            count outside 1 to the tile count.
    """
    import torch
    from triton.tools.tensor_descriptor import TensorDescriptor

    from flysearch.kernels._triton_tma_jit import tma_gemm_kernel

    m, n, k = gemm_operands(a, w, c)
    if n % _TMA_ALIGN_ELEMS or k % _TMA_ALIGN_ELEMS:
        raise ValueError(f"TMA needs N and K multiples of {_TMA_ALIGN_ELEMS}; got N={n}, K={k}")

    bm, bn, bk = int(config["BLOCK_M"]), int(config["BLOCK_N"]), int(config["BLOCK_K"])
    a_desc = TensorDescriptor.from_tensor(a, [bm, bk])
    w_desc = TensorDescriptor.from_tensor(w, [bn, bk])
    c_desc = TensorDescriptor.from_tensor(c, list(_c_block(config)))
    tiles = math.ceil(m / bm) * math.ceil(n / bn)
    if programs is None:
        stride = torch.cuda.get_device_properties(a.device).multi_processor_count
        programs = min(stride, tiles)
    elif not 1 <= programs <= tiles:
        raise ValueError(f"programs must be 1 to the {tiles} tiles; got {programs}")
    else:
        stride = programs
    kwargs = _constexprs(config, stride)
    warps, stages = int(config["num_warps"]), int(config["num_stages"])
    kernel = tma_gemm_kernel[(programs,)]

    def launch() -> None:
        kernel(a_desc, w_desc, c_desc, m, n, k, **kwargs, num_warps=warps, num_stages=stages)

    return launch
