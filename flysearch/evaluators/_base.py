"""The evaluator contract: turn a config into a measurement.

Every evaluator (``replay``, ``triton``, ``flydsl-compile``, ``flydsl``) has two steps:

* ``compile(config, shape) -> Compiled``: the expensive step that a search strategy is charged for.
  It never raises for a config that fails to build; it returns a :class:`Compiled` whose
  ``outcome`` is :attr:`Outcome.COMPILE_FAILED`.
* ``time(compiled) -> Measurement``: runs (or replays) the compiled kernel. A launch that fails or
  a result that is wrong is a :class:`Measurement` with the matching outcome, never an exception.

A failure is an outcome, not an exception: exceptions are kept for user mistakes (a config that is
not in a replayed table raises :class:`~flysearch.errors.MissingConfigError`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from flysearch.tables import Measurement, Outcome

if TYPE_CHECKING:
    from flysearch.space import Config, Shape

__all__ = ["Compiled", "Evaluator", "Measurement", "Outcome", "compile_only_measurement", "measure"]


@dataclass(frozen=True)
class Compiled:
    """A compiled config (or the record of its failure to compile).

    Attributes:
        config: The config that was compiled.
        shape: The shape it was compiled for (``None`` for tables without a GEMM shape).
        outcome: ``OK`` or ``COMPILE_FAILED``.
        compile_s: Seconds the compile took (measured or recorded), ``None`` when unknown.
        artifact: Whatever the evaluator needs to time it (a kernel handle, a table row).
        detail: A one-line reason for a failure.
    """

    config: Config
    shape: Shape | None
    outcome: Outcome = Outcome.OK
    compile_s: float | None = None
    artifact: Any = field(default=None, repr=False, compare=False)
    detail: str = ""


@runtime_checkable
class Evaluator(Protocol):
    """Compiles and times configs of one kernel on one (arch, device, shape).

    Thread safety: an evaluator is used by one study loop at a time.
    """

    name: str

    def compile(self, config: Config, shape: Shape | None) -> Compiled:
        """Compile *config* for *shape*; a build failure is returned, never raised."""
        ...

    def time(self, compiled: Compiled) -> Measurement:
        """Time a compiled config; a launch failure or wrong result is returned, never raised."""
        ...


def compile_only_measurement(compiled: Compiled, resources: dict[str, Any]) -> Measurement:
    """What a compile-only evaluator answers for *compiled*: its own outcome when the compile did
    not succeed, else ``RUNTIME_FAILED`` (there is no GPU to time on); the *resources* either way."""
    if compiled.outcome is not Outcome.OK:
        return Measurement(compiled.outcome, None, compiled.compile_s, 0.0, compiled.detail, resources)
    return Measurement(Outcome.RUNTIME_FAILED, None, compiled.compile_s, 0.0,
                       "compile-only evaluator: no AMD GPU to time on", resources)


def measure(evaluator: Evaluator, config: Config, shape: Shape | None) -> Measurement:
    """Compile *config* for *shape* and, if that succeeded, time it: its measurement either way."""
    compiled = evaluator.compile(config, shape)
    if compiled.outcome is not Outcome.OK:
        return Measurement(compiled.outcome, None, compiled.compile_s, 0.0, compiled.detail)
    return evaluator.time(compiled)
