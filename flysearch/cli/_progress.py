"""Progress and stopping, for every long command.

Progress is a rich bar on a terminal and, otherwise (a log, CI), a plain line at most every
:data:`PROGRESS_INTERVAL_S` seconds, with a heartbeat so that a log hears from a long step too.
SIGINT (Ctrl-C) and SIGTERM unwind the command (:func:`stop_on_signals` raises :class:`Stopped` in
the main thread), so that what is stored stays stored and the command can say how to go on; a
second signal while the first unwinds ends the command and its worker processes on the spot.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import click

__all__ = ["PROGRESS_INTERVAL_S", "PlainProgress", "Stopped", "progress_display", "stop_on_signals"]

# Seconds between two progress lines when stderr is not a terminal.
PROGRESS_INTERVAL_S = 5.0

Update = Callable[..., None]
"""``update(done, total, detail="")``: the state of a long command."""


@contextlib.contextmanager
def progress_display(name: str, *, unit: str, console: Any = None) -> Iterator[Update]:
    """A rich bar when stderr is a terminal; else :class:`PlainProgress` lines, with a heartbeat
    thread so that a log hears from a long step every :data:`PROGRESS_INTERVAL_S`."""
    if _is_terminal(sys.stderr):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn(unit), TimeElapsedColumn())
        with Progress(*columns, console=console or Console(stderr=True), transient=True) as bar:
            task = bar.add_task(name, total=None)
            yield lambda done, total, detail="": bar.update(task, completed=done, total=total)
        return
    plain = PlainProgress(name, unit=unit)
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(plain, stop), name="flysearch-progress", daemon=True)
    beat.start()
    try:
        yield plain
    finally:
        stop.set()
        beat.join()
        plain.finish()


def _is_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _heartbeat(progress: PlainProgress, stop: threading.Event) -> None:
    while not stop.wait(1.0):
        progress.tick()


class PlainProgress:
    """Progress as plain lines, ``name: 12/240 runs, 35 s`` (elapsed since it was made), for a log.

    The first state is written at once; after that at most one line per *interval_s*, when the
    state changes or when :meth:`tick` finds the log silent that long (a long step); :meth:`finish`
    writes the last state. Calls may come from two threads (the work's and a heartbeat's).
    """

    def __init__(self, name: str, *, unit: str = "runs", interval_s: float = PROGRESS_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic,
                 echo: Callable[[str], None] | None = None) -> None:
        self.name, self.unit, self.interval_s, self._clock = name, unit, interval_s, clock
        self._echo = echo or (lambda line: click.echo(line, err=True))
        self._start = clock()
        self._state: tuple[int, int | None] | None = None
        self._written_at: float | None = None
        self._written = ""
        self._lock = threading.Lock()

    def __call__(self, done: int, total: int | None, detail: str = "") -> None:
        with self._lock:
            self._state = (done, total)
            self._write_if_due()

    def tick(self) -> None:
        with self._lock:
            self._write_if_due()

    def finish(self) -> None:
        with self._lock:
            line = self._line()
            if line and line != self._written:
                self._write(line)

    def _write_if_due(self) -> None:
        if self._state is None:
            return
        if self._written_at is None or self._clock() - self._written_at >= self.interval_s:
            self._write(self._line())

    def _line(self) -> str:
        if self._state is None:
            return ""
        done, total = self._state
        of = f"/{total}" if total is not None else ""
        return f"{self.name}: {done}{of} {self.unit}, {self._clock() - self._start:.0f} s"

    def _write(self, line: str) -> None:
        self._written_at, self._written = self._clock(), line
        self._echo(line)


class Stopped(BaseException):
    """SIGINT or SIGTERM, raised in the main thread: unwinds the command (a ``BaseException``, so
    that no ``except Exception`` on the way swallows it); worker pools end on the way out."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


@contextlib.contextmanager
def stop_on_signals(command: str) -> Iterator[None]:
    """Turn the first SIGINT or SIGTERM into :class:`Stopped`; a second one while the first
    unwinds ends *command* at once (its worker processes killed; exit code 128 + the signal).
    Only the main thread can take signals: elsewhere (a command called from a thread) nothing
    changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def handler(signum: int, _frame: object) -> None:
        if received:
            _exit_now(command, signum)
        received.append(signum)
        raise Stopped(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    # A signal that lands while SQLAlchemy returns a connection to its pool is logged there with
    # its traceback before it goes on unwinding: the stop, not an error, so that record is dropped.
    quiet = logging.StreamHandler()
    quiet.setLevel(logging.WARNING)
    quiet.addFilter(_not_a_stop)
    sqlalchemy_log = logging.getLogger("sqlalchemy")
    sqlalchemy_log.addHandler(quiet)
    try:
        yield
    finally:
        sqlalchemy_log.removeHandler(quiet)
        for s, old in previous.items():
            signal.signal(s, old)


def _not_a_stop(record: logging.LogRecord) -> bool:
    """Whether *record* is about anything but a :class:`Stopped` passing through."""
    return not (record.exc_info and isinstance(record.exc_info[1], Stopped))


def _exit_now(command: str, signum: int) -> None:
    """Kill this process's worker processes and exit without unwinding (what is stored was stored
    in whole transactions, which a kill cannot leave half done)."""
    import multiprocessing

    for child in multiprocessing.active_children():
        child.kill()
    sys.stderr.write(f"flysearch {command}: {signal.Signals(signum).name} again: stopped at once\n")
    sys.stderr.flush()
    os._exit(128 + signum)
