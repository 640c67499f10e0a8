"""The markdown of a leave-one-table-out evaluation: one section per part, one row per held-out table.

Each row of :func:`held_out_section` gives a :class:`~flysearch.compare.HeldOut` result: the
expected compiles of random search to reach within 1% of the table's optimum, the prior's rank of
its first config within 1% and 5%, whether that rank is at most 16, and the sampler's compiles per
seed. When some table of the section was searched against a re-timed top, a column gives the
compiles to first measure one of the configs within 1% of the re-timed optimum, and a closing line
compares them with the compiles by the race's own times on those tables.

Example:
    >>> format_compiles(None, 64), format_compiles(float("inf"), 64), format_compiles(6.5, 64)
    ('-', '>64', '6.5')
"""

from __future__ import annotations

from collections.abc import Sequence

from flysearch.compare import HeldOut

__all__ = ["format_compiles", "held_out_section"]


def format_compiles(value: float | None, budget: int) -> str:
    """A count of compiles: ``-`` for none, ``>budget`` when the budget ran out first."""
    return "-" if value is None else (f">{budget}" if value == float("inf") else f"{value:g}")


def _per_seed(runs: Sequence[int | None]) -> str:
    return ", ".join("-" if v is None else str(v) for v in runs)


def _mid_and_worst(values: list[float], budget: int) -> str:
    values = sorted(values)
    mid = values[len(values) // 2] if len(values) % 2 else sum(values[len(values) // 2 - 1:][:2]) / 2
    return f"{format_compiles(mid, budget)}; worst: {format_compiles(max(values), budget)}"


def held_out_section(title: str, results: Sequence[HeldOut], budget: int) -> list[str]:
    """A markdown section titled *title*: a table of *results* (searched with *budget* compiles),
    the median over tables of the sampler's median compiles to 1%, and with re-timed tops a
    column and a line for them."""
    retimed = any(r.retimed for r in results)
    lines = [f"## {title}", "",
             "| held-out table | configs | random search to 1% (expected) | prior rank to 1% | "
             "prior rank to 5% | hit@16 | sampler compiles to 1% (median; per seed) | "
             "sampler to 5% (median) |" + (" sampler to 1% of the re-timed optimum (median; per seed) |"
                                           if retimed else ""),
             "|---|---:|---:|---:|---:|---|---|---:|" + ("---|" if retimed else "")]
    for r in results:
        row = (f"| {r.table} | {r.configs} | {r.random_expected[0.01]:.0f} | {r.prior_rank[0.01]} | "
               f"{r.prior_rank[0.05]} | "
               f"{'yes' if r.hit16 else 'no'} | {format_compiles(r.sampler_median(0.01), budget)} "
               f"({_per_seed(r.sampler[0.01])}) | {format_compiles(r.sampler_median(0.05), budget)} |")
        if retimed:
            row += (f" {format_compiles(r.retimed_median(), budget)} ({_per_seed(r.retimed)}) |" if r.retimed
                    else " not re-timed |")
        lines.append(row)
    lines += ["", "Median over tables of the sampler's median compiles to 1%: "
              f"{_mid_and_worst([r.sampler_median(0.01) or float('inf') for r in results], budget)}."]
    if retimed:
        again = [r for r in results if r.retimed]
        lines.append(f"To 1% of the re-timed optimum, on the {len(again)} re-timed tables: "
                     f"{_mid_and_worst([r.retimed_median() or float('inf') for r in again], budget)}; "
                     f"within 8 compiles on {sum((r.retimed_median() or 1e9) <= 8 for r in again)} "
                     f"(by the race's times, on those tables: "
                     f"{sum((r.sampler_median(0.01) or 1e9) <= 8 for r in again)}).")
    lines.append("")
    return lines
