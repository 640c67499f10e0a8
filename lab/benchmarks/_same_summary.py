"""Do two runs of one comparison give the same summary? Two ``summary.csv`` files, cell by cell.

A comparison replayed with the same seeds gives the same compiles on any machine; only what a trial
took there (:data:`TIMING_COLUMNS`) may differ. :func:`differing_columns` counts, per column, the
rows whose cells differ, so that a rerun on another machine can be checked against the committed
summary: any column outside :data:`TIMING_COLUMNS` means the runs themselves differ.
"""

from __future__ import annotations

import csv
from pathlib import Path

__all__ = ["TIMING_COLUMNS", "differing_columns"]

#: The columns of a ``summary.csv`` that measure the machine rather than the search.
TIMING_COLUMNS = frozenset({"ms_per_trial"})


def differing_columns(committed: Path, other: Path) -> tuple[int, int, dict[str, int]]:
    """Rows, cells compared, and for each column the number of rows whose cells differ.

    Raises:
        ValueError: *other* does not have *committed*'s header and number of rows.
    """
    with committed.open() as a, other.open() as b:
        rows_a, rows_b = list(csv.reader(a)), list(csv.reader(b))
    if not rows_a or rows_a[0] != rows_b[0] or len(rows_a) != len(rows_b):
        raise ValueError(f"{other} does not have {committed}'s header and rows")
    header, diffs = rows_a[0], {}
    for ra, rb in zip(rows_a[1:], rows_b[1:], strict=True):
        for name, x, y in zip(header, ra, rb, strict=True):
            if x != y:
                diffs[name] = diffs.get(name, 0) + 1
    return len(rows_a) - 1, (len(rows_a) - 1) * len(header), diffs
