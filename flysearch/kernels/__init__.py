"""Kernel families: their spaces by name, and the space of any stored table.

A kernel family registers a factory for its :class:`~flysearch.space.Space` under the space's name;
tables and studies store that name, so the analytic constraints come back with the space. A table
imported from elsewhere (a Kernel Tuner cache) names no registered space: its space is rebuilt from
the stored parameter domains, with one constraint, ``listed_in_table``, that keeps exactly the
configs the table holds (the source tuner's restrictions, known only by their result).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from flysearch.errors import FlysearchError
from flysearch.space import Constraint, Space, params_from_json

if TYPE_CHECKING:
    from flysearch.tables import GroundTruth

__all__ = ["get_space", "register_space", "space_for_table", "space_names"]

_FACTORIES: dict[str, Callable[[], Space]] = {}


def register_space(name: str, factory: Callable[[], Space]) -> None:
    """Register *factory* as the builder of the space called *name*."""
    _FACTORIES[name] = factory


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


def space_for_table(table: GroundTruth) -> Space:
    """The space a table was measured over, constraints included, bounded by the table's rows.

    A replay can answer only the configs a table holds, so every table's space ends with the
    constraint ``listed_in_table``. For a table imported from elsewhere it is the only one (the
    source tuner's restrictions, known by their result); for a table of a registered kernel family
    it follows the family's own constraints, which charge every rejection they explain, and removes
    only what the table lacks (none of an exhaustive race's feasible configs; the values a table
    measured with other value sets never had).
    """
    _load_builtin()
    name = str(table.meta.space.get("name", ""))
    keys = frozenset(table.rows)
    listed = Constraint(
        "listed_in_table",
        lambda config, shape, arch: config.key in keys,
        doc="only configs the table holds can be replayed",
    )
    if name in _FACTORIES:
        space = _FACTORIES[name]()
        return Space(space.name, space.params, [*space.constraints, listed], kernel=space.kernel)
    return Space(name or table.name, params_from_json(table.meta.space.get("params", [])), [listed])


def _load_builtin() -> None:
    """Import the built-in kernel families so that they register their spaces."""
    import importlib

    for module in _BUILTIN:
        importlib.import_module(module)


_BUILTIN: tuple[str, ...] = (
    "flysearch.kernels.triton_gemm",
    "flysearch.kernels.aiter_hgemm",
    "flysearch.kernels.flydsl_gemm",
)
