"""The replay evaluator: answers configs from a ground-truth table.

Replay is an evaluator like the live ones, so a search strategy runs unchanged against a table and
against a GPU. It charges what the table recorded: the compile time the first time a config is
compiled, plus the timing cost. A config that is not in the table raises
:class:`~flysearch.errors.MissingConfigError` rather than inventing a value.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from flysearch.evaluators._base import Compiled, Measurement
from flysearch.tables import Outcome

if TYPE_CHECKING:
    from flysearch.space import Config, Shape
    from flysearch.tables import GroundTruth, Row

__all__ = ["ReplayEvaluator"]


class ReplayEvaluator:
    """Replays one ground-truth table.

    Attributes:
        compiles: Distinct configs compiled so far (each is charged once).
        cost_s: Simulated seconds spent: recorded compile times plus timing costs.
    """

    name = "replay"

    def __init__(self, table: GroundTruth) -> None:
        self.table = table
        self._charged: set[str] = set()
        self.compiles = 0
        self.cost_s = 0.0

    def compile(self, config: Config, shape: Shape | None = None) -> Compiled:
        row = self.table.row(config.key)
        first = config.key not in self._charged
        compile_s = (row.compile_s or 0.0) if first else 0.0
        if first:
            self._charged.add(config.key)
            self.compiles += 1
            self.cost_s += compile_s
        failed = row.outcome == Outcome.COMPILE_FAILED.value
        return Compiled(
            config, shape, Outcome.COMPILE_FAILED if failed else Outcome.OK, compile_s, row, row.detail
        )

    def time(self, compiled: Compiled) -> Measurement:
        row: Row = compiled.artifact
        if compiled.outcome is Outcome.COMPILE_FAILED:
            return Measurement(Outcome.COMPILE_FAILED, None, compiled.compile_s, 0.0, row.detail)
        bench_s = row.bench_s or 0.0
        self.cost_s += bench_s
        # The row's measurement, charged as this replay charges it (a compile once).
        return replace(row.measurement(), compile_s=compiled.compile_s, bench_s=bench_s)
