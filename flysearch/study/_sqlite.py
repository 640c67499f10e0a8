"""SQLite settings for databases that several processes write many small transactions to.

Optuna's RDB storage commits every trial attribute in its own transaction; with SQLite's defaults
(rollback journal, ``synchronous=FULL``) each commit waits for the disk twice, and a live study
spends most of its own time there. :func:`tune_sqlite` switches a SQLite engine to write-ahead
logging with ``synchronous=NORMAL``: a committed transaction survives the process being killed
(SIGKILL) at any point, readers no longer block the writer, and a commit no longer waits for the
disk; only an operating-system crash or power loss can lose the last commits. Other databases
(PostgreSQL) are left alone.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

__all__ = ["tune_sqlite"]


def tune_sqlite(engine: sa.Engine, *, busy_timeout_ms: int = 60_000, immediate: bool = False) -> sa.Engine:
    """Apply the settings to every connection *engine* opens from now on; return *engine*.

    With *immediate*, every transaction begins with ``BEGIN IMMEDIATE`` (it takes the write lock
    at once and waits for it): with write-ahead logging, a transaction that reads and then writes
    while another process committed would otherwise fail at once with "database is locked" instead
    of waiting (Optuna's storage reads, then writes, in one transaction).
    """
    if engine.dialect.name != "sqlite":
        return engine

    @sa.event.listens_for(engine, "connect")
    def _pragmas(dbapi_conn: Any, _record: Any) -> None:
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.close()
        if immediate:
            dbapi_conn.isolation_level = None  # transactions start in the "begin" hook below

    if immediate:

        @sa.event.listens_for(engine, "begin")
        def _begin(conn: sa.Connection) -> None:
            conn.exec_driver_sql("BEGIN IMMEDIATE")

    engine.dispose()  # pooled connections opened before the listener get replaced
    return engine
