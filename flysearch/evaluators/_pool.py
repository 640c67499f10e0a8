"""A pool of spawned worker processes with a timeout per task, for work that may crash or hang.

``concurrent.futures`` cannot kill one task that hangs, and a worker that segfaults breaks the whole
executor. :class:`WorkerPool` gives every worker its own pipe, so the parent always knows which task
each worker runs: a task that runs past its timeout gets its worker killed, a worker that dies is
noticed through its process sentinel, and either way the task comes back as a :class:`TaskResult`
with ``status`` ``"timeout"`` or ``"crash"`` and a fresh worker takes the slot. The pool never raises
for a task; the caller decides what a failure means (a failed compile, a failed launch).

With ``prefetch=k`` a worker holds up to ``k`` tasks queued in its pipe behind the one it runs, so
it starts the next task the moment it answers one, without waiting for the parent to read the
answer and send more (a GPU timer fed by a busy study loop). Answers come back in order; the task
a worker runs is the oldest one it has not answered, and its timeout counts from the answer before
it. If the worker crashes or is killed, the tasks queued behind the one it ran go back to the front
of the pool's queue for a fresh worker.

Example:
    >>> from flysearch.evaluators import WorkerPool
    >>> with WorkerPool(abs, workers=2, timeout_s=30) as pool:  # doctest: +SKIP
    ...     pool.submit(1, -3)
    ...     pool.drain()[0].value
    3

Thread safety: a pool is driven by one thread of the process that created it.
"""

from __future__ import annotations

import collections
import multiprocessing as mp
import os
import time
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Literal

from flysearch._lifeline import Lifeline
from flysearch.errors import FlysearchError
from flysearch.evaluators._worker_process import Retire, main_module_hidden, worker_main

# Retire and main_module_hidden are worker_process's (shared with the worker server), offered here too.
__all__ = ["MAX_STARTUP_FAILURES", "Retire", "TaskResult", "WorkerPool", "WorkerStartupError",
           "main_module_hidden"]

Status = Literal["ok", "error", "timeout", "crash", "startup"]
MAX_STARTUP_FAILURES = 3  # workers in a row whose initializer fails before a pool gives up


class WorkerStartupError(FlysearchError):
    """:data:`MAX_STARTUP_FAILURES` workers of a pool in a row failed in their initializer (a
    framework that cannot be imported, a device that cannot be opened): no task can run."""


@dataclass(frozen=True)
class TaskResult:
    """What became of one task.

    Attributes:
        task_id: The id it was submitted with.
        status: ``"ok"`` (the function returned), ``"error"`` (it raised), ``"timeout"`` (its worker
            was killed after ``timeout_s``) or ``"crash"`` (its worker died). A pool never returns
            ``"startup"`` (a worker whose initializer failed): it runs the task on a fresh worker,
            and raises :class:`WorkerStartupError` after :data:`MAX_STARTUP_FAILURES` in a row.
        value: The function's return value when ``status == "ok"``.
        detail: One line on what went wrong, empty when ok.
        elapsed_s: Wall seconds from the task's start (its dispatch, or the worker's previous
            answer when it was prefetched) to its result.
        ran: ``(start, end)`` in :func:`time.monotonic` seconds (one clock for all processes of a
            host) during which the worker ran the task's function; ``None`` when the worker died.
    """

    task_id: Hashable
    status: Status
    value: Any = None
    detail: str = ""
    elapsed_s: float = 0.0
    ran: tuple[float, float] | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class _Sent:
    task_id: Hashable
    payload: Any
    timeout_s: float
    started: float = 0.0  # when it became the worker's oldest unanswered task


@dataclass
class _Slot:
    process: Any
    conn: Connection
    tasks: collections.deque[_Sent] = field(default_factory=collections.deque)


