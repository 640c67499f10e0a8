"""aiter's Triton GEMM as Triton compiles one launch of it, for any target, with no GPU.

What is compiled is aiter's ``_gemm_a16_w16_kernel`` (``aiter.ops.triton._triton_kernels.gemm_a16w16``,
the kernel behind ``aiter.ops.triton.gemm_a16w16``), imported from the installed ``amd-aiter``
(:func:`~flysearch.kernels.import_aiter_module`), as that launch would compile it for a
(config, shape):

* the tile constexprs aiter's ``_get_config`` derives
  (:func:`~flysearch.kernels._aiter_triton.launch_constexprs`);
* ``EVEN_K`` and ``GRID_MN`` from the kernel's own ``@triton.heuristics``, called;
* the signature, constants and attributes from Triton's own launch binder for the target's backend,
  given the arguments the launch passes (``x[M, K]``, ``w[N, K]`` transposed, and ``y[M, N]`` or,
  with split-K, the fp32 partials ``[NUM_KSPLIT, M, N]``): strides of 1 become constants, ints and
  pointers divisible by 16 get ``tt.divisibility``. The same config compiled with plain ``i32``
  strides can spill where the launch does not;
* the compiler options (``num_warps``, ``num_stages`` and, on AMD, ``waves_per_eu``,
  ``matrix_instr_nonkdim``, ``kpack``) from the config.

:func:`launch_arguments` is the one list of what the launch passes: :func:`kernel_source` binds it
to stand-ins of the tensors, and a launcher of the compiled binary passes it with the real ones.
Nothing here copies aiter's code; it imports the kernel and calls its heuristics.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flysearch.kernels._aiter_package import import_aiter_module
from flysearch.kernels._aiter_triton import launch_constexprs

if TYPE_CHECKING:
    from flysearch.space import Shape

__all__ = ["KERNEL_MODULE", "aiter_kernel", "bound_source", "kernel_source", "launch_arguments",
           "stand_in"]

KERNEL_MODULE = "ops.triton._triton_kernels.gemm_a16w16"
KERNEL_NAME = "_gemm_a16_w16_kernel"
_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}


def aiter_kernel() -> tuple[Any, list[dict[str, Callable[[dict[str, Any]], Any]]]]:
    """aiter's kernel as a ``JITFunction`` and its ``@triton.heuristics`` layers, outermost first."""
    from triton.runtime.jit import JITFunction

    fn = getattr(import_aiter_module(KERNEL_MODULE), KERNEL_NAME)
    layers = []
    while not isinstance(fn, JITFunction):
        if hasattr(fn, "values"):
            layers.append(dict(fn.values))
        fn = fn.fn
    return fn, layers


def stand_in(dtype: str, shape: tuple[int, ...]) -> Any:
    """A stand-in for a tensor of *shape* (``dtype`` a ``triton.language`` name, ``"bfloat16"``) that
    Triton's binder specializes like a real one: 16-byte aligned, and a pointer range of its bytes."""
    import triton.language as tl
    from triton.runtime.jit import MockTensor

    elem = getattr(tl, dtype)
    nbytes = elem.primitive_bitwidth // 8
    for dim in shape:
        nbytes *= dim

    class Operand(MockTensor):
        def ptr_range(self) -> int:  # type: ignore[override]
            return nbytes

    return Operand(elem, list(shape))


def launch_arguments(config: Mapping[str, Any], shape: Shape, x: Any, w: Any,
                     out: Any) -> tuple[list[Any], dict[str, Any]]:
    """The positional arguments and the constexprs and options by name that ``gemm_a16w16``'s launch
    of *config* at *shape* passes the kernel: *x* ``[M, K]``, *w* ``[N, K]`` (the kernel reads it
    transposed), *out* ``y[M, N]`` or, with ``NUM_KSPLIT > 1``, the fp32 partials ``[NUM_KSPLIT, M, N]``,
    all contiguous. The heuristics' constexprs (``EVEN_K``, ``GRID_MN``) are included."""
    fn, layers = aiter_kernel()
    tiles = launch_constexprs(config, shape)
    M, N, K, ksplit = shape.M, shape.N, shape.K, tiles["NUM_KSPLIT"]
    args = [x, w, None, out, M, N, K,
            K, 1, 1, K, 0 if ksplit == 1 else M * N, N, 1]  # as gemm_a16w16 passes them
    kwargs = {**tiles, "activation": "", "use_activation": False, "ADD_BIAS": False, "SKIP_REDUCE": False}
    named = {**dict(zip(fn.arg_names, args, strict=False)), **kwargs}
    for layer in layers:
        for name, rule in layer.items():
            kwargs[name] = named[name] = rule(named)
    kwargs.update({k: v for k, v in config.items() if k not in tiles})  # Triton's options
    return args, kwargs


def kernel_source(config: Mapping[str, Any], shape: Shape, target: Any) -> tuple[Any, dict[str, Any]]:
    """The ``ASTSource`` and compiler options aiter's launch of *config* at *shape* compiles for
    Triton's ``GPUTarget`` *target* (see the module docstring)."""
    fn, _ = aiter_kernel()
    dtype = _DTYPES[shape.dtype]
    ksplit = launch_constexprs(config, shape)["NUM_KSPLIT"]
    M, N, K = shape.M, shape.N, shape.K
    out = stand_in(dtype, (M, N)) if ksplit == 1 else stand_in("float32", (ksplit, M, N))
    args, kwargs = launch_arguments(config, shape, stand_in(dtype, (M, K)), stand_in(dtype, (N, K)), out)
    return bound_source(fn, target, args, kwargs)


def bound_source(fn: Any, target: Any, args: Sequence[Any],
                 kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The ``ASTSource`` and compiler options of ``fn[grid](*args, **kwargs)`` compiled for Triton's
    ``GPUTarget`` *target*: the launch's own binder specializes the arguments as it would on that GPU."""
    from triton.compiler import ASTSource, make_backend
    from triton.runtime.jit import create_function_from_signature

    backend = make_backend(target)
    # NOTE(flysearch): the two steps of JITFunction.run before its compile (triton 3.6, pinned <3.7).
    binder = create_function_from_signature(fn.signature, fn.params, backend)
    bound, specialization, options = binder(*args, **kwargs)
    options, signature, constexprs, attrs = fn._pack_args(backend, kwargs, bound, specialization, options)
    return ASTSource(fn, signature, constexprs, attrs), options.__dict__
