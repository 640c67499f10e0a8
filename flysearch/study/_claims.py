"""Per-config claims that let many workers share one study without compiling anything twice.

A live study's workers (one per GPU, on one host or many) share the study's Optuna storage, and
beside Optuna's tables this module keeps three of its own in the same database (SQLite or
PostgreSQL):

* ``flysearch_workers``: who works on which study, from which host and process, and when each last
  gave a sign of life (its *heartbeat*);
* ``flysearch_slots``: per study, how many compile slots were granted (the budget counter);
* ``flysearch_claims``: one row per (study, config key): the worker that claimed it, its unique
  compile index, its state (``claimed`` -> ``compiled`` -> ``done`` or ``failed``) and, once
  finished, the measurement.

A claim is taken in **one transaction**: the slot counter is incremented only while it is below
the budget, and the claim row is inserted under the (study, key) primary key. Two workers that race
for one config cannot both win: the loser's insert violates the key, its transaction (slot
included) rolls back, and it reads the winner's row instead. A claim whose worker is dead (its
process is gone, on this host, or its id now belongs to a process started after the worker
registered; on another host, its heartbeat is older than the lease) is taken over with a
compare-and-set on the old owner; after ``max_attempts`` takeovers the config is recorded as failed
(it keeps killing the workers that evaluate it) instead of being retried forever. A worker that was
only stalled finds out when it records its result: the update matches no row it holds
(:meth:`ClaimStore.finish_many` with ``lost_ok`` returns those keys).

Example:
    >>> from flysearch.study._claims import ClaimStore
    >>> store = ClaimStore("sqlite:///:memory:", "demo")
    >>> store.claim("BM=64", budget=10).status
    'granted'
    >>> store.claim("BM=64", budget=10).status  # held by a live worker (here: itself)
    'busy'

Thread safety: one :class:`ClaimStore` per worker process; processes share the database.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import psutil
import sqlalchemy as sa

from flysearch.errors import FlysearchError
from flysearch.study._sqlite import tune_sqlite

__all__ = ["Claim", "ClaimRow", "ClaimStore", "WorkerInfo", "create_claim_tables", "pid_alive", "sql_engine"]

# Workers of this process whose stores are open (another worker with this pid is a dead one whose
# process id was reused).
_OPEN_HERE: set[str] = set()

# A process's start time as the system reports it can trail the clock by a tick or two; a worker
# registers a good second after its process started (its imports), so a slack of 1 s never mistakes
# the worker's own process for a newer one.
_START_SLACK_S = 1.0

ClaimStatus = Literal["granted", "compiled", "done", "failed", "busy", "full"]

_meta = sa.MetaData()
_workers = sa.Table(
    "flysearch_workers", _meta,
    sa.Column("worker", sa.String(128), primary_key=True),
    sa.Column("study", sa.String(512), nullable=False, index=True),
    sa.Column("host", sa.String(256), nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("started", sa.Float, nullable=False),
    sa.Column("heartbeat", sa.Float, nullable=False),
    sa.Column("gpu", sa.String(64), nullable=False, default=""),
)
_slots = sa.Table(
    "flysearch_slots", _meta,
    sa.Column("study", sa.String(512), primary_key=True),
    sa.Column("granted", sa.Integer, nullable=False, default=0),
)
_claims = sa.Table(
    "flysearch_claims", _meta,
    sa.Column("study", sa.String(512), primary_key=True),
    sa.Column("key", sa.String(1024), primary_key=True),
    sa.Column("worker", sa.String(128), nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("compile_index", sa.Integer, nullable=False),
    sa.Column("attempts", sa.Integer, nullable=False, default=1),
    sa.Column("claimed_at", sa.Float, nullable=False),
    sa.Column("finished_at", sa.Float),
    sa.Column("params", sa.Text, nullable=False, default="{}"),
    sa.Column("result", sa.Text),
    sa.Column("trial", sa.Integer),
)


@dataclass(frozen=True)
class WorkerInfo:
    """A worker of a study, as registered."""

    worker: str
    host: str
    pid: int
    heartbeat: float
    gpu: str = ""
    started: float | None = None  # time.time() at registration


@dataclass(frozen=True)
class ClaimRow:
    """One config's claim: who holds it, its compile index, and its result once finished."""

    key: str
    worker: str
    state: str
    compile_index: int
    attempts: int
    params: dict[str, Any] = field(default_factory=dict)
    result: dict[str, Any] | None = None
    finished_at: float | None = None
    trial: int | None = None

    @property
    def finished(self) -> bool:
        return self.state in ("done", "failed")