class WorkerPool:
    """Spawned workers that run ``func(payload)``, one task at a time each.

    Args:
        func: A module-level function (spawned workers import it by name).
        workers: Number of worker processes.
        timeout_s: Seconds a task may run before its worker is killed.
        env: Environment variables set in each worker before anything runs.
        initializer: Called once in each worker before its first task.
        prefetch: Tasks a worker may hold queued behind the one it runs.
        server: Unix socket of a worker server (:mod:`flysearch.evaluators`) to take warm
            workers from; a worker the server cannot give is spawned, as without one.
    """

    def __init__(
        self, func: Callable[[Any], Any], *, workers: int, timeout_s: float,
        env: Mapping[str, str] | None = None, initializer: Callable[[], None] | None = None,
        prefetch: int = 0, server: str | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError(f"A pool needs at least one worker, got {workers}.")
        if prefetch < 0:
            raise ValueError(f"prefetch must be >= 0, got {prefetch}.")
        self.prefetch = prefetch
        self.func = func
        self.workers = workers
        self.timeout_s = timeout_s
        self.env = dict(env or {})
        self.initializer = initializer
        self.server = server
        self.served = 0  # workers taken from the server
        self._ctx = mp.get_context("spawn")
        self._queue: collections.deque[tuple[Hashable, Any, float | None]] = collections.deque()
        self._slots: list[_Slot | None] = [None] * workers
        self.restarts = 0
        self._startup_failures = 0  # workers in a row whose initializer failed
        self._startup_error: str | None = None

    # -- lifecycle --------------------------------------------------------------------------------

    def __enter__(self) -> WorkerPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start(self) -> _Slot:
        if self.server:
            from flysearch.evaluators._worker_server import connect_worker

            served = connect_worker(self.server, self.func, self.initializer, {**os.environ, **self.env})
            if served is not None:
                self.served += 1
                return _Slot(*served)
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(
            target=Lifeline(worker_main), args=(child, self.func, self.env, self.initializer), daemon=True
        )
        with main_module_hidden(self.func, self.initializer):
            proc.start()
        child.close()
        return _Slot(proc, parent)

    def start(self) -> None:
        """Start every worker now (otherwise they start on first use)."""
        for i, slot in enumerate(self._slots):
            if slot is None:
                self._slots[i] = self._start()

    def close(self, grace_s: float = 0.25, *, wait: bool = True) -> None:
        """Stop every worker; queued tasks are dropped.

        Idle workers are asked to exit and killed after *grace_s* seconds (an idle worker holds
        nothing to lose, and an interpreter with a compiler or a GPU context loaded can take
        seconds to exit), as are workers still running a task. Without *wait*, idle workers are
        left to exit on their own, busy ones are killed, and none is waited for (a dozen processes
        tearing down a compiler or a GPU context, one after another, take a noticeable time).
        """
        self._queue.clear()
        for slot in self._slots:
            if slot is None:
                continue
            if not slot.tasks and slot.process.is_alive():
                try:
                    slot.conn.send(None)
                except OSError:
                    pass
        deadline = time.monotonic() + grace_s
        for i, slot in enumerate(self._slots):
            if slot is None:
                continue
            if not wait:
                if slot.tasks:
                    slot.process.kill()
            else:
                slot.process.join(max(0.0, deadline - time.monotonic()))
                if slot.process.is_alive():
                    slot.process.kill()
                    slot.process.join()
            slot.conn.close()
            self._slots[i] = None

    # -- tasks ------------------------------------------------------------------------------------

    def submit(self, task_id: Hashable, payload: Any, *, timeout_s: float | None = None) -> None:
        """Queue a task; *timeout_s* overrides the pool's timeout for it."""
        self._queue.append((task_id, payload, timeout_s))

    def submit_many(self, tasks: Iterable[tuple[Hashable, Any]]) -> None:
        for task_id, payload in tasks:
            self.submit(task_id, payload)

    @property
    def queued(self) -> int:
        return len(self._queue)

    @property
    def running(self) -> int:
        """Tasks sent to workers and not yet answered (running, or prefetched behind one)."""
        return sum(len(s.tasks) for s in self._slots if s is not None)

    @property
    def busy_workers(self) -> int:
        """Worker processes holding a task (running it, or with one prefetched behind it)."""
        return len(self._busy())

    @property
    def pending(self) -> int:
        """Tasks submitted and not yet returned by :meth:`poll`."""
        return self.queued + self.running

    def _busy(self) -> dict[int, _Slot]:
        return {i: s for i, s in enumerate(self._slots) if s is not None and s.tasks}

    def handles(self) -> list[Any]:
        """What to wait on (with :func:`multiprocessing.connection.wait`) for this pool's next
        result: the pipes and process sentinels of its busy workers. Dispatches queued tasks first."""
        self._dispatch()
        busy = self._busy().values()
        return [s.conn for s in busy] + [s.process.sentinel for s in busy]

    def next_deadline(self) -> float | None:
        """The :func:`time.monotonic` time at which the first running task times out."""
        heads = [s.tasks[0] for s in self._busy().values()]
        return min(h.started + h.timeout_s for h in heads) if heads else None

    def _dispatch(self) -> None:
        # Idle workers first, then one more task each up to the prefetch depth.
        for depth in range(1 + self.prefetch):
            for i in range(self.workers):
                if not self._queue:
                    return
                slot = self._slots[i]
                if slot is not None and len(slot.tasks) > depth:
                    continue
                if slot is None or (not slot.tasks and not slot.process.is_alive()):
                    if slot is not None:
                        slot.conn.close()
                    slot = self._slots[i] = self._start()
                task_id, payload, timeout_s = self._queue.popleft()
                try:
                    slot.conn.send((task_id, payload))
                except OSError:  # the worker died; poll() notices and requeues
                    self._queue.appendleft((task_id, payload, timeout_s))
                    return
                now = time.monotonic()
                slot.tasks.append(_Sent(task_id, payload,
                                        timeout_s if timeout_s is not None else self.timeout_s, now))

    def _retire(self, i: int, status: Status, detail: str) -> TaskResult:
        """Answer slot *i*'s running task with *status*, end its worker and requeue the tasks
        prefetched behind it."""
        slot = self._slots[i]
        assert slot is not None and slot.tasks
        head = slot.tasks.popleft()
        result = TaskResult(head.task_id, status, None, detail, time.monotonic() - head.started)
        self._drop(i)
        return result

    def _drop(self, i: int, grace_s: float = 0.0) -> None:
        """End slot *i*'s worker (after *grace_s* seconds to exit on its own), free the slot and put
        the tasks it had not started back at the front of the queue."""
        slot = self._slots[i]
        assert slot is not None
        if grace_s:
            slot.process.join(grace_s)
        if slot.process.is_alive():
            slot.process.kill()
        slot.process.join()
        slot.conn.close()
        for sent in reversed(slot.tasks):
            self._queue.appendleft((sent.task_id, sent.payload, sent.timeout_s))
        self._slots[i] = None
        self.restarts += 1

    def dispatch(self) -> None:
        """Send queued tasks to the workers now (starting workers as needed), without reading any
        result: their answers wait for the next :meth:`poll`."""
        self._dispatch()

    def poll(self, timeout: float | None = 0.0) -> list[TaskResult]:
        """Dispatch queued tasks and return the results ready within *timeout* seconds.

        Raises:
            WorkerStartupError: :data:`MAX_STARTUP_FAILURES` workers in a row failed to start (the
                results an earlier poll returned are all there are).
        """
        if self._startup_error is not None:
            raise WorkerStartupError(self._startup_error)
        self._dispatch()
        busy = self._busy()
        if not busy:
            return []
        now = time.monotonic()
        next_deadline = min(s.tasks[0].started + s.tasks[0].timeout_s for s in busy.values())
        wait_s = max(0.0, next_deadline - now)
        if timeout is not None:
            wait_s = min(wait_s, timeout)
        handles: list[Any] = [s.conn for s in busy.values()] + [s.process.sentinel for s in busy.values()]
        ready = set(wait(handles, wait_s))
        results = []
        for i, slot in busy.items():
            if slot.conn in ready or slot.process.sentinel in ready:
                results.extend(self._receive(i, slot))
            else:
                head = slot.tasks[0]
                if time.monotonic() - head.started > head.timeout_s:
                    results.append(self._retire(i, "timeout", f"killed after {head.timeout_s:.0f} s"))
        self._dispatch()
        return results

    def _receive(self, i: int, slot: _Slot) -> list[TaskResult]:
        """Read every answer slot *i*'s worker has sent; a worker that died without answering its
        running task gets a ``"crash"`` result for it."""
        out: list[TaskResult] = []
        try:
            while slot.tasks and slot.conn.poll():
                task_id, status, value, detail, retire, ran = slot.conn.recv()
                if status == "startup":
                    self._failed_startup(i, detail)
                    return out
                self._startup_failures = 0
                now = time.monotonic()
                head = slot.tasks.popleft()
                out.append(TaskResult(task_id, status, value, detail, now - head.started, tuple(ran)))
                if slot.tasks:
                    slot.tasks[0].started = max(slot.tasks[0].started, ran[1])
                if retire:
                    self._drop(i, grace_s=5.0)
                    return out
            if out or slot.process.is_alive():
                return out
        except (EOFError, OSError):
            pass
        if not slot.tasks:
            return out
        slot.process.join(1.0)
        code = slot.process.exitcode
        out.append(self._retire(i, "crash", f"worker died (exit code {code})"))
        return out

    def _failed_startup(self, i: int, detail: str) -> None:
        """Slot *i*'s worker failed in its initializer and ran nothing: its tasks go back to the
        queue for a fresh worker, until :data:`MAX_STARTUP_FAILURES` such workers in a row."""
        self._drop(i, grace_s=5.0)
        self._startup_failures += 1
        if self._startup_failures >= MAX_STARTUP_FAILURES and self._startup_error is None:
            # the first verdict stands: another worker failing in the same poll adds nothing
            self._startup_error = (f"{self._startup_failures} workers in a row failed to start "
                                   f"({_function_name(self.func)}): {detail}")

    def drain(self, timeout: float | None = None) -> list[TaskResult]:
        """Run until every submitted task has a result (or *timeout* seconds pass)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        out: list[TaskResult] = []
        while self.pending:
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                break
            out.extend(self.poll(timeout=left if left is not None else 1.0))
        return out


def _function_name(func: Callable[..., Any]) -> str:
    inner = getattr(func, "func", func)  # a functools.partial names its function
    return f"{getattr(inner, '__module__', '?')}.{getattr(inner, '__qualname__', repr(inner))}"
