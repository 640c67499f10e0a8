"""What became of one config: the outcome every table row and every measurement carries, and the
measurement itself (a table row is a config's key and parameters with its measurement)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Measurement", "Outcome"]


class Outcome(enum.StrEnum):
    """What became of one config."""

    OK = "ok"
    REJECTED = "rejected"
    COMPILE_FAILED = "compile_failed"
    RUNTIME_FAILED = "runtime_failed"
    WRONG_RESULT = "wrong_result"

    @property
    def failed(self) -> bool:
        return self is not Outcome.OK


@dataclass(frozen=True)
class Measurement:
    """The result of timing one compiled config: what an evaluator answers, and what a table row
    holds (:meth:`Row.measurement <flysearch.tables.Row.measurement>`).

    Attributes:
        outcome: ``OK`` or the failure kind.
        time_ms: Median kernel time in milliseconds; ``None`` unless ``outcome`` is ``OK``.
        compile_s: Seconds the compile took, when known.
        bench_s: Seconds the timing itself took (what a replay charges besides the compile).
        detail: A one-line reason for a failure.
        extra: Evaluator-specific numbers (registers, LDS bytes, spread of the repetitions).
    """

    outcome: Outcome
    time_ms: float | None = None
    compile_s: float | None = None
    bench_s: float | None = None
    detail: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def cost_s(self) -> float:
        """Seconds this measurement cost: compile plus timing, unknown parts counted as zero."""
        return (self.compile_s or 0.0) + (self.bench_s or 0.0)