@dataclass(frozen=True)
class Claim:
    """The answer to a claim request.

    ``status``: ``"granted"`` (this worker compiles it, at ``row.compile_index``), ``"compiled"``
    (granted by takeover of a dead worker's claim whose compile had finished: only the timing is
    left), ``"done"``/``"failed"`` (finished already: ``row.result`` holds the answer), ``"busy"``
    (a live worker holds it) or ``"full"`` (the budget of compile slots is spent).
    """

    status: ClaimStatus
    row: ClaimRow | None = None


def pid_alive(pid: int, *, since: float | None = None) -> bool:
    """Whether a process with this id exists on this host; with *since* (the ``time.time()`` at
    which a worker of that id registered), also whether it had started by then: a process started
    later has taken a dead worker's id, which the system hands out again."""
    try:
        process = psutil.Process(pid)
        return since is None or process.create_time() <= since + _START_SLACK_S
    except psutil.NoSuchProcess:
        return False
    except psutil.AccessDenied:  # it exists; whose it is cannot be told
        return True


def sql_engine(url: str) -> sa.Engine:
    """A SQLAlchemy engine on *url*: SQLite with a 60 s lock timeout and write transactions that
    take the lock at BEGIN (``execution_options(immediate=True)``); other servers with pre-ping."""
    if url.startswith("sqlite"):
        engine = sa.create_engine(url, connect_args={"timeout": 60})

        @sa.event.listens_for(engine, "connect")
        def _no_implicit_begin(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # let the "begin" hook below start transactions

        @sa.event.listens_for(engine, "begin")
        def _begin(conn: sa.Connection) -> None:
            # A write transaction takes SQLite's write lock at BEGIN: a claim reads, then writes,
            # and two readers that both try to upgrade would deadlock. Reads begin deferred.
            immediate = conn.get_execution_options().get("immediate", False)
            conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

        return tune_sqlite(engine)
    return sa.create_engine(url, pool_pre_ping=True)


def create_claim_tables(url: str) -> None:
    """Create the claim tables in the database at *url* (idempotent)."""
    engine = sql_engine(url)
    try:
        _meta.create_all(engine, checkfirst=True)
    finally:
        engine.dispose()


class ClaimStore:
    """The claims of one study in a SQLAlchemy database (SQLite or PostgreSQL URL).

    Args:
        url: Database URL (the study's Optuna storage URL).
        study: Study name.
        gpu: The GPU this worker times on (recorded, for ``flysearch study workers``).
        lease_s: A worker whose heartbeat is older than this is dead (for workers on other hosts;
            on this host a worker whose process is gone is dead at once).
        max_attempts: A config whose claim was taken over this many times is recorded as failed.
    """

    def __init__(self, url: str, study: str, *, gpu: str = "", lease_s: float = 120.0,
                 max_attempts: int = 5) -> None:
        self.url, self.study = url, study
        self.lease_s, self.max_attempts = lease_s, max_attempts
        try:
            self.engine = sql_engine(url)
            _meta.create_all(self.engine, checkfirst=True)
            self._writer = self.engine.execution_options(immediate=True)
        except sa.exc.SQLAlchemyError as exc:
            raise FlysearchError(f"Cannot open the claims of {url!r}: {str(exc).splitlines()[0]}.") from None
        self.host = socket.gethostname()
        self.pid = os.getpid()
        self.worker = f"{self.host}:{self.pid}:{uuid.uuid4().hex[:8]}"
        now = time.time()
        with self._writer.begin() as c:
            c.execute(_workers.insert().values(worker=self.worker, study=study, host=self.host,
                                               pid=self.pid, started=now, heartbeat=now, gpu=gpu))
            if c.execute(sa.select(_slots.c.granted).where(_slots.c.study == study)).first() is None:
                try:
                    with c.begin_nested():
                        c.execute(_slots.insert().values(study=study, granted=0))
                except sa.exc.IntegrityError:
                    pass  # another worker created it first
        self._last_beat = now
        _OPEN_HERE.add(self.worker)

    def close(self) -> None:
        """Unregister this worker (its finished claims stay) and release the connections."""
        _OPEN_HERE.discard(self.worker)
        with self._writer.begin() as c:
            c.execute(_workers.delete().where(_workers.c.worker == self.worker))
        self.engine.dispose()

    # -- liveness ---------------------------------------------------------------------------------

    def heartbeat(self, *, every_s: float = 5.0) -> None:
        """Tell the others this worker is alive (at most once per *every_s* seconds)."""
        now = time.time()
        if now - self._last_beat < every_s:
            return
        with self._writer.begin() as c:
            c.execute(_workers.update().where(_workers.c.worker == self.worker).values(heartbeat=now))
        self._last_beat = now

    def workers(self) -> list[WorkerInfo]:
        """The workers registered on this study (live or dead and not yet cleaned up)."""
        with self.engine.connect() as c:
            return list(self._known(c).values())

    def _known(self, c: sa.Connection) -> dict[str, WorkerInfo]:
        rows = c.execute(sa.select(_workers).where(_workers.c.study == self.study)).all()
        return {r.worker: WorkerInfo(r.worker, r.host, r.pid, r.heartbeat, r.gpu, r.started) for r in rows}

    def alive(self, worker: str, *, known: dict[str, WorkerInfo] | None = None) -> bool:
        """Whether *worker* is alive: this worker; on this host, a process with its id that had
        started when it registered (:func:`pid_alive`); or a worker elsewhere whose heartbeat is
        within the lease."""
        if worker == self.worker:
            return True
        info = (known if known is not None else {w.worker: w for w in self.workers()}).get(worker)
        if info is None:
            return False
        if info.host == self.host:
            if info.pid == self.pid:  # this process: alive while its store is open
                return worker in _OPEN_HERE
            return pid_alive(info.pid, since=info.started)
        return time.time() - info.heartbeat < self.lease_s

    # -- claims -----------------------------------------------------------------------------------

    def claim(self, key: str, *, budget: int, params: dict[str, Any] | None = None,
              trial: int | None = None) -> Claim:
        """Claim *key* for this worker, for Optuna trial number *trial* (see :class:`Claim`)."""
        for _ in range(5):
            try:
                return self._claim_once(key, budget, params or {}, trial)
            except sa.exc.IntegrityError:
                continue  # another worker inserted the key between our read and our insert
        row = self.get(key)
        return Claim("busy", row)

    def _claim_once(self, key: str, budget: int, params: dict[str, Any], trial: int | None) -> Claim:
        now = time.time()
        with self._writer.begin() as c:
            existing = c.execute(self._select_key(key)).first()
            if existing is not None:
                row = _row(existing)
                if row.finished:
                    return Claim(row.state, row)  # type: ignore[arg-type]
                if self.alive(row.worker, known=self._known(c)):
                    return Claim("busy", row)
                return self._take_over(c, row, now, trial)
            granted = c.execute(
                _slots.update().where(_slots.c.study == self.study, _slots.c.granted < budget)
                .values(granted=_slots.c.granted + 1)
            )
            if granted.rowcount == 0:
                return Claim("full")
            index = c.execute(sa.select(_slots.c.granted).where(_slots.c.study == self.study)).scalar_one()
            c.execute(_claims.insert().values(
                study=self.study, key=key, worker=self.worker, state="claimed", compile_index=index,
                attempts=1, claimed_at=now, params=json.dumps(params, sort_keys=True), trial=trial,
            ))
        return Claim("granted", ClaimRow(key, self.worker, "claimed", index, 1, params, trial=trial))

    def _take_over(self, c: sa.Connection, row: ClaimRow, now: float, trial: int | None) -> Claim:
        where = sa.and_(_claims.c.study == self.study, _claims.c.key == row.key,
                        _claims.c.worker == row.worker)
        if row.attempts >= self.max_attempts:
            result = {"outcome": "runtime_failed", "time_ms": None,
                      "detail": f"the worker evaluating it died {row.attempts} times; not retried"}
            done = c.execute(_claims.update().where(where).values(
                worker=self.worker, state="failed", finished_at=now, result=json.dumps(result), trial=trial))
            if done.rowcount == 0:
                return Claim("busy", row)
            return Claim("failed", ClaimRow(row.key, self.worker, "failed", row.compile_index, row.attempts,
                                            row.params, result, now, trial))
        moved = c.execute(_claims.update().where(where).values(
            worker=self.worker, attempts=row.attempts + 1, claimed_at=now, trial=trial))
        if moved.rowcount == 0:
            return Claim("busy", row)  # another worker took it over first
        status: ClaimStatus = "compiled" if row.state == "compiled" else "granted"
        return Claim(status, ClaimRow(row.key, self.worker, row.state, row.compile_index, row.attempts + 1,
                                      row.params, row.result, trial=trial))

    def _select_key(self, key: str) -> sa.Select[Any]:
        query = sa.select(_claims).where(_claims.c.study == self.study, _claims.c.key == key)
        return query if self.url.startswith("sqlite") else query.with_for_update()

    @contextlib.contextmanager
    def writing(self) -> Iterator[sa.Connection]:
        """One write transaction on the study's database, which also holds Optuna's tables: the
        claims it records and whatever else the caller writes there (a measurement's trial) are
        committed together, or not at all."""
        with self._writer.begin() as c:
            yield c

    def compiled(self, key: str, result: dict[str, Any]) -> None:
        """Record that *key*'s compile finished (a takeover then only re-times it)."""
        self.compiled_many({key: result})

    def compiled_many(self, results: dict[str, dict[str, Any]], *, conn: sa.Connection | None = None,
                      lost_ok: bool = False) -> list[str]:
        """Record several finished compiles (key -> compile result) in one transaction; see
        :meth:`finish_many` for *conn* and *lost_ok*."""
        return self._set_many([(key, "compiled", result, False) for key, result in results.items()],
                              conn, lost_ok)

    def finish(self, key: str, result: dict[str, Any], *, failed: bool = False) -> None:
        """Record *key*'s measurement (or failure); the claim is then final."""
        self.finish_many([(key, result, failed)])

    def finish_many(self, results: Sequence[tuple[str, dict[str, Any], bool]], *,
                    conn: sa.Connection | None = None, lost_ok: bool = False) -> list[str]:
        """Record several measurements ``(key, result, failed)`` in one transaction (in *conn*'s,
        from :meth:`writing`, when given).

        A claim this worker no longer holds (another worker took it over, having found this one
        dead: its heartbeat was older than the lease) raises :class:`FlysearchError`, or with
        *lost_ok* is left alone and its key returned (the others are recorded).
        """
        return self._set_many([(key, "failed" if failed else "done", result, True)
                               for key, result, failed in results], conn, lost_ok)

    def _set_many(self, updates: list[tuple[str, str, dict[str, Any], bool]],
                  conn: sa.Connection | None, lost_ok: bool) -> list[str]:
        if not updates:
            return []
        now = time.time()
        rows = [(key, {"state": state, "result": json.dumps(result, sort_keys=True),
                       **({"finished_at": now} if finished else {})})
                for key, state, result, finished in updates]
        if conn is None:
            with self.writing() as c:
                return self._apply(c, rows, lost_ok)
        return self._apply(conn, rows, lost_ok)

    def _apply(self, c: sa.Connection, rows: list[tuple[str, dict[str, Any]]], lost_ok: bool) -> list[str]:
        lost = []
        for key, values in rows:
            done = c.execute(_claims.update().where(
                _claims.c.study == self.study, _claims.c.key == key, _claims.c.worker == self.worker,
                _claims.c.state.in_(("claimed", "compiled")),
            ).values(**values))
            if done.rowcount != 1:
                if not lost_ok:  # raised inside the transaction: nothing of it is recorded
                    raise FlysearchError(
                        f"Config {key} of study {self.study!r} is not claimed by this worker.")
                lost.append(key)
        return lost

    def get(self, key: str) -> ClaimRow | None:
        with self.engine.connect() as c:
            found = c.execute(sa.select(_claims).where(_claims.c.study == self.study,
                                                      _claims.c.key == key)).first()
        return _row(found) if found is not None else None

    def rows(self, *, finished_only: bool = False) -> list[ClaimRow]:
        """Every claim of the study, in compile-index order."""
        query = sa.select(_claims).where(_claims.c.study == self.study, _claims.c.state != "lock")
        query = query.order_by(_claims.c.compile_index)
        if finished_only:
            query = query.where(_claims.c.state.in_(("done", "failed")))
        with self.engine.connect() as c:
            return [_row(r) for r in c.execute(query).all()]

    def finished_since(self, since: float, *, others_only: bool = False) -> list[ClaimRow]:
        """Claims finished at or after *since* (``time.time()`` seconds of the finishing host);
        with *others_only*, only other workers' claims."""
        query = sa.select(_claims).where(_claims.c.study == self.study,
                                         _claims.c.state.in_(("done", "failed")),
                                         _claims.c.finished_at >= since)
        if others_only:
            query = query.where(_claims.c.worker != self.worker)
        with self.engine.connect() as c:
            return [_row(r) for r in c.execute(query).all()]

    def in_flight(self) -> list[ClaimRow]:
        """Claims not finished yet (being compiled or timed, or left by a dead worker)."""
        query = sa.select(_claims).where(_claims.c.study == self.study,
                                         _claims.c.state.in_(("claimed", "compiled")))
        with self.engine.connect() as c:
            return [_row(r) for r in c.execute(query).all()]

    def stale(self) -> list[ClaimRow]:
        """Unfinished claims whose workers are dead (to re-claim on resume)."""
        known = {w.worker: w for w in self.workers()}
        return [r for r in self.rows() if not r.finished and not self.alive(r.worker, known=known)]

    def granted(self) -> int:
        """Compile slots granted so far (finished, in flight, or stale)."""
        with self.engine.connect() as c:
            value = c.execute(sa.select(_slots.c.granted).where(_slots.c.study == self.study)).scalar()
        return int(value or 0)

    def counts(self) -> dict[str, int]:
        """Claims per state."""
        with self.engine.connect() as c:
            rows = c.execute(sa.select(_claims.c.state, sa.func.count()).where(
                _claims.c.study == self.study, _claims.c.state != "lock").group_by(_claims.c.state)).all()
        return {state: int(n) for state, n in rows}

    def try_lock(self, name: str) -> bool:
        """Take a one-off study-wide lock called *name* (e.g. the finalists round): True for the
        one worker that gets it, whatever the number of workers asking."""
        try:
            with self._writer.begin() as c:
                c.execute(_claims.insert().values(
                    study=self.study, key=f"__{name}__", worker=self.worker, state="lock",
                    compile_index=0, attempts=1, claimed_at=time.time(), params="{}"))
        except sa.exc.IntegrityError:
            return False
        return True


def _row(r: Any) -> ClaimRow:
    return ClaimRow(r.key, r.worker, r.state, r.compile_index, r.attempts, json.loads(r.params or "{}"),
                    json.loads(r.result) if r.result else None, r.finished_at, r.trial)
