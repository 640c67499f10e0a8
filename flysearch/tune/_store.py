"""Where tuned configs live: one database (SQLite by default, PostgreSQL for many machines) that
holds each kernel's winners, who is tuning what, and the Optuna study of every tuned key.

A winner is stored under (kernel identity, key): the identity names the kernel's source, its space,
the device and the compiler's version (:mod:`flysearch.tune._keys`), so an edited kernel, a
changed space, another GPU or another Triton tunes again instead of reading a stale answer.

**One tuner per key.** A process that meets an untuned key takes the key's lease (an insert that
only one process can win); any other process that meets the same key waits for the winner instead
of tuning it too. A lease whose owner died (same host: its process is gone; elsewhere: no
heartbeat for :attr:`TuneStore.lease_s`) is taken over, and the new owner resumes the dead one's
study, so nothing it compiled is compiled again.

Example:
    >>> import tempfile
    >>> store = TuneStore(store_url(f"{tempfile.mkdtemp()}/tuned.db"))
    >>> store.acquire("softmax:ab12", "n_cols=4096")
    True
    >>> store.finish("softmax:ab12", "n_cols=4096", {"BLOCK": 4096, "num_warps": 8}, {"compiles": 12})
    >>> store.winner("softmax:ab12", "n_cols=4096")
    {'BLOCK': 4096, 'num_warps': 8}
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
import sqlalchemy as sa

from flysearch.errors import AutotuneError
from flysearch.study import open_storage, pid_alive, sql_engine

__all__ = ["DEFAULT_STORE", "STORE_ENV", "TuneStore", "Tuned", "store_url"]

STORE_ENV = "FLYSEARCH_AUTOTUNE_DB"
"""The environment variable naming the store (a path or a database URL)."""

DEFAULT_STORE = "~/.cache/flysearch/autotune.db"
"""The store when neither the decorator nor :data:`STORE_ENV` names one."""

_meta = sa.MetaData()
_tuned = sa.Table(
    "flysearch_autotune", _meta,
    sa.Column("kernel", sa.String(400), primary_key=True),
    sa.Column("key", sa.String(2000), primary_key=True),
    sa.Column("name", sa.String(200), nullable=False, default=""),
    sa.Column("state", sa.String(16), nullable=False),  # "tuning" or "done"
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("started", sa.Float, nullable=False),
    sa.Column("heartbeat", sa.Float, nullable=False),
    sa.Column("config", sa.Text),
    sa.Column("report", sa.Text),
)

_rejected = sa.Table(
    "flysearch_autotune_rejected", _meta,
    sa.Column("kernel", sa.String(400), primary_key=True),  # the identity on an arch, not a device
    sa.Column("key", sa.String(2000), primary_key=True),
    sa.Column("config", sa.String(2000), primary_key=True),
    sa.Column("reason", sa.String(200), nullable=False),
)


def store_url(store: str | os.PathLike[str] | None = None) -> str:
    """The database URL of *store*: a URL as given, a path as a SQLite URL (its folder made), and
    ``None`` as :data:`STORE_ENV` or :data:`DEFAULT_STORE`.

    Raises:
        AutotuneError: the path's folder cannot be made or written.
    """
    text = str(store) if store is not None else os.environ.get(STORE_ENV) or DEFAULT_STORE
    if "://" in text:
        return text
    path = Path(text).expanduser().absolute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AutotuneError(f"Cannot make the autotune store's folder {path.parent} ({exc.strerror}); "
                            f"name a writable path with store= or {STORE_ENV}.") from None
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise AutotuneError(f"The autotune store {path} is not writable; name a writable path with "
                            f"store= or {STORE_ENV}.")
    return f"sqlite:///{path}"


@dataclass(frozen=True)
class Tuned:
    """One stored key: its winner (``None`` while it is being tuned) and its tuning report."""

    kernel: str
    name: str
    key: str
    state: str
    config: dict[str, Any] | None
    report: dict[str, Any]


class TuneStore:
    """The winners and leases of an autotune store (the Optuna studies share its database).

    Args:
        url: A database URL (:func:`store_url` makes one from a path).
        lease_s: A lease held by a process on another host expires this long after its last
            heartbeat.
    """

    def __init__(self, url: str, *, lease_s: float = 60.0) -> None:
        self.url, self.lease_s = url, lease_s
        self.host, self.pid = socket.gethostname(), os.getpid()
        self._engine: sa.Engine | None = None
        self._optuna: optuna.storages.BaseStorage | None = None

    def _open(self) -> None:
        """Open the database on first use: Optuna's schema first (a new SQLite file is made whole
        by :func:`flysearch.study.open_storage`), then the store's own table."""
        try:
            self._optuna = open_storage(self.url)
            engine = sql_engine(self.url)
            _meta.create_all(engine, checkfirst=True)
        except (sa.exc.OperationalError, OSError) as exc:
            raise AutotuneError(f"Cannot open the autotune store {self.url} ({getattr(exc, 'orig', exc)}); "
                                f"name a writable store with store= or {STORE_ENV}.") from None
        except ModuleNotFoundError as exc:
            raise AutotuneError(f"The store {self.url} needs the {exc.name} driver: pip install "
                                "'flysearch[postgres]'.") from None
        self._engine = engine

    @property
    def engine(self) -> sa.Engine:
        if self._engine is None:
            self._open()
        assert self._engine is not None
        return self._engine

    @property
    def optuna(self) -> optuna.storages.BaseStorage:
        """The Optuna storage of the tuned keys' studies (same database)."""
        if self._optuna is None:
            self._open()
        assert self._optuna is not None
        return self._optuna

    @contextmanager
    def _write(self) -> Iterator[sa.Connection]:
        with self.engine.connect().execution_options(immediate=True) as c, c.begin():
            yield c

    # -- reading ----------------------------------------------------------------------------------

    def winner(self, kernel: str, key: str) -> dict[str, Any] | None:
        """The stored winner of (*kernel*, *key*), ``None`` if it is not tuned yet."""
        with self.engine.connect() as c:
            row = c.execute(sa.select(_tuned.c.config).where(
                _tuned.c.kernel == kernel, _tuned.c.key == key, _tuned.c.state == "done")).first()
        return json.loads(row.config) if row is not None else None

    def tuned(self, kernel: str | None = None, *, name: str | None = None) -> list[Tuned]:
        """Every stored key (of one *kernel* identity, or of every identity of kernel *name*)."""
        query = sa.select(_tuned)
        if kernel is not None:
            query = query.where(_tuned.c.kernel == kernel)
        if name is not None:
            query = query.where(_tuned.c.name == name)
        with self.engine.connect() as c:
            rows = c.execute(query.order_by(_tuned.c.name, _tuned.c.kernel, _tuned.c.key)).all()
        return [Tuned(r.kernel, r.name, r.key, r.state, json.loads(r.config) if r.config else None,
                      json.loads(r.report or "{}")) for r in rows]

    def rejected(self, kernel: str, key: str) -> dict[str, str]:
        """The configs of (*kernel*, *key*) that compiled for an arch but must never run there
        (config key -> reason, e.g. ``"resource:spills"``)."""
        with self.engine.connect() as c:
            rows = c.execute(sa.select(_rejected.c.config, _rejected.c.reason).where(
                _rejected.c.kernel == kernel, _rejected.c.key == key)).all()
        return {r.config: r.reason for r in rows}

    def reject(self, kernel: str, key: str, reasons: dict[str, str]) -> None:
        """Record configs of (*kernel*, *key*) as never to run (config key -> reason), all at once;
        a config recorded before keeps its first reason."""
        known = self.rejected(kernel, key)
        new = [{"kernel": kernel, "key": key, "config": c, "reason": r} for c, r in reasons.items()
               if c not in known]
        if new:
            with self._write() as c:
                c.execute(_rejected.insert(), new)

    # -- the lease --------------------------------------------------------------------------------

    def acquire(self, kernel: str, key: str, *, name: str = "") -> bool:
        """Take the lease of (*kernel*, *key*) to tune it: True for this process alone; False when
        the key is tuned already or a live process holds it. A dead holder's lease is taken over."""
        now = time.time()
        row = {"kernel": kernel, "key": key, "name": name, "state": "tuning", "host": self.host,
               "pid": self.pid, "started": now, "heartbeat": now}
        try:
            with self._write() as c:
                c.execute(_tuned.insert().values(**row))
            return True
        except sa.exc.IntegrityError:
            pass
        with self._write() as c:
            held = c.execute(sa.select(_tuned).where(_tuned.c.kernel == kernel, _tuned.c.key == key)).first()
            if held is None or held.state == "done" or self._alive(held):
                return False
            c.execute(_tuned.update().where(_tuned.c.kernel == kernel, _tuned.c.key == key).values(
                host=self.host, pid=self.pid, started=now, heartbeat=now))
        return True

    def _alive(self, held: Any) -> bool:
        if held.host == self.host:
            return held.pid == self.pid or pid_alive(held.pid, since=held.started)
        return time.time() - held.heartbeat < self.lease_s

    def holder_alive(self, kernel: str, key: str) -> bool:
        """Whether (*kernel*, *key*) is being tuned by a live process."""
        with self.engine.connect() as c:
            held = c.execute(sa.select(_tuned).where(_tuned.c.kernel == kernel, _tuned.c.key == key)).first()
        return held is not None and held.state == "tuning" and self._alive(held)

    @contextmanager
    def heartbeat(self, kernel: str, key: str, *, every_s: float = 5.0) -> Iterator[None]:
        """Keep this process's lease of (*kernel*, *key*) fresh while the block runs."""
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(every_s):
                try:
                    with self._write() as c:
                        c.execute(_tuned.update().where(
                            _tuned.c.kernel == kernel, _tuned.c.key == key, _tuned.c.pid == self.pid,
                            _tuned.c.host == self.host).values(heartbeat=time.time()))
                except sa.exc.SQLAlchemyError:
                    pass  # the next beat tries again; a lease outlives a few missed beats

        thread = threading.Thread(target=beat, name="flysearch-autotune-lease", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def finish(self, kernel: str, key: str, config: dict[str, Any], report: dict[str, Any]) -> None:
        """Store the winner of (*kernel*, *key*) and release its lease."""
        with self._write() as c:
            c.execute(_tuned.update().where(_tuned.c.kernel == kernel, _tuned.c.key == key).values(
                state="done", config=json.dumps(config, sort_keys=True),
                report=json.dumps(report, sort_keys=True), heartbeat=time.time()))

    def release(self, kernel: str, key: str) -> None:
        """Give up this process's lease of (*kernel*, *key*) without a winner (its study stays, so
        whoever tunes the key next resumes it)."""
        with self._write() as c:
            c.execute(_tuned.delete().where(_tuned.c.kernel == kernel, _tuned.c.key == key,
                                            _tuned.c.state == "tuning", _tuned.c.pid == self.pid,
                                            _tuned.c.host == self.host))

    def forget(self, kernel: str, key: str | None = None) -> int:
        """Delete the stored winners of *kernel* (one *key*, or all): the next call tunes again."""
        query = _tuned.delete().where(_tuned.c.kernel == kernel)
        if key is not None:
            query = query.where(_tuned.c.key == key)
        with self._write() as c:
            return int(c.execute(query).rowcount)

    def close(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
