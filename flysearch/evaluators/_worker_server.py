"""Warm worker processes, served over a Unix socket to the pools of separate commands.

A live study's GPU timer spends 3-5 s starting up (importing torch, creating the GPU's context)
before its first timing, and its compile processes a few tenths of a second importing the compiler:
for a study of a few hundred compiles that is most of what is not compiling or timing. Studies run
by one command share one timer and one compile pool; studies run by separate commands (a shell
loop, a job queue) each pay the start-up again. A *worker server* (``flysearch serve``) keeps spare
worker processes started and warm, and hands one to each pool that asks:

* The server starts, for each :class:`WorkerSpec`, ``spares`` processes that set the spec's
  environment, run its initializer and its ``warm`` task (the timer's ``info``: torch, the GPU),
  and wait.
* A :class:`~flysearch.evaluators.WorkerPool` with ``server=PATH`` asks the server for a
  worker of its function and initializer (:func:`connect_worker`), sending the environment a
  spawned worker of its would have (this process's, with the pool's variables). If the server has
  one that agrees on the variables read once, at start-up (its spec's ``env`` and ``pinned``: the
  GPU a timer owns, ``CUDA_VISIBLE_DEVICES``, set or unset), it passes the client's socket to that
  process, which takes the client's environment as its own (the compiler's cache) and from then on
  is the pool's worker, exactly as a spawned one: same messages, a task at a time, killed by the
  pool on a timeout, ending when the pool closes it or when the pool's process ends, however it
  ends (``kill -9`` too). The server starts a fresh spare in its place at once. A spare not yet
  handed out ends with the server. Served processes are never reused: each serves one pool.
* If there is no server, or no spare of the right kind, the pool spawns its own worker, as without
  a server: a server makes a pool faster to start, never different.

The pool watches a served process (not its child) through a Linux pidfd. Only on Linux, and only
on one host and for one user: the socket lives in a directory only its owner can enter, a pool
talks only to a socket its own user owns, and the messages are pickles, as in the pools' own pipes.

Example:
    >>> from flysearch.evaluators import default_socket
    >>> default_socket().endswith(".sock")
    True
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import os
import pickle
import select
import signal
import socket
import struct
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.reduction import recv_handle, send_handle
from typing import Any, Literal

from flysearch._lifeline import Lifeline, let_go, stop_with
from flysearch.errors import FlysearchError

__all__ = [
    "MAX_COLD_DEATHS",
    "ServedProcess",
    "WorkerServer",
    "WorkerSpec",
    "connect_worker",
    "default_socket",
    "server_status",
    "spec_key",
]

_CONNECT_TIMEOUT_S = 5.0
# Seconds a served worker whose client has ended gets to unwind before it ends itself.
_UNWIND_GRACE_S = 10.0
MAX_COLD_DEATHS = 3  # spares of one kind dying before they are warm, in a row, before the server stops


def default_socket() -> str:
    """The server's socket when none is named: ``$FLYSEARCH_SERVER``, else ``flysearch/workers.sock``
    in ``$XDG_RUNTIME_DIR`` (or in ``flysearch-<uid>`` under the temporary directory)."""
    named = os.environ.get("FLYSEARCH_SERVER")
    if named:
        return named
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    folder = os.path.join(runtime, "flysearch") if runtime else os.path.join(
        tempfile.gettempdir(), f"flysearch-{os.getuid()}")
    return os.path.join(folder, "workers.sock")


def spec_key(func: Callable[[Any], Any], initializer: Callable[[], None] | None) -> bytes:
    """What a served worker runs, as the pool and the server both name it: the pickle of its task
    function and initializer (module-level functions and partials of them pickle by name)."""
    return pickle.dumps((func, initializer), protocol=4)


@dataclass(frozen=True)
class WorkerSpec:
    """A kind of worker the server keeps warm.

    Attributes:
        func: The pool's task function.
        initializer: Run once in the worker before anything else (the pool's initializer).
        env: Environment set before the initializer. A pool gets such a worker only when its own
            environment has these variables with these values (the GPU a timer owns).
        pinned: Variables read once, when the worker starts (``CUDA_VISIBLE_DEVICES``: the GPU its
            context is on): a pool gets such a worker only when its environment has the value the
            worker started with, or lacks it as the worker did.
        warm: A task run once, its answer dropped, before the worker is offered (the timer's
            :class:`~flysearch.evaluators.InfoTask`, which brings the GPU up); ``None`` for none.
        spares: Workers of this kind kept started and waiting.
        name: What ``flysearch serve`` calls this kind (``timer``, ``compile``).
        refill: When a spare handed out is replaced: ``"now"``, or ``"after"`` the worker it became
            has exited (its pool closed), so that its replacement's start-up does not compete for
            the CPU with the study that took it (many compile processes importing a compiler).
    """

    func: Callable[[Any], Any]
    initializer: Callable[[], None] | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    pinned: tuple[str, ...] = ()
    warm: Any = None
    spares: int = 1
    name: str = "worker"
    refill: Literal["now", "after"] = "now"

    @property
    def key(self) -> bytes:
        return spec_key(self.func, self.initializer)


def _exit_cleanly(_signum: int, _frame: Any) -> None:
    raise SystemExit(0)  # unwinds, so that the process's finalizers run (its template database)


def _spare_main(ctrl: Connection, spec: WorkerSpec) -> None:
    """A spare: warm up, say so, then wait to be handed a client's socket and serve it.

    It ends with the server until it is handed out; from then on with its client: when the client's
    process ends, it is stopped (SIGTERM: it unwinds, as a study process does; killed after
    :data:`_UNWIND_GRACE_S`)."""
    from flysearch.evaluators._worker_process import worker_main

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C on the server's terminal is the server's
    signal.signal(signal.SIGTERM, _exit_cleanly)  # the server stopping it while it warms up
    inherited = dict(os.environ)  # the server's
    os.environ.update(spec.env)
    if spec.initializer is not None:
        spec.initializer()
    if spec.warm is not None:
        with contextlib.suppress(Exception):  # a failing warm-up fails the first task instead
            spec.func(spec.warm)
    with contextlib.suppress(OSError):  # handed out before it was warm, the server has let go
        ctrl.send("warm")
    try:
        handed = ctrl.recv()
        if handed is None:
            return
        msg, client = handed
        fd = recv_handle(ctrl)
    except (EOFError, OSError):
        return
    ctrl.close()
    let_go()  # the server may stop now: this process serves its client until the client ends
    stop_with(client, _UNWIND_GRACE_S)
    # The environment a worker spawned by the pool would have: the server's variables the client
    # lacks go (those the initializer or an import set stay), the client's are set.
    for k, v in inherited.items():
        if k not in msg and os.environ.get(k) == v:
            del os.environ[k]
    worker_main(Connection(fd), spec.func, msg, None)


@dataclass
class _Spare:
    process: Any
    ctrl: Connection
    started: dict[str, str | None]  # its spec's env and pinned variables, as it started with them
    warm: bool = False


class WorkerServer:
    """Keeps :class:`WorkerSpec` workers warm and hands them to pools (see the module docstring).

    Args:
        specs: The kinds of workers to serve.
        path: The Unix socket to listen on (default :func:`default_socket`).
    """

    def __init__(self, specs: Sequence[WorkerSpec], path: str | None = None) -> None:
        if not hasattr(os, "pidfd_open"):
            raise OSError("A worker server needs Linux (pidfd_open).")
        self.specs = list(specs)
        self.path = path or default_socket()
        self.served = 0
        self._ctx = mp.get_context("spawn")
        self._spares: dict[int, list[_Spare]] = {i: [] for i in range(len(self.specs))}
        self._handed: list[tuple[int, Any]] = []  # (spec, process) served, children reaped here
        self._sock: socket.socket | None = None
        self._lock = threading.RLock()  # status() may be called from another thread than serving
        self._cold_deaths = [0] * len(self.specs)  # per kind: spares in a row that died warming up

    # -- lifecycle --------------------------------------------------------------------------------

    def start(self) -> None:
        """Bind the socket (refusing one another server is listening on) and start the spares."""
        folder = os.path.dirname(self.path) or "."
        os.makedirs(folder, mode=0o700, exist_ok=True)
        if os.stat(folder).st_uid != os.getuid():
            raise OSError(f"{folder} belongs to another user; name a socket of yours with --socket.")
        if os.path.exists(self.path):
            if server_status(self.path) is not None:
                raise OSError(f"A worker server is already listening on {self.path}.")
            os.unlink(self.path)  # a stale socket of a server that died
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(self.path)
        os.chmod(self.path, 0o600)
        sock.listen(64)
        self._sock = sock
        self._fill()

    def close(self) -> None:
        """Stop listening and end the spares; workers already handed to pools keep serving them."""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self.path)
        for spares in self._spares.values():
            for s in spares:
                with contextlib.suppress(OSError):
                    s.ctrl.send(None)
            for s in spares:
                s.process.join(1.0)
                if s.process.is_alive():  # still warming up: stopped, with its finalizers run
                    s.process.terminate()
                    s.process.join(5.0)
                if s.process.is_alive():
                    s.process.kill()
                    s.process.join()
                s.ctrl.close()
            spares.clear()

    def __enter__(self) -> WorkerServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _start_spare(self, spec: WorkerSpec) -> _Spare:
        parent, child = self._ctx.Pipe()
        proc = self._ctx.Process(target=Lifeline(_spare_main), args=(child, spec), daemon=False)
        from flysearch.evaluators._worker_process import main_module_hidden

        with main_module_hidden(spec.func, spec.initializer):
            proc.start()
        child.close()
        return _Spare(proc, parent, {**{k: os.environ.get(k) for k in spec.pinned}, **spec.env})

    def _fill(self) -> None:
        """Read the spares' news, drop the dead ones and start spares up to each spec's count."""
        self._handed = [(i, p) for i, p in self._handed if p.is_alive()]  # is_alive() reaps the dead
        for i, spec in enumerate(self.specs):
            alive = []
            for s in self._spares[i]:
                try:
                    while not s.warm and s.ctrl.poll():
                        s.warm = s.ctrl.recv() == "warm"
                except (EOFError, OSError):
                    pass
                if s.warm:
                    self._cold_deaths[i] = 0
                if s.process.is_alive():
                    alive.append(s)
                else:
                    s.process.join()
                    s.ctrl.close()
                    if not s.warm:
                        self._died_cold(i, s.process.exitcode)
            serving = sum(j == i for j, _p in self._handed) if spec.refill == "after" else 0
            while len(alive) + serving < spec.spares:
                alive.append(self._start_spare(spec))
            self._spares[i] = alive

    def _died_cold(self, i: int, exitcode: int | None) -> None:
        """Count a spare of kind *i* that died before it was warm; after :data:`MAX_COLD_DEATHS` in
        a row, its warm-up fails every time (a missing package, no GPU): stop instead of starting
        spares for ever."""
        self._cold_deaths[i] += 1
        if self._cold_deaths[i] >= MAX_COLD_DEATHS:
            raise FlysearchError(
                f"{MAX_COLD_DEATHS} {self.specs[i].name} workers in a row died while warming up (the "
                f"last with exit code {exitcode}; their error is above); check that a study of this "
                "kind runs on this machine without --server."
            )

    def status(self) -> dict[str, Any]:
        """Per kind of worker: spares started and spares warm; and workers served so far."""
        with self._lock:
            self._fill()
            kinds = {spec.name: {"spares": len(self._spares[i]), "warm": sum(s.warm for s in self._spares[i])}
                     for i, spec in enumerate(self.specs)}
            return {"pid": os.getpid(), "kinds": kinds, "served": self.served, "serving": len(self._handed)}

    # -- serving ----------------------------------------------------------------------------------

    def serve_forever(self, stop: Callable[[], bool] = lambda: False, tick_s: float = 0.2) -> None:
        """Answer requests until *stop()* is true (checked every *tick_s* seconds)."""
        assert self._sock is not None, "start() the server first"
        while not stop():
            ready, _, _ = select.select([self._sock], [], [], tick_s)
            with self._lock:
                if ready:
                    with contextlib.suppress(OSError):
                        client, _ = self._sock.accept()
                        self._answer(client)
                self._fill()

    def _answer(self, client: socket.socket) -> None:
        # The socket stays blocking: the served worker gets this very file (a timeout here would
        # make it non-blocking there too).
        pid, _uid, _gid = struct.unpack("3i", client.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED,
                                                                struct.calcsize("3i")))
        conn = Connection(client.detach())
        try:
            if not conn.poll(_CONNECT_TIMEOUT_S):
                return
            request = conn.recv()
            if request[0] == "status":
                conn.send(self.status())
            elif request[0] == "worker":
                self._hand(conn, request[1], request[2], pid)
        except (EOFError, OSError, pickle.UnpicklingError, IndexError, TypeError):
            pass
        finally:
            conn.close()

    def _hand(self, conn: Connection, key: bytes, env: Mapping[str, str], client: int) -> None:
        """Give the client (process *client*) a warm spare of its kind (or say why not)."""
        self._fill()
        kinds = [i for i, spec in enumerate(self.specs) if spec.key == key]
        if not kinds:
            conn.send(("no", "this server has no spare of that kind"))
            return
        # Several specs may run the same function: one per GPU, each with its GPU's variables.
        spares = [(i, s) for i in kinds for s in self._spares[i]
                  if all(env.get(k) == v for k, v in s.started.items())]
        if not spares:
            started = [s.started for i in kinds for s in self._spares[i]]
            names = "/".join(dict.fromkeys(self.specs[i].name for i in kinds))
            conn.send(("no", f"no spare {names} worker started with this environment: {started}"))
            return
        i, spare = max(spares, key=lambda pair: pair[1].warm)  # a warm one if there is one
        self._spares[i].remove(spare)
        conn.send(("ok", spare.process.pid))
        try:
            spare.ctrl.send((dict(env), client))
            send_handle(spare.ctrl, conn.fileno(), spare.process.pid)
        except OSError:  # it died after saying it was warm: the client sees a crash
            spare.process.kill()
        spare.ctrl.close()
        self._handed.append((i, spare.process))  # its replacement starts in the next _fill()
        self.served += 1


def _request(path: str, message: tuple[Any, ...]) -> tuple[Connection, Any] | None:
    """Send *message* to the server at *path*; ``(connection, answer)`` or ``None`` when no server
    answers."""
    try:
        if os.stat(path).st_uid != os.getuid():
            return None  # another user's socket: its answers are pickles, not to be trusted
    except OSError:
        return None
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.settimeout(_CONNECT_TIMEOUT_S)
        sock.connect(path)
        sock.settimeout(None)
        conn = Connection(sock.detach())
    except OSError:
        sock.close()
        return None
    try:
        conn.send(message)
        if not conn.poll(_CONNECT_TIMEOUT_S):
            raise OSError("no answer")
        return conn, conn.recv()
    except (EOFError, OSError, pickle.UnpicklingError):
        conn.close()
        return None


def server_status(path: str | None = None) -> dict[str, Any] | None:
    """The status of the server listening on *path* (see :meth:`WorkerServer.status`), or
    ``None`` when none is."""
    answer = _request(path or default_socket(), ("status",))
    if answer is None:
        return None
    conn, status = answer
    conn.close()
    return status


class ServedProcess:
    """A served worker as a pool sees it: the parts of :class:`multiprocessing.Process` a
    :class:`~flysearch.evaluators.WorkerPool` uses, for a process that is not its child (its
    end is seen through a pidfd; its exit code is not known)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._fd = os.pidfd_open(pid)
        self.exitcode: int | None = None

    @property
    def sentinel(self) -> int:
        return self._fd

    def _ended(self, timeout: float | None) -> bool:
        ready, _, _ = select.select([self._fd], [], [], timeout)
        return bool(ready)

    def is_alive(self) -> bool:
        return not self._ended(0.0)

    def join(self, timeout: float | None = None) -> None:
        self._ended(timeout)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        self.exitcode = -signal.SIGKILL

    def terminate(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)

    def __del__(self) -> None:
        with contextlib.suppress(OSError, AttributeError):
            os.close(self._fd)


def connect_worker(path: str, func: Callable[[Any], Any], initializer: Callable[[], None] | None,
                   env: Mapping[str, str]) -> tuple[ServedProcess, Connection] | None:
    """A warm worker from the server at *path* that runs *func* after *initializer* in *env* (the
    whole environment it is to have), as ``(process, connection)`` for a pool; ``None`` when there
    is no server or no such spare."""
    if not hasattr(os, "pidfd_open"):
        return None
    answer = _request(path, ("worker", spec_key(func, initializer), dict(env)))
    if answer is None:
        return None
    conn, (status, value) = answer
    if status != "ok":
        conn.close()
        return None
    try:
        return ServedProcess(int(value)), conn
    except OSError:  # it is already gone
        conn.close()
        return None


@contextlib.contextmanager
def serving(specs: Sequence[WorkerSpec], path: str | None = None) -> Iterator[WorkerServer]:
    """Run a :class:`WorkerServer` in a background thread of this process for the block. What stops
    the server's thread early (its workers die warming up) is raised when the block ends."""
    server = WorkerServer(specs, path)
    server.start()
    done = threading.Event()
    failed: list[BaseException] = []

    def serve() -> None:
        try:
            server.serve_forever(done.is_set)
        except BaseException as e:  # raised in the block's thread when the block ends
            failed.append(e)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        done.set()
        thread.join()
        server.close()
    if failed:
        raise failed[0]


def wait_warm(path: str, timeout_s: float = 120.0) -> dict[str, Any]:
    """Wait until the server at *path* has every spare warm; its status. Raises ``TimeoutError``."""
    deadline = time.monotonic() + timeout_s
    while True:
        status = server_status(path)
        if status is not None and all(k["warm"] >= k["spares"] for k in status["kinds"].values()):
            return status
        if time.monotonic() > deadline:
            raise TimeoutError(f"the worker server at {path} is not warm after {timeout_s:.0f} s: {status}")
        time.sleep(0.1)
