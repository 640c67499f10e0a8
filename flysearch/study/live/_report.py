"""What a live worker reports: :class:`WorkerLog`, what it observed while it ran (when each compile
and timing ran, the seconds each step took), and :class:`LiveReport`, computed from that log, the
stored study and its claims by :meth:`LiveReport.of`.

Example (a worker that compiled from 1 s to 3 s and timed from 2 s to 4 s of a 5 s run)::

    >>> import optuna
    >>> log = WorkerLog("demo", "host:1:gpu0", t0=10.0, end=15.0,
    ...                 compile_intervals=[(11.0, 13.0)], timer_intervals=[(12.0, 14.0)])
    >>> study = optuna.create_study(study_name="demo")
    >>> r = LiveReport.of(log, study, claims={"done": 1})
    >>> r.wall_s, r.busy_s, r.head_s, r.tail_s, round(r.overhead, 2)
    (5.0, 3.0, 1.0, 1.0, 0.4)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from flysearch.study._study import StudySummary, summarize

if TYPE_CHECKING:
    import optuna

__all__ = ["LiveReport", "WorkerLog", "busy_seconds"]


@dataclass
class WorkerLog:
    """What one live worker observed while it ran (``time.monotonic()`` instants, seconds).

    The worker fills it as it goes; :meth:`LiveReport.of` derives its report from it."""

    study_name: str
    worker: str
    t0: float = 0.0  # when the worker started
    started_at: float = 0.0  # time.time() at t0 (for launchers' overhead)
    end: float = 0.0  # when it stopped (its pools closed)
    setup_parts: dict[str, float] = field(default_factory=dict)  # see LiveReport.setup_parts
    loop_parts: dict[str, float] = field(default_factory=dict)  # see LiveReport.loop_parts
    loop_s: float = 0.0  # see LiveReport.loop_s
    pipeline_mean: dict[str, float] = field(default_factory=dict)  # see LiveReport.pipeline_mean
    compile_intervals: list[tuple[float, float]] = field(default_factory=list)
    timer_intervals: list[tuple[float, float]] = field(default_factory=list)
    first_sent: float | None = None  # when the first compile was sent to the pool
    timer_ready: float | None = None  # when the timer had started up
    compiled: int = 0
    timed: int = 0
    table: str = ""  # the table the measurements land in
    device: str = ""  # the timer's device
    served_workers: int = 0
    n_feasible: int = 0  # configs of the space that pass its constraints
    stopped: str = ""
    finalists: dict[str, Any] | None = None  # the re-timed finalists, if this worker re-timed them


@dataclass
class LiveReport:
    """What one live worker did, and the study's state when it stopped."""

    study_name: str
    worker: str
    summary: StudySummary
    table: str = ""
    device: str = ""
    wall_s: float = 0.0
    busy_s: float = 0.0
    busy_after_ready_s: float = 0.0  # of busy_s, after the timer had started up
    compile_busy_s: float = 0.0
    timer_busy_s: float = 0.0
    compile_sum_s: float = 0.0
    head_s: float = 0.0
    tail_s: float = 0.0
    loop_s: float = 0.0  # seconds the study loop was working (not waiting for its pools)
    # Of loop_s: seconds in asking the sampler (claims included), claiming, storing measurements
    # (flush), storing other trials (save), and reading other workers' measurements (pull).
    loop_parts: dict[str, float] = field(default_factory=dict)
    # Time-weighted means over the loop: trials in flight, compile tasks in the pool (queued or
    # sent), compile processes holding a task, configs compiled and waiting for the timer, and
    # configs at the timer.
    pipeline_mean: dict[str, float] = field(default_factory=dict)
    served_workers: int = 0  # pool processes taken warm from a worker server
    # Seconds in each step of the set-up before the loop: starting (or taking) the pools,
    # enumerating the space, loading the prior, making the sampler, opening the storage, the study,
    # the claims and the table store, and recovering a resumed study's claims.
    setup_parts: dict[str, float] = field(default_factory=dict)
    startup_s: float = 0.0  # until the first compile was sent to the pool
    first_compile_s: float = 0.0  # until a compile process started the first compile
    timer_ready_s: float = 0.0  # until the timer had started up (its process, imports, the device)
    started_at: float = 0.0  # time.time() when the worker started (for launchers' overhead)
    ended_at: float = 0.0  # time.time() when the worker stopped
    compiled: int = 0
    timed: int = 0
    claims: dict[str, int] = field(default_factory=dict)
    finalists: dict[str, Any] | None = None
    stopped: str = ""

    @classmethod
    def of(cls, log: WorkerLog, study: optuna.Study, claims: Mapping[str, int]) -> LiveReport:
        """The report of the worker that kept *log*: its seconds, from the log; the study's
        counts and best config, from the stored *study*; *claims*, the study's claims by state."""
        t0, compiles, timings = log.t0, log.compile_intervals, log.timer_intervals
        spans = compiles + timings
        wall = log.end - t0
        ready = log.timer_ready - t0 if log.timer_ready is not None else 0.0
        summary = summarize(study)
        summary.n_feasible, summary.stopped = log.n_feasible, log.stopped
        return cls(
            study_name=log.study_name, worker=log.worker, summary=summary, table=log.table,
            device=log.device, wall_s=wall, busy_s=busy_seconds(spans),
            busy_after_ready_s=busy_seconds(spans, since=t0 + ready),
            compile_busy_s=busy_seconds(compiles), timer_busy_s=busy_seconds(timings),
            compile_sum_s=sum(b - a for a, b in compiles),
            head_s=max(0.0, min(a for a, _b in spans) - t0) if spans else 0.0,
            tail_s=max(0.0, log.end - max(b for _a, b in spans)) if spans else 0.0,
            loop_s=log.loop_s, loop_parts=dict(log.loop_parts), pipeline_mean=dict(log.pipeline_mean),
            served_workers=log.served_workers, setup_parts=dict(log.setup_parts),
            startup_s=log.first_sent - t0 if log.first_sent is not None else 0.0,
            first_compile_s=min(a for a, _b in compiles) - t0 if compiles else 0.0,
            timer_ready_s=ready, started_at=log.started_at, ended_at=log.started_at + wall,
            compiled=log.compiled, timed=log.timed, claims=dict(claims), finalists=log.finalists,
            stopped=log.stopped,
        )

    @property
    def overhead(self) -> float:
        """Share of the wall-clock time during which neither a compile nor a timing ran (of it,
        ``head_s`` before the first one started: process start-up, the pools' imports, the GPU's
        start-up and the study's set-up; ``tail_s`` after the last one ended: shutting the pools
        down)."""
        return 1.0 - self.busy_s / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def overhead_after_start(self) -> float:
        """:attr:`overhead` without the start-up: the share of the wall-clock after the first
        compile or timing began during which none ran."""
        rest = self.wall_s - self.head_s
        return 1.0 - self.busy_s / rest if rest > 0 else 0.0

    @property
    def overhead_after_ready(self) -> float:
        """:attr:`overhead` from the moment the GPU's timer had started up (``timer_ready_s``: its
        process, the framework's imports, the device's context) to the end: the study's own cost
        beyond compiling, timing and bringing the GPU up, which any tuner in a fresh process pays."""
        rest = self.wall_s - self.timer_ready_s
        return 1.0 - self.busy_after_ready_s / rest if rest > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["overhead"] = self.overhead
        out["overhead_after_start"] = self.overhead_after_start
        out["overhead_after_ready"] = self.overhead_after_ready
        return out


def busy_seconds(intervals: list[tuple[float, float]], since: float = -math.inf) -> float:
    """Length of the union of ``(start, end)`` intervals (of its part after *since*)."""
    total, end = 0.0, since
    for a, b in sorted(intervals):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total
