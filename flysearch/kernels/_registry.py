"""The registry of kernel families' spaces, by name, and of the Triton families a race compiles.

A kernel family registers a factory for its :class:`~flysearch.space.Space` under the space's name;
tables and studies store that name, so the analytic constraints come back with the space. A Triton
family that ``flysearch race`` and the live evaluator can compile and launch also registers its
compile function under its space's name (the race's ``family``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flysearch.errors import FlysearchError
from flysearch.space import Space

__all__ = [
    "get_space",
    "register_space",
    "register_triton_family",
    "space_names",
    "table_kernel",
    "triton_compiler",
    "triton_families",
]

_FACTORIES: dict[str, Callable[[], Space]] = {}
_TABLE_KERNELS: dict[str, str] = {}
_TRITON_COMPILERS: dict[str, Callable[..., Any]] = {}


def register_space(name: str, factory: Callable[[], Space], *, table_kernel: str | None = None) -> None:
    """Register *factory* as the builder of the space called *name*; *table_kernel* is the kernel
    name the family's tables carry (the first part of a raced table's name), *name* by default."""
    _FACTORIES[name] = factory
    _TABLE_KERNELS[name] = table_kernel or name


def table_kernel(name: str) -> str:
    """The kernel name the tables of registered space *name* carry (``triton_gemm`` for
    ``triton_gemm_splitk``)."""
    _load_builtin()
    return _TABLE_KERNELS.get(name, name)


def space_names() -> list[str]:
    _load_builtin()
    return sorted(_FACTORIES)


def get_space(name: str) -> Space:
    """Build the registered space *name*; an unknown name is a :class:`FlysearchError`."""
    _load_builtin()
    try:
        return _FACTORIES[name]()
    except KeyError:
        known = ", ".join(sorted(_FACTORIES)) or "none"
        raise FlysearchError(f"Unknown space {name!r}; registered spaces: {known}.") from None


def register_triton_family(name: str, compile_config: Callable[..., Any]) -> None:
    """Register ``compile_config(config, spec, arch)`` as the compile of Triton family *name* (its
    space's name): the binary that the race's compile workers build and its timer launches."""
    _TRITON_COMPILERS[name] = compile_config


def triton_families() -> list[str]:
    """The Triton families ``flysearch race`` compiles and launches itself."""
    _load_builtin()
    return sorted(_TRITON_COMPILERS)


def triton_compiler(name: str) -> Callable[..., Any]:
    """The compile function of Triton family *name*; an unknown name is a :class:`FlysearchError`."""
    _load_builtin()
    try:
        return _TRITON_COMPILERS[name]
    except KeyError:
        known = ", ".join(sorted(_TRITON_COMPILERS))
        raise FlysearchError(
            f"{name!r} is no Triton family that flysearch races; those are: {known}."
        ) from None


def _load_builtin() -> None:
    """Import the built-in kernel families so that they register their spaces."""
    import importlib

    for module in _BUILTIN:
        importlib.import_module(module)


_BUILTIN: tuple[str, ...] = (
    "flysearch.kernels._triton_gemm",
    "flysearch.kernels._aiter_hgemm",
    "flysearch.kernels._flydsl_gemm",
    "flysearch.kernels._aiter_triton",
    "flysearch.kernels._triton_tma",
    "flysearch.kernels._triton_fused",
)
