"""aiter's Triton GEMM on NVIDIA GPUs: the Triton family ``flysearch race run --space
aiter_triton_gemm_cuda`` races (its space, its binary per shape, its launch).

The kernel is aiter's own ``_gemm_a16_w16_kernel`` (installed ``amd-aiter``), compiled as aiter's
``gemm_a16w16`` launch compiles it (:mod:`flysearch.kernels._aiter_triton_source`), for a CUDA target
with no GPU, so the race's CPU workers fill the Triton cache. On a GPU, :func:`bind` launches that
binary: with ``NUM_KSPLIT > 1`` it writes fp32 partials that aiter's second kernel,
``_gemm_a16w16_reduce_kernel``, sums into ``C`` (a small kernel the timer compiles through Triton's
JIT at its first launch: the only part of the family that needs the GPU).

The space (``aiter_triton_gemm_cuda``) is the split-K family's (``triton_gemm_splitk``) under aiter's
key names (BLOCK_M -> BLOCK_SIZE_M, ..., SPLIT_K -> NUM_KSPLIT) and its rules, read through the
same renaming: both kernels race the same configs, so their tables compare config for config.
The AMD-only options of aiter's space (``waves_per_eu``, ``matrix_instr_nonkdim``, ``kpack``) mean
nothing on NVIDIA and ``cache_modifier`` is left unset. Its tables carry the kernel name
``aiter_triton_gemm``.

Example:
    >>> from flysearch.kernels._aiter_triton_cuda import make_space, spec_key
    >>> from flysearch.space import Shape, get_arch
    >>> make_space().size
    6400
    >>> len(make_space().enumerate(Shape(1, 6144, 4096), get_arch("sm_90")).feasible) > 0
    True
    >>> spec_key(Shape(64, 6144, 4096), 132)
    '64x6144x4096'
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flysearch.kernels._aiter_triton import launch_constexprs
from flysearch.kernels._registry import TritonFamily, register_space, register_triton_family
from flysearch.kernels._triton_gemm import CONSTRAINTS, PARAMS, gemm_operands, next_pow2
from flysearch.space import Config, Constraint, Param, Space, parse_shape

if TYPE_CHECKING:
    from flysearch.space import ArchProfile, Shape

__all__ = ["FROM_SPLITK", "KERNEL_NAME", "SPACE_NAME", "bind", "compile_config", "make_space", "spec_key"]

SPACE_NAME = "aiter_triton_gemm_cuda"
KERNEL_NAME = "aiter_triton_gemm"

FROM_SPLITK: dict[str, str] = {
    "BLOCK_M": "BLOCK_SIZE_M", "BLOCK_N": "BLOCK_SIZE_N", "BLOCK_K": "BLOCK_SIZE_K",
    "GROUP_M": "GROUP_SIZE_M", "SPLIT_K": "NUM_KSPLIT", "num_warps": "num_warps", "num_stages": "num_stages",
}
"""The split-K family's parameter names -> aiter's."""

_TO_SPLITK = {aiter: own for own, aiter in FROM_SPLITK.items()}
# NOTE(flysearch): the reduce kernel's tile, as aiter's gemm_a16w16 launches it.
_REDUCE_BLOCK = 32


def _renamed(constraint: Constraint) -> Constraint:
    """*constraint* of the split-K space, read on a config with aiter's key names."""
    predicate = constraint.predicate

    def keeps(c: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
        return bool(predicate({_TO_SPLITK[k]: v for k, v in c.items}, shape, arch))

    return Constraint(constraint.name, keeps, constraint.doc)


def make_space() -> Space:
    """The ``aiter_triton_gemm_cuda`` space (6,400 configs before its rules)."""
    params = [Param(FROM_SPLITK[p.name], p.values) for p in PARAMS]
    return Space(SPACE_NAME, params, [_renamed(c) for c in CONSTRAINTS])


register_space(SPACE_NAME, make_space, table_kernel=KERNEL_NAME)


def spec_key(shape: Shape, sms: int = 0) -> str:
    """Which binary *shape* needs: every shape its own (``"64x6144x4096"``), since the launch passes
    ``GRID_MN`` (the output tiles) and ``SPLITK_BLOCK_SIZE`` (``cdiv(K, NUM_KSPLIT)``) as constexprs.
    The SM count does not enter."""
    return f"{shape.M}x{shape.N}x{shape.K}"


def compile_config(config: Config | dict[str, Any], spec: str, arch: str = "sm_90") -> Any:
    """Compile (or load from the Triton cache) aiter's kernel for *config* at the shape *spec*
    names, for the NVIDIA *arch* (``"sm_90"``); returns Triton's ``CompiledKernel``. Needs no GPU."""
    import triton
    from triton.backends.compiler import GPUTarget

    from flysearch.kernels._aiter_triton_source import kernel_source

    params = config.as_dict() if isinstance(config, Config) else dict(config)
    target = GPUTarget("cuda", int(arch.removeprefix("sm_")), 32)
    source, options = kernel_source(params, parse_shape(spec), target)
    return triton.compile(source, target=target, options=options)


_PARTIALS: weakref.WeakValueDictionary[tuple[int, int, int, int], Any] = weakref.WeakValueDictionary()


def _partials(c: Any, splits: int) -> Any:
    """The fp32 partial buffer ``[splits, M, N]`` of output *c*: one for every launch bound to *c*
    while one of them lives (the timer binds a config once per rotating input set)."""
    import torch

    key = (c.data_ptr(), splits, *c.shape)
    buf = _PARTIALS.get(key)
    if buf is None:
        buf = torch.empty((splits, *c.shape), dtype=torch.float32, device=c.device)
        _PARTIALS[key] = buf
    return buf


def bind(kernel: Any, a: Any, w: Any, c: Any, config: Config | dict[str, Any],
         spec: str) -> Callable[[], None]:
    """A zero-argument launch of ``c = a @ w.T`` by *kernel*, the binary of *config* compiled for
    the shape *spec* names and loaded from the Triton cache, on CUDA tensors, plus aiter's reduce
    kernel when the config splits K. Everything is allocated here, so the launch can be captured in
    a CUDA graph (run it once first: the reduce kernel compiles at its first launch).

    Raises:
        ValueError: the tensors are not the shape *spec* names, not bf16 or not contiguous.
    """
    from flysearch.kernels._aiter_triton_source import aiter_kernel, launch_arguments

    shape = parse_shape(spec)
    m, n, k = gemm_operands(a, w, c)
    if (m, n, k) != (shape.M, shape.N, shape.K):
        raise ValueError(f"the binary was compiled for {spec}; the tensors are {m}x{n}x{k}")
    params = config.as_dict() if isinstance(config, Config) else dict(config)
    tiles = launch_constexprs(params, shape)
    splits = tiles["NUM_KSPLIT"]
    out = c if splits == 1 else _partials(c, splits)
    args, kwargs = launch_arguments(params, shape, a, w, out)
    fn, _ = aiter_kernel()
    full = [*args, *(kwargs[name] for name in fn.arg_names[len(args):])]
    grid = splits * math.ceil(m / tiles["BLOCK_SIZE_M"]) * math.ceil(n / tiles["BLOCK_SIZE_N"])
    runner = kernel[(grid, 1, 1)]
    if splits == 1:
        def launch() -> None:
            runner(*full)

        return launch

    from flysearch.kernels._aiter_package import import_aiter_module

    reduce = import_aiter_module("ops.triton._triton_kernels.gemm_a16w16")._gemm_a16w16_reduce_kernel
    reduce_grid = (math.ceil(m / _REDUCE_BLOCK), math.ceil(n / _REDUCE_BLOCK))
    reduce_args = (None, out, c, m, n, *out.stride(), *c.stride(), _REDUCE_BLOCK, _REDUCE_BLOCK,
                   math.ceil(k / tiles["SPLITK_BLOCK_SIZE"]), next_pow2(splits))
    reducer = reduce[reduce_grid]

    def launch_split() -> None:
        runner(*full)
        reducer(*reduce_args, activation="", use_activation=False, ADD_BIAS=False)

    return launch_split


register_triton_family(TritonFamily(SPACE_NAME, compile_config, spec_key, bind=bind))
