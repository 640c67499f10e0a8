"""The life of one worker process, shared by a pool's own workers (:mod:`flysearch.evaluators`)
and a worker server's warm ones (:mod:`flysearch.evaluators`): the task loop, the value a task
returns to end its worker, and how spawned children skip the parent's main module."""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import time
import traceback
import types
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

__all__ = ["Retire", "main_module_hidden", "worker_main"]


def worker_main(
    conn: Connection, func: Callable[[Any], Any], env: Mapping[str, str],
    initializer: Callable[[], None] | None,
) -> None:
    """A worker process's life: run *initializer*, then answer each task that *conn* brings with
    ``func(payload)`` until it brings ``None`` (or a task returns :class:`Retire`)."""
    os.environ.update(env)
    if initializer is not None:
        try:
            initializer()
        except (Exception, SystemExit) as exc:
            # Answer the first task with the failure (the parent reads answers only), then exit.
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            with contextlib.suppress(EOFError, OSError, KeyboardInterrupt):
                msg = conn.recv()
                if msg is not None:
                    now = time.monotonic()
                    detail = f"worker start-up failed: {last}"[:500]
                    conn.send((msg[0], "startup", None, detail, True, (now, now)))
            return
    while True:
        try:
            msg = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if msg is None:
            return
        task_id, payload = msg
        start = time.monotonic()
        try:
            value = func(payload)
        except Exception as exc:  # a task's failure is data for the parent
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            conn.send((task_id, "error", None, last[:500], False, (start, time.monotonic())))
            continue
        retire = isinstance(value, Retire)
        conn.send((task_id, "ok", value.value if retire else value, "", retire, (start, time.monotonic())))
        if retire:
            return


def _defined_in_main(*objs: Any) -> bool:
    """Whether any of *objs* (functions, partials of them) lives in the ``__main__`` module."""
    for obj in objs:
        while isinstance(obj, functools.partial):
            if _defined_in_main(*obj.args, *obj.keywords.values()):
                return True
            obj = obj.func
        if callable(obj) and getattr(obj, "__module__", None) == "__main__":
            return True
    return False


@contextlib.contextmanager
def main_module_hidden(*needed: Any) -> Iterator[None]:
    """Start spawned processes inside this block without re-running the parent's main module.

    A spawned child imports the parent's ``__main__`` script before anything else (the ``flysearch``
    CLI, a benchmark): seconds of imports (Optuna, scikit-learn) that a compile worker or a GPU timer
    never uses, paid by every process of a pool at start-up. Inside this block the children see a
    blank main module. When any of *needed* (the target, its arguments) is defined in ``__main__``,
    the children need it, and nothing is hidden.
    """
    if _defined_in_main(*needed):
        yield
        return
    main = sys.modules["__main__"]
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        sys.modules["__main__"] = main


@dataclass(frozen=True)
class Retire:
    """Return ``Retire(value)`` from a task function to answer *value* and then end the worker.

    For a worker whose state a task may have spoilt (a CUDA context after a failed launch): the
    pool starts a fresh worker for the next task.
    """

    value: Any
