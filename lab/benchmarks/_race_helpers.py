"""What the lab's scripts share about raced GEMM tables: read a committed table file, its confirmed
best, and CUDA-graph replays of another kernel's launch on the race's inputs (``tma_programs.py``,
``backend_rounds.py``). Races themselves run through ``flysearch race run --space NAME``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flysearch.tables import GroundTruth, Row, read_table_file

__all__ = ["best", "graph_replays", "load"]


def graph_replays(bench: Any, make_run: Callable[[Any, Any, Any], Callable[[], None]]
                  ) -> Callable[[int], None]:
    """``launch(i)``: the replay of a CUDA graph of ``make_run(a, w, c)`` captured on *bench*'s
    rotating input set ``i`` (a Python wrapper's host cost stays out of the timing). The binary
    must be loaded (run once) before."""
    import torch

    graphs = []
    for a, w in bench.sets:
        run = make_run(a, w, bench.c)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            run()
        graphs.append(graph)

    def launch(i: int) -> None:
        graphs[i].replay()

    return launch


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
