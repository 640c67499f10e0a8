"""A learning curve of the cost model: compiles to the optimum as its prior trains on more tables.

Each held-out table is searched with a prior trained on the other tables plus *k* training-only
tables (:func:`~flysearch.compare.leave_one_out` with ``extra``). For each *k* below the whole
training-only set, several subsets are drawn at random (:func:`training_subsets`, seeded: the same
subsets on every machine), so that a point of the curve is not one lucky pick of tables.
:func:`learning_curve_row` reduces one run over the held-out tables: how many the sampler gets
within 1% of the optimum in at most 8 compiles (median over seeds), the median and the worst over
tables, the sum of the medians (a median beyond the budget counts as budget + 1), and how many
tables the prior alone ranks a config within 1% at most 8th. :func:`learning_curve_lines` writes
the runs as markdown.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence

from flysearch.compare import HeldOut

__all__ = ["learning_curve_lines", "learning_curve_row", "training_subsets"]


def training_subsets(names: Sequence[str], sizes: Sequence[int], draws: int,
                     seed: int = 0) -> list[tuple[int, list[str]]]:
    """For each size, *draws* seeded random subsets of *names* (one for size 0 and for all of them).

    Raises:
        ValueError: a size is negative or beyond the number of names.

    Example:
        >>> [(k, len(s)) for k, s in training_subsets(["a", "b", "c"], [0, 2, 3], draws=2)]
        [(0, 0), (2, 2), (2, 2), (3, 3)]
    """
    rng = random.Random(seed)
    out = []
    for k in sizes:
        if not 0 <= k <= len(names):
            raise ValueError(f"size {k} is not between 0 and {len(names)}")
        for _ in range(1 if k in (0, len(names)) else draws):
            out.append((k, sorted(rng.sample(names, k))))
    return out


def learning_curve_row(k: int, chosen: list[str], results: Sequence[HeldOut],
                       budget: int) -> dict[str, object]:
    """One run's summary over the held-out *results*, searched with *budget* compiles and a prior
    that also trained on the *k* training-only tables *chosen* (a median beyond the budget counts
    as budget + 1)."""
    medians = [r.sampler_median(0.01) for r in results]
    counted = [budget + 1 if m is None or m == float("inf") else m for m in medians]
    worst = max(range(len(results)), key=lambda i: counted[i])
    return {"k": k, "tables": chosen, "within8": sum(m <= 8 for m in counted),
            "median": statistics.median(counted), "worst": counted[worst],
            "worst_table": results[worst].table.rsplit("/", 1)[1], "sum": sum(counted),
            "prior8": sum((r.prior_rank[0.01] or budget + 1) <= 8 for r in results), "n": len(results)}


def learning_curve_lines(rows: Sequence[dict[str, object]], *, n_tables: int, n_extra: int, seeds: int,
                         budget: int) -> list[str]:
    """The markdown of the runs *rows* (:func:`learning_curve_row`): what was run, then one table
    row per run; under a title and command line that the caller writes."""
    lines = [f"Leave-one-shape-out on the {n_tables} H200 tables; each prior also trains on k of the "
             f"{n_extra} training-only tables (budget {budget}, {seeds} seeds; a median beyond the "
             f"budget counts as {budget + 1}).", "",
             "| k | training-only tables | within 8 compiles | median | worst (table) | sum of medians | "
             "prior alone: rank <= 8 |", "|---:|---|---:|---:|---|---:|---:|"]
    for r in rows:
        names = ", ".join(n.rsplit("/", 1)[1] for n in r["tables"]) or "none"  # type: ignore[attr-defined]
        lines.append(f"| {r['k']} | {names} | {r['within8']} of {r['n']} | {r['median']:g} | "
                     f"{r['worst']:g} ({r['worst_table']}) | {r['sum']:g} | {r['prior8']} |")
    return lines
