"""A compile pool ahead of one GPU timer: the pipeline a race and a live study both run.

Compiles go to a :class:`~flysearch.evaluators.WorkerPool` of CPU processes, timings to a pool of
one process that owns the GPU. :meth:`CompilePipeline.wait` blocks until either pool answers (or a
task reaches its deadline, when its worker is killed) and hands back the compiles as typed
:class:`~flysearch.evaluators.CompileResult` answers, a crashed or hung compile's failure
included, and the timings as the pool returned them: :meth:`CompileResult.timed` makes each one's
:class:`~flysearch.tables.Measurement`. :meth:`CompilePipeline.time_alone` times one task and waits
for it (a timer's device question, a vendor's timing, a re-timing round), keeping the compiles that
answer meanwhile. What to compile and when to time it is the caller's: a race compiles every config
ahead and times them in order, a live study what its sampler asks. Both submit and wait through
this class only.
"""

from __future__ import annotations

import time
from collections.abc import Hashable
from multiprocessing.connection import wait
from typing import Any

from flysearch.evaluators._messages import CompileResult
from flysearch.evaluators._pool import TaskResult, WorkerPool

__all__ = ["CompilePipeline"]


class CompilePipeline:
    """A compile pool and a GPU timer pool, waited on together.

    Args:
        compiler: The compile pool (its task function answers :class:`CompileResult`).
        timer: The timer pool, one process (its task function answers a timing task with a
            :class:`~flysearch.tables.Measurement`).

    Attributes:
        blocked_s: Seconds :meth:`wait` has blocked for an answer.
    """

    def __init__(self, compiler: WorkerPool, timer: WorkerPool) -> None:
        self.compiler, self.timer = compiler, timer
        self.blocked_s = 0.0

    def compile(self, key: Hashable, task: Any) -> None:
        """Queue *task*'s compile; its answer comes back from :meth:`wait` under *key*."""
        self.compiler.submit(key, task)

    def time(self, key: Hashable, task: Any, *, timeout_s: float | None = None) -> None:
        """Queue the timer task *task*; its answer comes back from :meth:`wait` under *key*."""
        self.timer.submit(key, task, timeout_s=timeout_s)

    @property
    def pending(self) -> int:
        """Tasks of either pool submitted and not yet answered by :meth:`wait`."""
        return self.compiler.pending + self.timer.pending

    def dispatch(self) -> None:
        """Send queued tasks to idle workers now, without reading any answer."""
        self.compiler.dispatch()
        self.timer.dispatch()

    def wait(self, timeout: float) -> tuple[list[tuple[TaskResult, CompileResult]], list[TaskResult]]:
        """Block until a compile or a timing answers, a task's deadline passes, or *timeout*
        seconds; then the compiles answered (each with what it built) and the timings answered."""
        handles = self.compiler.handles() + self.timer.handles()
        deadlines = [d for d in (self.compiler.next_deadline(), self.timer.next_deadline()) if d is not None]
        if deadlines:
            timeout = max(0.0, min(timeout, min(deadlines) - time.monotonic()))
        start = time.monotonic()
        if handles:
            wait(handles, timeout)
        elif timeout > 0:
            time.sleep(timeout)
        self.blocked_s += time.monotonic() - start
        built = [(res, CompileResult.of_task(res)) for res in self.compiler.poll(0)]
        return built, self.timer.poll(0)

    def time_alone(self, key: Hashable, task: Any, *, timeout_s: float | None = None,
                   ) -> tuple[TaskResult, list[tuple[TaskResult, CompileResult]]]:
        """Time *task* while nothing else is timing and wait for its answer; that answer, and the
        compiles that answered meanwhile (the caller keeps them, as from :meth:`wait`)."""
        if self.timer.pending:
            raise RuntimeError("time_alone() needs an idle timer; collect its answers with wait() first.")
        self.time(key, task, timeout_s=timeout_s)
        built: list[tuple[TaskResult, CompileResult]] = []
        while True:
            more, timed = self.wait(1.0)
            built.extend(more)
            if timed:
                return timed[0], built

    def close(self, grace_s: float = 0.25, *, wait: bool = True) -> None:
        """Close both pools (see :meth:`WorkerPool.close`)."""
        self.compiler.close(grace_s, wait=wait)
        self.timer.close(grace_s, wait=wait)
