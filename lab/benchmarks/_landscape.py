"""How rugged is a table? Local minima and steepest-descent basins of an exhaustive table.

A fitness-landscape view of a ground-truth table (in the spirit of Schoonhoven et al., 2022,
"Benchmarking optimization algorithms for auto-tuning GPU kernels"): the configs that ran are the
nodes, and two configs are neighbours when they differ in one parameter, either by one step of its
value list (*adjacent*) or by any value (*Hamming*). Per table and neighbourhood,
:func:`landscape_row` counts

* **local minima**: configs no neighbour of which runs faster;
* **descents to 1%**: the share of configs from which a steepest descent (always move to the fastest
  neighbour while it is faster) ends within 1% of the optimum, i.e. the chance that one greedy local
  search from a random start finds it;
* **best trap**: the fastest local minimum that is not within 1%, as a multiple of the optimum (how
  far off a search that stops at the best of the other minima stays).

A table whose optimum sits in a small basin, with near-optimal traps beside it, needs a search that
leaves good regions on purpose; :func:`landscape_section` writes the rows of several tables as a
markdown section.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from flysearch.tables import GroundTruth, space_for_table

__all__ = ["NEIGHBOURHOODS", "descent_ends", "landscape_row", "landscape_section", "neighbours",
           "value_indices"]

NEIGHBOURHOODS = ("adjacent", "Hamming")

Node = tuple[int, ...]


def value_indices(table: GroundTruth) -> dict[Node, float]:
    """The configs that ran, as tuples of value indices of the space's free parameters -> time (ms)."""
    params = space_for_table(table).free_params()
    index_of = [(p.name, {value: i for i, value in enumerate(p.values)}) for p in params]
    return {tuple(index[row.params[name]] for name, index in index_of): float(row.time_ms)
            for row in table.ok_rows()}


def neighbours(node: Node, sizes: tuple[int, ...], kind: str) -> list[Node]:
    """The configs one parameter away from *node*: one value step (``"adjacent"``) or any other
    value (``"Hamming"``), whether or not they ran.

    Example:
        >>> neighbours((0, 1), (2, 3), "adjacent")
        [(1, 1), (0, 0), (0, 2)]
        >>> len(neighbours((0, 1), (2, 3), "Hamming"))
        3
    """
    out = []
    for p, size in enumerate(sizes):
        values = (node[p] - 1, node[p] + 1) if kind == "adjacent" else range(size)
        out += [(*node[:p], v, *node[p + 1:]) for v in values if 0 <= v < size and v != node[p]]
    return out


def descent_ends(times: dict[Node, float], kind: str) -> dict[Node, Node]:
    """Each config's steepest-descent end: the local minimum reached by always moving to the fastest
    neighbour that ran while it is faster.

    Example:
        >>> ends = descent_ends({(0,): 3.0, (1,): 2.0, (2,): 2.5, (3,): 1.0}, "adjacent")
        >>> [ends[(i,)] for i in range(4)]
        [(1,), (1,), (3,), (3,)]
    """
    sizes = tuple(max(node[p] for node in times) + 1 for p in range(len(next(iter(times)))))
    step: dict[Node, Node] = {}
    for node, t in times.items():
        ran = [n for n in neighbours(node, sizes, kind) if n in times]
        best = min(ran, key=times.__getitem__, default=node)
        step[node] = best if times[best] < t else node
    ends: dict[Node, Node] = {}
    for start in times:
        path = [start]
        while path[-1] not in ends and step[path[-1]] != path[-1]:
            path.append(step[path[-1]])
        end = ends.get(path[-1], path[-1])
        for node in path:
            ends[node] = end
    return ends


def landscape_row(table: GroundTruth) -> dict[str, object]:
    """One table's row: its size, its needles (configs within 1% and 5% of the optimum) and, per
    neighbourhood, its local minima (``"<kind> minima"``), the share of descents that end within 1%
    (``"<kind> to 1%"``) and the best trap (``"<kind> trap"``, ``None`` without one)."""
    times = value_indices(table)
    best = min(times.values())
    row: dict[str, object] = {"table": table.name, "configs": len(times),
                              "within 1%": sum(t <= 1.01 * best for t in times.values()),
                              "within 5%": sum(t <= 1.05 * best for t in times.values())}
    for kind in NEIGHBOURHOODS:
        ends = descent_ends(times, kind)
        minima = set(ends.values())
        traps = [times[m] / best for m in minima if times[m] > 1.01 * best]
        row[f"{kind} minima"] = len(minima)
        row[f"{kind} to 1%"] = sum(times[e] <= 1.01 * best for e in ends.values()) / len(times)
        row[f"{kind} trap"] = min(traps, default=None)
    return row


def _cells(row: dict[str, object]) -> str:
    cells = [str(row["table"]), f"{row['configs']:,}", str(row["within 1%"]), str(row["within 5%"])]
    for kind in NEIGHBOURHOODS:
        trap = row[f"{kind} trap"]
        cells += [str(row[f"{kind} minima"]), f"{100 * float(row[f'{kind} to 1%']):.1f}%",  # type: ignore[arg-type]
                  "-" if trap is None else f"{trap:.3f}x"]
    return "| " + " | ".join(cells) + " |"


def landscape_section(title: str, tables: Sequence[GroundTruth]) -> list[str]:
    """A markdown section: a table of the :func:`landscape_row` of each of *tables*, then per
    neighbourhood the median (and the lowest) share of descents that reach 1%."""
    rows = [landscape_row(t) for t in tables]
    lines = [f"## {title}", "",
             "| table | configs that ran | within 1% | within 5% | adjacent: local minima | adjacent: "
             "descents to 1% | adjacent: best trap | Hamming: local minima | Hamming: descents to 1% | "
             "Hamming: best trap |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    lines += [_cells(r) for r in rows]
    for kind in NEIGHBOURHOODS:
        shares = [float(r[f"{kind} to 1%"]) for r in rows]  # type: ignore[arg-type]
        lowest = rows[shares.index(min(shares))]["table"]
        lines.append(f"\nMedian share of {kind} descents that reach 1%: "
                     f"{100 * statistics.median(shares):.1f}% (lowest {100 * min(shares):.1f}%, {lowest}).")
    return [*lines, ""]
