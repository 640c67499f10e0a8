"""Child processes that end with the process that started them, however it ends (``kill -9`` too).

Every process flysearch starts (a comparison's workers, compile and GPU-timer pools, a worker
server's spares, a study's workers on other GPUs, a FlyDSL compile subprocess) runs its target
wrapped in a :class:`Lifeline`, ``Process(target=Lifeline(main), ...)`` or
``ProcessPoolExecutor(initializer=Lifeline(init))``. A spawned child takes hold of it as soon as
it reads it, before it imports its target's module (seconds, for Optuna or a compiler):

* On Linux, ``prctl(PR_SET_PDEATHSIG, SIGKILL)``: the kernel kills the child when its parent ends,
  whatever the child is doing (a compiler's C++ holding the interpreter's lock included). The
  kernel sends it when the parent's *thread* that started the child ends, so it is set only for a
  child started by the parent's main thread. The parent may have died before the child set it: the
  child checks that its parent is still the process that started it, and ends if not.
* Everywhere, a watchdog: a daemon thread of the child blocks reading a pipe whose only write end
  the parent holds (one pipe per parent, never closed), and ends the child (``os._exit``) at end of
  file, that is once the parent is gone. It needs the interpreter's lock, so it can come late for a
  child busy in C code; it covers a child started by another thread than the main one, and systems
  without ``prctl``.

A worker server's spare, once handed to a pool of another process, lets go of the server
(:func:`let_go`) and follows that process instead (:func:`stop_with`). A Python subprocess gets its
lifeline through its environment and an inherited descriptor (:func:`for_subprocess`,
:func:`hold_inherited`). multiprocessing's resource tracker needs none: it ends when the last
process holding its pipe (the parent and its spawned workers) has ended.

Example:
    >>> Lifeline(abs)(-2)  # in the process that made it, it only calls its target
    2
    >>> held()
    False
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["ORPHANED_EXIT", "Lifeline", "for_subprocess", "held", "hold_inherited", "let_go", "stop_with"]

ORPHANED_EXIT = 137  # a child's exit code when its parent was gone (as if SIGKILLed with it)
_ENV = "FLYSEARCH_LIFELINE"  # a subprocess's lifeline: "parent pid:main thread (0/1):read fd"
_PR_SET_PDEATHSIG = 1

_pipe: tuple[int, int, int] | None = None  # (this process's pid, read end, write end)
_pipe_lock = threading.Lock()
_holding: tuple[int, bool, threading.Event] | None = None  # (pid, kernel's signal set, watchdog armed)


def _read_end() -> int:
    """The read end of this process's lifeline pipe (made on first use; its write end stays open,
    and in this process only, until the process ends)."""
    global _pipe
    with _pipe_lock:
        if _pipe is None or _pipe[0] != os.getpid():
            read, write = os.pipe()  # neither end is inherited by what this process executes
            _pipe = (os.getpid(), read, write)
        return _pipe[1]


def _after_fork() -> None:
    """In a forked child: close the write end of the parent's pipe (held here, the parent's own
    children would never see it close); the child holds its own lifeline, if it is given one."""
    global _pipe, _holding
    if _pipe is not None:
        with contextlib.suppress(OSError):
            os.close(_pipe[2])
    _pipe = _holding = None


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def _parent_death_signal(signum: int) -> bool:
    """Ask the kernel to send *signum* to this process when its parent thread ends (0: never);
    whether it could (Linux only)."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, ctypes.c_ulong(signum), ctypes.c_ulong(0),
                              ctypes.c_ulong(0), ctypes.c_ulong(0))) == 0
    except (OSError, AttributeError):
        return False


def _hold(parent: int | None, main: bool, fd: Any) -> None:
    """End this process when process *parent* ends (see the module docstring); nothing in *parent*
    itself, in a process that holds a lifeline already, or for no parent (a lifeline pickled other
    than for a spawned child). *fd*: the read end of the parent's pipe (an int, or
    multiprocessing's ``DupFd`` in a spawned child), or ``None``."""
    global _holding
    if parent is None or os.getpid() == parent or (_holding is not None and _holding[0] == os.getpid()):
        return
    signalled = main and _parent_death_signal(signal.SIGKILL)
    if os.getppid() != parent:  # it ended before the kernel was asked
        os._exit(ORPHANED_EXIT)
    armed = threading.Event()
    armed.set()
    _holding = (os.getpid(), signalled, armed)
    fd = fd.detach() if hasattr(fd, "detach") else fd
    if fd is not None:
        os.set_inheritable(fd, False)  # what this child starts holds lifelines of its own
        threading.Thread(target=_watch, args=(fd, armed), name="flysearch-lifeline", daemon=True).start()


