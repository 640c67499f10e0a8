"""How rugged is each table? Local minima and descent basins of the exhaustive tables.

    python benchmarks/landscape.py --out benchmarks/results/landscape.md

A fitness-landscape view of the ground-truth tables (in the spirit of Schoonhoven et al., 2022,
"Benchmarking optimization algorithms for auto-tuning GPU kernels"): the configs that ran are the
nodes, and two configs are neighbours when they differ in one parameter, either by one step of its
value list (*adjacent*) or by any value (*Hamming*). For each table and each neighbourhood:

* **local minima**: configs no neighbour of which runs faster;
* **descents to 1%**: the share of configs from which a steepest descent (always move to the fastest
  neighbour while it is faster) ends within 1% of the optimum, i.e. the chance that one greedy
  local search from a random start finds it;
* **best trap**: the fastest local minimum that is not within 1% (how far off a search that stops
  at the best of the other minima stays), as a multiple of the optimum.

A table whose optimum sits in a small basin, with near-optimal traps beside it, needs a search that
leaves good regions on purpose; a prior from another GPU that points at a trap does not help there.
The benchmark_hub tables come from ``../shared/data/benchmark_hub`` (``--hub DIR``: a clone's
``cachefiles/``, six GPUs per kernel), the H200 tables from ``benchmarks/data/h200``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import shlex
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from costmodel_eval import H200, HUB, hub_tables, load_tables, report  # noqa: E402

from flysearch.kernels import space_for_table  # noqa: E402
from flysearch.tables import GroundTruth  # noqa: E402

NEIGHBOURHOODS = ("adjacent", "Hamming")


def value_indices(table: GroundTruth) -> dict[tuple[int, ...], float]:
    """The configs that ran, as tuples of value indices of the space's free parameters -> time (ms)."""
    params = space_for_table(table).free_params()
    index_of = [(p.name, {value: i for i, value in enumerate(p.values)}) for p in params]
    return {tuple(index[row.params[name]] for name, index in index_of): float(row.time_ms)
            for row in table.ok_rows()}


def neighbours(node: tuple[int, ...], sizes: tuple[int, ...], kind: str) -> list[tuple[int, ...]]:
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


def descents(times: dict[tuple[int, ...], float], kind: str) -> dict[tuple[int, ...], tuple[int, ...]]:
    """Each config's steepest-descent end: the local minimum reached by always moving to the fastest
    neighbour that ran while it is faster.

    Example:
        >>> ends = descents({(0,): 3.0, (1,): 2.0, (2,): 2.5, (3,): 1.0}, "adjacent")
        >>> [ends[(i,)] for i in range(4)]
        [(1,), (1,), (3,), (3,)]
    """
    sizes = tuple(max(node[p] for node in times) + 1 for p in range(len(next(iter(times)))))
    step: dict[tuple[int, ...], tuple[int, ...]] = {}
    for node, t in times.items():
        ran = [n for n in neighbours(node, sizes, kind) if n in times]
        best = min(ran, key=times.__getitem__, default=node)
        step[node] = best if times[best] < t else node
    ends: dict[tuple[int, ...], tuple[int, ...]] = {}
    for start in times:
        path = [start]
        while path[-1] not in ends and step[path[-1]] != path[-1]:
            path.append(step[path[-1]])
        end = ends.get(path[-1], path[-1])
        for node in path:
            ends[node] = end
    return ends


def landscape(table: GroundTruth) -> dict[str, object]:
    """One table's row: its size, its needles and, per neighbourhood, minima, basin share and trap."""
    times = value_indices(table)
    best = min(times.values())
    row: dict[str, object] = {"table": table.name, "configs": len(times),
                              "within 1%": sum(t <= 1.01 * best for t in times.values()),
                              "within 5%": sum(t <= 1.05 * best for t in times.values())}
    for kind in NEIGHBOURHOODS:
        ends = descents(times, kind)
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


def section(title: str, tables: list[GroundTruth]) -> list[str]:
    """A markdown table of :func:`landscape` rows, with the medians of the descent shares."""
    rows = [landscape(t) for t in tables]
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


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hub", type=Path, default=HUB,
                        help="the folder of *_milo/<GPU>.json.gz (default ../shared/data/benchmark_hub)")
    parser.add_argument("--h200", default=str(H200), help="glob of the H200 table files")
    parser.add_argument("--only", choices=("h200", "hub"), default=None)
    parser.add_argument("--out", default=None, help="also write the markdown report here")
    args = parser.parse_args(argv)
    started = time.monotonic()
    lines = [f"# Landscapes of the exhaustive tables — {dt.date.today()}, {platform.machine()} CPU", "",
             f"`python benchmarks/landscape.py {shlex.join(sys.argv[1:] if argv is None else argv)}`", "",
             "Per table: configs that ran, configs within 1% / 5% of the optimum, and per neighbourhood "
             "(one parameter one value step away: adjacent; one parameter any value away: Hamming) the "
             "local minima, the share of configs whose steepest descent ends within 1% of the optimum, "
             "and the fastest local minimum beyond 1% as a multiple of the optimum.", ""]
    if args.only != "h200":
        lines += section("benchmark_hub", hub_tables(args.hub))
    if args.only != "hub":
        lines += section("Triton GEMM on H200", load_tables("h200", h200=args.h200))
    lines.append(f"({time.monotonic() - started:.0f} s)")
    report(lines, args.out)


if __name__ == "__main__":
    main()
