"""The fused split-K bf16 GEMM in Triton: split-K whose reduction runs inside its one launch.

flysearch's split-K family (``_triton_gemm.py``) reduces its splits in three launches: a zeroing of
the fp32 workspace, the GEMM (each split adds its partial sum into the workspace with atomics) and
a copy that rounds the workspace into the bf16 output. On decode and K-heavy shapes the GEMM takes
tens of microseconds, so the two extra launches are a share of the time that cuBLAS does not pay. In this
family the program that finishes a tile last, counted on a per-tile counter, rounds the tile into
``C`` and zeroes its workspace tile and counter behind it (``_triton_fused_jit.py``): one launch,
and the workspace stays zero between launches.

The space (``triton_gemm_splitk_fused``) is the split-K family's with ``SPLIT_K`` from 2 (with one
split there is nothing to reduce, and the kernel is the split-K family's ``SPLIT_K = 1``), under
the same constraints: 5,120 configs.

Example:
    >>> from flysearch.kernels._triton_fused import make_space
    >>> from flysearch.space import Shape, get_arch
    >>> make_space().size
    5120
    >>> len(make_space().enumerate(Shape(4, 576, 7168), get_arch("sm_90")).feasible) > 0
    True
"""

from __future__ import annotations

from typing import Any

from flysearch.kernels._registry import TritonFamily, register_space, register_triton_family
from flysearch.kernels._triton_gemm import (
    CONSTRAINTS,
    PARAMS,
    compile_source,
    grid,
    spec_key,
    splitk_source,
)
from flysearch.space import Config, Param, Space

__all__ = ["KERNEL_NAME", "SPACE_NAME", "compile_config", "grid", "kernel_source", "make_space"]

SPACE_NAME = "triton_gemm_splitk_fused"
KERNEL_NAME = "triton_gemm_fused"

SPLITS: tuple[int, ...] = (2, 4, 8, 16)

_PARAMS: tuple[Param, ...] = tuple(Param(p.name, SPLITS) if p.name == "SPLIT_K" else p for p in PARAMS)


def make_space() -> Space:
    """The ``triton_gemm_splitk_fused`` space (5,120 configs before constraints)."""
    return Space(SPACE_NAME, _PARAMS, CONSTRAINTS)


register_space(SPACE_NAME, make_space, table_kernel=KERNEL_NAME)


def kernel_source(config: Config | dict[str, Any], spec: str) -> Any:
    """The Triton ``ASTSource`` of *config* for the split-K family's specialization *spec*
    (``"n16=1,k16=1"``: whether N and K are multiples of 16)."""
    from flysearch.kernels._triton_fused_jit import fused_splitk_gemm_kernel

    return splitk_source(fused_splitk_gemm_kernel, {"ws_ptr": "*fp32", "arrivals_ptr": "*i32"}, config, spec)


def compile_config(config: Config | dict[str, Any], spec: str, arch: str = "sm_90") -> Any:
    """Compile (or load from the Triton cache) *config* for *arch*; no GPU needed."""
    return compile_source(kernel_source(config, spec), config, arch)


register_triton_family(TritonFamily(SPACE_NAME, compile_config, lambda shape, sms: spec_key(shape),
                                    reduces_in_launch=True))