def _watch(fd: int, armed: threading.Event) -> None:
    with contextlib.suppress(OSError):
        while os.read(fd, 1):  # nothing is ever written: it returns at end of file
            pass
    if armed.is_set():
        os._exit(ORPHANED_EXIT)


class Lifeline:
    """A child process's target (or a pool's initializer) that ends the child with its parent.

    The parent is the process that pickles it for a spawned child (or forks one); the child holds
    it as soon as it unpickles it, or, forked, when it calls it. The thread that starts the child
    decides whether the kernel's signal can be used (the main thread's only).

    Args:
        target: Called with the child's arguments once the lifeline is held; ``None`` for none.
    """

    def __init__(self, target: Callable[..., Any] | None = None) -> None:
        self.target = target
        self._parent: int | None = os.getpid()
        self._main = threading.current_thread() is threading.main_thread()
        self._fd: int | None = _read_end()

    def __reduce__(self) -> tuple[Any, ...]:
        from multiprocessing import context, reduction

        # Only a spawned child being started gets one (with the pipe's descriptor); the target comes
        # after (as state), so that the child holds on before it imports the target's module. A
        # child a fork server starts is the server's, not this process's: it gets none.
        popen = context.get_spawning_popen()
        if popen is None or "forkserver" in type(popen).__module__:
            return _held_on_arrival, (None, False, None), {"target": self.target}
        main = threading.current_thread() is threading.main_thread()
        return _held_on_arrival, (os.getpid(), main, reduction.DupFd(_read_end())), {"target": self.target}

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        _hold(self._parent, self._main, self._fd)
        return None if self.target is None else self.target(*args, **kwargs)


def _held_on_arrival(parent: int | None, main: bool, fd: Any) -> Lifeline:
    """A lifeline unpickled in a child: held at once."""
    _hold(parent, main, fd)
    lifeline = Lifeline.__new__(Lifeline)
    lifeline._parent, lifeline._main, lifeline._fd = parent, main, None
    return lifeline


def held() -> bool:
    """Whether this process holds a lifeline (it ends with its parent)."""
    return _holding is not None and _holding[0] == os.getpid() and _holding[2].is_set()


def let_go() -> None:
    """Live on when the parent ends (a worker server's spare handed to a pool follows the pool's
    process instead: :func:`stop_with`)."""
    if held():
        assert _holding is not None
        _holding[2].clear()
        if _holding[1]:
            _parent_death_signal(0)


def for_subprocess() -> tuple[dict[str, str], tuple[int, ...]]:
    """A lifeline for a Python subprocess this thread starts: the environment variable and the
    descriptor to pass it (``subprocess.run(..., env={**env, **variables}, pass_fds=fds)``); the
    subprocess calls :func:`hold_inherited` first thing."""
    fd = _read_end()
    main = int(threading.current_thread() is threading.main_thread())
    return {_ENV: f"{os.getpid()}:{main}:{fd}"}, (fd,)


def hold_inherited(environ: Mapping[str, str] | None = None) -> bool:
    """In a subprocess started with :func:`for_subprocess`: hold the lifeline it was given, and
    take its variable out of this process's environment (which its own children inherit); whether
    it was given one."""
    value = (os.environ if environ is None else environ).get(_ENV)
    os.environ.pop(_ENV, None)
    if not value:
        return False
    parent, main, fd = (int(part) for part in value.split(":"))
    _hold(parent, bool(main), fd)
    return True


def stop_with(pid: int, grace_s: float) -> None:
    """Stop this process (SIGTERM: it unwinds) when process *pid*, not its parent, has ended: a
    worker server's spare serving a pool of process *pid* (Linux: the process is watched through
    a pidfd).

    Nobody else can stop this process once *pid* is gone, so it is its own watchdog: if it has not
    exited *grace_s* seconds after the SIGTERM (an unwinding that hangs), it prints its threads'
    stacks to stderr and ends at once. A study database loses nothing a rerun needs: a trial is one
    transaction, and a claim held by the lost trial expires."""
    import faulthandler

    def stop() -> None:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(grace_s)  # a daemon thread: it ends with the process if the process ends first
        print(f"flysearch: process {os.getpid()} did not stop within {grace_s:g} s of the end of "
              f"process {pid}, which it served; its threads, then exiting:", file=sys.stderr, flush=True)
        with contextlib.suppress(Exception):
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        os._exit(1)

    def watch() -> None:
        try:
            fd = os.pidfd_open(pid)
        except OSError:  # already gone
            stop()
            return
        try:
            select.select([fd], [], [])
        finally:
            os.close(fd)
        stop()

    threading.Thread(target=watch, daemon=True, name="flysearch-client-watch").start()
