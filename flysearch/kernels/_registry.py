"""The registry of kernel families' spaces, by name.

A kernel family registers a factory for its :class:`~flysearch.space.Space` under the space's name;
tables and studies store that name, so the analytic constraints come back with the space.
"""

from __future__ import annotations

from collections.abc import Callable

from flysearch.errors import FlysearchError
from flysearch.space import Space

__all__ = ["get_space", "register_space", "space_names", "table_kernel"]

_FACTORIES: dict[str, Callable[[], Space]] = {}
_TABLE_KERNELS: dict[str, str] = {}


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
