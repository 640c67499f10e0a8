"""What the lab's scripts share about raced GEMM tables: read a committed table file and its
confirmed best. Races themselves run through ``flysearch race run --space NAME``; another kernel's
launch is replayed on the race's inputs with ``shape_bench(...).graph_launch``.
"""

from __future__ import annotations

from typing import Any

from flysearch.tables import GroundTruth, Row, read_table_file

__all__ = ["best", "load"]


def load(path: Any) -> GroundTruth:
    """A committed table file as a :class:`GroundTruth`."""
    meta, rows = read_table_file(path)
    return GroundTruth(meta, {r.key: r for r in rows})


def best(table: GroundTruth) -> tuple[float, Row] | None:
    """The table's confirmed best row and its time (the re-timed median where its top was re-timed,
    else the race's); ``None`` when no config ran."""
    ranked = table.ranked()
    if not ranked:
        return None
    return table.retimed_ms().get(ranked[0].key, ranked[0].time_ms), ranked[0]
