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

# The constraint every replayed space ends with; a declared import records it among its constraints.
_LISTED = "listed_in_table"


def space_for_table(table: GroundTruth) -> Space:
    """The space a table was measured over, constraints included, bounded by the table's rows.

    A replay can answer only the configs a table holds, so every table's space ends with the
    constraint ``listed_in_table``. For a table imported from elsewhere it is the only one (the
    source tuner's restrictions, known by their result); for a table of a registered kernel family
    it follows the family's own constraints, which charge every rejection they explain, and removes
    only what the table lacks (none of an exhaustive race's feasible configs). A table the family
    was raced for keeps the value sets of its race: a value the family gained later is not offered
    (a replay could only find it missing, and offering it would change every committed search of
    the table). A table measured outside flysearch and declared as the family's at import takes
    the family's values, widened by any value it measured beyond them. Either way replay searches
    the table's own configs, never one it lacks.
    """
    name = str(table.meta.space.get("name", ""))
    keys = frozenset(table.rows)
    listed = Constraint(
        _LISTED,
        lambda config, shape, arch: config.key in keys,
        doc="only configs the table holds can be replayed",
    )
    own = params_from_json(table.meta.space.get("params", []))
    if name in space_names():
        space = get_space(name)
        declared = _LISTED in table.meta.space.get("constraints", ())
        params = _widened(space.params, own) if declared else _as_raced(space.params, own)
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


def _as_raced(family: list[Param], raced: list[Param]) -> list[Param]:
    """The family's parameters over the value sets a race recorded, in the family's order (a
    parameter the table does not record keeps the family's values)."""
    values = {p.name: p.values for p in raced}
    params = []
    for p in family:
        kept = tuple(v for v in p.values if v in values.get(p.name, p.values))
        params.append(p if kept == p.values else Param(p.name, kept))
    return params
