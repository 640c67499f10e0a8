"""A study that runs in memory and is written to its storage one finished trial at a time, so that
any number of processes can share it.

Optuna's RDB storage commits every step of a trial on its own (the new trial, each parameter, the
user attribute, the state and value): some 36 ms a trial on SQLite, where the sampler of a replay
costs about one. A :class:`SharedStudy` keeps two studies of one name:

* the **working** study, in memory, which the sampler asks and the loop tells;
* the **durable** study, in the storage the user named, which receives each finished trial whole,
  in one short transaction (:func:`flysearch.study._trial_writer.add_finished_trials`).

Each trial is one :meth:`SharedStudy.turn`: a transaction that holds the study's lock (SQLite's
write lock, taken at ``BEGIN IMMEDIATE``; on PostgreSQL an advisory lock of the study), first copies
into the working study the trials other processes finished since this one's last turn, then lets
the caller ask, answer and tell one trial, and writes it. So several processes on one study take
turns: each sees every trial before it asks, no config is compiled twice, their trial numbers agree
with the storage's, and the budget counts the union. A process killed at any point loses only the
trial of its open turn, whose transaction the database rolls back: nothing half-written is left,
and nothing is left RUNNING for another process to mistake for a crash.

A database server that restarts (PostgreSQL) is ridden out between trials: a turn that cannot
reach it waits for it, up to :data:`RECONNECT_S`, before anything of the trial is asked. A restart
in the middle of a turn ends the study with the error, as a kill would: the open trial's
transaction is lost with the connection, and the same command resumes after the trials stored.

Storages that are not SQL databases (an in-memory storage, a journal storage object) are used
directly, by one process.
"""

from __future__ import annotations

import contextlib
import hashlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import optuna
import sqlalchemy as sa
from optuna.trial import FrozenTrial, TrialState

from flysearch._optuna import count_trials, rdb_storage, study_id, study_storage, trial_ids_from
from flysearch.study._sqlite import tune_sqlite
from flysearch.study._trial_writer import add_finished_trials

__all__ = ["RECONNECT_S", "SharedStudy", "Turn", "lost_connection"]

# Seconds a turn waits for a database server it cannot reach (one restarting) before it fails.
RECONNECT_S = 60.0


@dataclass
class Turn:
    """One trial's hold on a shared study.

    Attributes:
        arrived: Trials other processes finished since this process's last turn, in trial order,
            already in the working study.
        finished: Numbers of the working study's trials to write when the turn ends.
    """

    arrived: list[FrozenTrial] = field(default_factory=list)
    finished: list[int] = field(default_factory=list)


