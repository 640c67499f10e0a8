"""The processes below a command, read from ``/proc`` (Linux): to check that none outlives it."""

from __future__ import annotations

import time
from pathlib import Path

PROC = Path("/proc/self/stat").is_file()  # whether these helpers can see anything here


def stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command name (state first), or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return text.rsplit(")", 1)[1].split()


def descendants(root: int) -> dict[int, str]:
    """Every live process below *root*, with its start time (so that a reused pid is not mistaken)."""
    parents: dict[int, list[int]] = {}
    starts: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := stat(int(entry.name))) is not None and fields[0] not in "ZX":
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
            starts[int(entry.name)] = fields[19]
    found, todo = {}, [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            found[child] = starts[child]
            todo.append(child)
    return found


def alive(pid: int, start: str) -> bool:
    """Whether process *pid*, started at *start*, is still there (a zombie is not)."""
    fields = stat(pid)
    return fields is not None and fields[0] not in "ZX" and fields[19] == start


def spawned(pids: dict[int, str]) -> list[int]:
    """multiprocessing's spawned children among *pids* (workers, spares; not its resource tracker)."""
    out = []
    for pid in pids:
        try:
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                out.append(pid)
        except OSError:
            pass
    return out


def gone_within(pids: dict[int, str], limit_s: float, since: float | None = None) -> float:
    """Seconds (from *since*, a :func:`time.monotonic` time, by default now) until every process of
    *pids* has ended, polled; at most *limit_s*, when some are still there."""
    since = time.monotonic() if since is None else since
    while any(alive(pid, t) for pid, t in pids.items()) and time.monotonic() - since < limit_s:
        time.sleep(0.02)
    return time.monotonic() - since


def survivors(pids: dict[int, str]) -> list[int]:
    return [pid for pid, t in pids.items() if alive(pid, t)]


def kill_all(pids: dict[int, str]) -> None:
    """SIGKILL those of *pids* still there (a failed test leaves nothing behind)."""
    import os
    import signal

    for pid in survivors(pids):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def spin(args: tuple[str, str, bool]) -> None:
    """A child's endless task (a pool's function, a subprocess's body), *args* ``(folder, name,
    hold_gil)``: write ``<folder>/<name>.pid`` (its pid: it is running), then wait for ever, in C
    holding the interpreter's lock (a compiler's C++: no Python thread of the process can run) or
    in ``time.sleep`` (which lets them)."""
    import ctypes
    import os

    folder, name, hold_gil = args
    marker = Path(folder) / f"{name}.pid"
    marker.with_suffix(".tmp").write_text(str(os.getpid()))
    marker.with_suffix(".tmp").replace(marker)  # whole, when it is there
    while True:
        if hold_gil:
            ctypes.PyDLL(None).pause()  # a PyDLL call keeps the lock
        else:
            time.sleep(3600)
