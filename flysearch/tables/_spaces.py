"""The space a stored table was measured over: a registered family's, or one rebuilt from the table.

A table imported from elsewhere (a Kernel Tuner cache) names no registered space: its space is rebuilt
from the stored parameter domains, with one constraint, ``listed_in_table``, that keeps exactly the
configs the table holds (the source tuner's restrictions, known only by their result).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flysearch.kernels import get_space, space_names
from flysearch.space import Constraint, Param, Space, params_from_json

if TYPE_CHECKING:
    from flysearch.tables._store import GroundTruth

__all__ = ["space_for_table"]


def space_for_table(table: GroundTruth) -> Space:
    """The space a table was measured over, constraints included, bounded by the table's rows.

    A replay can answer only the configs a table holds, so every table's space ends with the
    constraint ``listed_in_table``. For a table imported from elsewhere it is the only one (the
    source tuner's restrictions, known by their result); for a table of a registered kernel family
    it follows the family's own constraints, which charge every rejection they explain, and removes
    only what the table lacks (none of an exhaustive race's feasible configs; the values a table
    measured with other value sets never had). Such a table's parameters are the family's, widened
    by any value it measured beyond them (a table measured outside flysearch, declared as the
    family's at import): replay searches the table's own configs, never one it lacks.
    """
    name = str(table.meta.space.get("name", ""))
    keys = frozenset(table.rows)
    listed = Constraint(
        "listed_in_table",
        lambda config, shape, arch: config.key in keys,
        doc="only configs the table holds can be replayed",
    )
    own = params_from_json(table.meta.space.get("params", []))
    if name in space_names():
        space = get_space(name)
        params = _widened(space.params, own)
        return Space(space.name, params, [*space.constraints, listed], kernel=space.kernel)
    return Space(name or table.name, own, [listed])


def _widened(family: list[Param], own: list[Param]) -> list[Param]:
    """The family's parameters, each with the values the table measured beyond the family's own
    appended in order (a table raced over the family's space adds none)."""
    measured = {p.name: p.values for p in own}
    widened = []
    for p in family:
        beyond = sorted((v for v in measured.get(p.name, ()) if v not in p.values), key=str)
        widened.append(Param(p.name, (*p.values, *beyond)) if beyond else p)
    return widened
