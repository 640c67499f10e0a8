"""What a live study's processes send each other: typed messages, and their JSON form.

A live study compiles in a pool of CPU processes and times in one process that owns the GPU
(:mod:`flysearch.evaluators`'s live backends); the messages cross pipes and a worker server's
socket as pickles (:mod:`flysearch.evaluators`'s pools), and the answers are stored with their
claims in the study's database as JSON. They are:

* a backend's tasks (its own frozen dataclasses: :class:`~flysearch.evaluators.LiveBackend`),
  and :class:`InfoTask`, the timer's first task, which asks it for its device;
* :class:`CompileResult`: what a compile task answers;
* :class:`TimerInfo`: what the timer answers an :class:`InfoTask`;
* :class:`~flysearch.tables.Measurement`: what the timer answers a timing task, and what a
  finished claim holds.

Each has ``to_json()``/``from_json()`` (a function pair for :class:`Measurement`): the JSON form
is the dict the live wing sent and stored before these types existed, so a study database written
earlier resumes unchanged, and one written now is what it was.

Example:
    >>> from flysearch.evaluators import CompileResult
    >>> CompileResult.from_json({"ok": True, "compile_s": 1.5, "detail": "", "shared": 0}).notes
    {'shared': 0}
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flysearch.tables import Measurement, Outcome

if TYPE_CHECKING:
    from flysearch.evaluators._pool import TaskResult

__all__ = ["CompileResult", "InfoTask", "TimerInfo", "measurement_from_json", "measurement_json"]

_COMPILE_FIELDS = ("ok", "compile_s", "detail", "outcome", "extra")
_INFO_FIELDS = ("device", "versions")


@dataclass(frozen=True)
class InfoTask:
    """The timer's first task: describe the device (its answer is a :class:`TimerInfo`).

    Attributes:
        device: The device a simulated timer names (a real timer asks its GPU).
    """

    device: str | None = None


@dataclass(frozen=True)
class CompileResult:
    """What a compile task answers.

    Attributes:
        ok: Whether the build succeeded (the config goes to the timer).
        compile_s: Seconds the compile took, when known.
        detail: A one-line reason for a failure.
        outcome: A failed build's outcome when it is not ``COMPILE_FAILED`` (a binary that cannot
            run, e.g. it spills, is ``REJECTED``); ``None`` otherwise.
        extra: Resources read back from the binary (registers, LDS bytes), carried into the
            measurement's ``extra``; ``None`` for a compiler that reads none.
        notes: What else the compiler reports (Triton's shared memory and cache hit), stored with
            the claim and not carried into the measurement.
    """

    ok: bool
    compile_s: float | None = None
    detail: str = ""
    outcome: Outcome | None = None
    extra: dict[str, Any] | None = None
    notes: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of_task(cls, res: TaskResult) -> CompileResult:
        """What a compile task's pool result *res* says: the task's answer, or the failure of a
        compile whose process crashed, hung or raised."""
        if res.ok:
            return res.value
        return cls(False, res.elapsed_s, f"compile {res.status}: {res.detail}")

    def failure(self) -> Measurement:
        """The measurement of a build that failed: its outcome, no time, no timing."""
        return Measurement(self.outcome or Outcome.COMPILE_FAILED, None, self.compile_s, 0.0, self.detail,
                           dict(self.extra or {}))

    def timed(self, res: TaskResult) -> Measurement:
        """The measurement of this build, timed by a timing task whose pool result is *res*: the
        timer's :class:`Measurement` with this compile's seconds and its ``extra`` first, or a
        runtime failure when the timer crashed, hung or raised."""
        extra = dict(self.extra or {})
        if not res.ok:
            return Measurement(Outcome.RUNTIME_FAILED, None, self.compile_s, res.elapsed_s,
                               f"timer {res.status}: {res.detail}", extra)
        m: Measurement = res.value
        outcome = Outcome(m.outcome)
        return Measurement(outcome, m.time_ms if outcome is Outcome.OK else None, self.compile_s, m.bench_s,
                           m.detail, {**extra, **m.extra})

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"ok": self.ok, "compile_s": self.compile_s, "detail": self.detail}
        if self.outcome is not None:
            out["outcome"] = self.outcome.value
        if self.extra is not None:
            out["extra"] = dict(self.extra)
        return {**out, **self.notes}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> CompileResult:
        outcome = doc.get("outcome")
        extra = doc.get("extra")
        return cls(bool(doc["ok"]), doc.get("compile_s"), str(doc.get("detail", "")),
                   Outcome(outcome) if outcome is not None else None,
                   dict(extra) if extra is not None else None,
                   {k: v for k, v in doc.items() if k not in _COMPILE_FIELDS})


@dataclass(frozen=True)
class TimerInfo:
    """What the timer answers an :class:`InfoTask`.

    Attributes:
        device: The device's name, as its runtime reports it.
        versions: The driver's, the runtime's and the compiler's versions a table records.
        details: What else the timer reports (SM count, L2 size, the seconds its start took).
    """

    device: str
    versions: dict[str, str] = field(default_factory=dict)
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def sms(self) -> int | None:
        """The GPU's SM count, where the timer reports it."""
        sms = self.details.get("sms")
        return int(sms) if sms else None

    @property
    def l2_bytes(self) -> int | None:
        """The GPU's L2 size in bytes, where the timer reports it."""
        return self.details.get("l2_bytes")

    def to_json(self) -> dict[str, Any]:
        return {"device": self.device, "versions": dict(self.versions), **self.details}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> TimerInfo:
        return cls(str(doc["device"]), dict(doc.get("versions") or {}),
                   {k: v for k, v in doc.items() if k not in _INFO_FIELDS})


def measurement_json(m: Measurement) -> dict[str, Any]:
    """*m* as the dict a finished claim stores (and a timer process sent before it was typed)."""
    return {"outcome": Outcome(m.outcome).value, "time_ms": m.time_ms, "compile_s": m.compile_s,
            "bench_s": m.bench_s, "detail": m.detail, "extra": dict(m.extra)}


def measurement_from_json(doc: dict[str, Any]) -> Measurement:
    """The measurement a timer's or a claim's dict holds (its time only when it is ``OK``)."""
    outcome = Outcome(doc["outcome"])
    return Measurement(outcome, doc.get("time_ms") if outcome is Outcome.OK else None,
                       doc.get("compile_s"), doc.get("bench_s"), doc.get("detail", ""),
                       dict(doc.get("extra") or {}))