class SharedStudy:
    """The working and durable copies of one study (see the module's docstring).

    Args:
        durable: The study as stored (opened by the caller, its settings checked).
        sampler: The sampler the working study asks.
    """

    def __init__(self, durable: optuna.Study, sampler: optuna.samplers.BaseSampler) -> None:
        self.durable = durable
        self._rdb = rdb_storage(durable)
        if self._rdb is not None and self._rdb.engine.url.database in (None, "", ":memory:"):
            self._rdb = None  # an in-memory SQLite database: one connection, one process
        self._seen = 0  # trials of the working study that the storage holds too
        self._started = False
        if self._rdb is None:  # one process, straight into the storage it was given
            self.working = durable
            self.working.sampler = sampler
            self._writer: sa.Engine | None = None
            return
        self.working = optuna.create_study(
            study_name=durable.study_name, storage=optuna.storages.InMemoryStorage(), sampler=sampler,
            direction="minimize",
        )
        url = self._rdb.engine.url
        self._writer = (tune_sqlite(sa.create_engine(url, connect_args={"timeout": 600}), immediate=True)
                        if url.get_backend_name() == "sqlite" else self._rdb.engine)
        self._lock_key = int.from_bytes(
            hashlib.sha256(f"flysearch-study:{durable.study_name}".encode()).digest()[:8], "big", signed=True)

    def close(self) -> None:
        """Release the connections this study opened."""
        if self._writer is not None and self._rdb is not None and self._writer is not self._rdb.engine:
            self._writer.dispose()

    @contextlib.contextmanager
    def turn(self) -> Iterator[Turn]:
        """Hold the study for one trial; the trials in ``finished`` are written when it ends (and
        nothing is, if it ends with an exception)."""
        turn = Turn()
        if self._writer is None:
            if not self._started:  # the first turn: what the storage held when the run began
                turn.arrived = self.working.get_trials(deepcopy=False)
                self._started = True
            yield turn
            return
        conn, turn.arrived = self._begin()
        try:
            yield turn
            storage, working_id = study_storage(self.working), study_id(self.working)
            finished = [storage.get_trial(storage.get_trial_id_from_study_id_trial_number(working_id, n))
                        for n in turn.finished]
            add_finished_trials(self.durable, finished, connection=conn)
            conn.commit()
            self._seen += len(finished)
        except BaseException:
            with contextlib.suppress(sa.exc.SQLAlchemyError):  # a connection already lost
                conn.rollback()
            raise
        finally:
            conn.close()

    def _begin(self) -> tuple[sa.Connection, list[FrozenTrial]]:
        """Open a turn's transaction, take the study's lock and catch up; a database server that
        cannot be reached (restarting) is waited for, up to :data:`RECONNECT_S`."""
        assert self._writer is not None
        deadline = time.monotonic() + RECONNECT_S
        pause = 0.1
        while True:
            conn: sa.Connection | None = None
            try:
                conn = self._writer.connect()
                conn.begin()
                if conn.dialect.name == "postgresql":
                    conn.execute(sa.text("SELECT pg_advisory_xact_lock(:key)"), {"key": self._lock_key})
                return conn, self._catch_up(conn)
            except Exception as exc:
                if conn is not None:
                    with contextlib.suppress(sa.exc.SQLAlchemyError):
                        conn.close()
                if not lost_connection(exc) or time.monotonic() > deadline:
                    raise
            time.sleep(pause)
            pause = min(2 * pause, 2.0)

    def _catch_up(self, conn: sa.Connection) -> list[FrozenTrial]:
        """Copy into the working study the durable trials it lacks; return them."""
        durable_id = study_id(self.durable)
        known = self._seen
        stored = count_trials(conn, durable_id)
        if stored <= known:
            return []
        assert self._rdb is not None
        if stored - known > 16:
            new = self._rdb.get_all_trials(durable_id, deepcopy=False)[known:]
        else:
            new = [self._rdb.get_trial(tid) for tid in trial_ids_from(conn, durable_id, known)]
        for trial in new:
            # A trial another tool left unfinished counts as failed here (it was never told).
            self.working.add_trial(trial if trial.state.is_finished() else _as_failed(trial))
        self._seen += len(new)
        return new


def lost_connection(exc: BaseException) -> bool:
    """Whether *exc* (or what it wraps: Optuna's storage wraps SQLAlchemy's errors) says that a
    database server (PostgreSQL) could not be reached or dropped the connection: SQLAlchemy's
    operational error from a server's driver; never SQLite's, whose errors are about its file."""
    import sqlite3

    found: BaseException | None = exc
    while found is not None:
        if isinstance(found, sa.exc.OperationalError) and not isinstance(found.orig, sqlite3.Error):
            return True
        # A connection the server dropped inside a transaction: SQLAlchemy refuses to reconnect
        # until the transaction is rolled back (its error code 8s2b), the next read's error.
        if isinstance(found, sa.exc.PendingRollbackError) and found.code == "8s2b":
            return True
        found = found.__cause__
    return False


def _as_failed(trial: FrozenTrial) -> FrozenTrial:
    return optuna.trial.create_trial(
        state=TrialState.FAIL, params=trial.params, distributions=trial.distributions,
        user_attrs=trial.user_attrs, system_attrs=trial.system_attrs,
    )
