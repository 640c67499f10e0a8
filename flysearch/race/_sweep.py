"""Measure configs with any evaluator and write them as a ground-truth table, resumably.

The same table output for every evaluator: replay, live Triton, live FlyDSL. Rows are written in
batches, each in one transaction, so an interruption loses at most the batch in flight, and a rerun
skips the configs the table already holds.

Example::

    flysearch flydsl race --space flydsl_gemm --shape 4096x4096x4096 --db amd.db   # on an AMD GPU
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from flysearch.evaluators import Evaluator, measure
from flysearch.tables import Row, TableMeta, TableStore

if TYPE_CHECKING:
    from flysearch.space import Config, Shape

__all__ = ["sweep_to_table"]


def sweep_to_table(
    evaluator: Evaluator, configs: Iterable[Config], shape: Shape | None, meta: TableMeta,
    store: TableStore, *, batch: int = 16, progress: Callable[[int], None] | None = None,
) -> int:
    """Measure every config *store*'s table *meta.name* lacks; return how many were measured."""
    done = store.done_keys(meta.name)
    pending: list[Row] = []
    measured = 0
    for config in configs:
        if config.key in done:
            continue
        pending.append(Row.from_measurement(config.key, config.as_dict(), measure(evaluator, config, shape)))
        measured += 1
        if len(pending) >= batch:
            store.add_rows(meta, pending)
            pending = []
        if progress is not None:
            progress(measured)
    if pending:
        store.add_rows(meta, pending)
    return measured
