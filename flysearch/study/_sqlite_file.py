"""A SQLite study storage file: made whole or not at all, checked when it is opened.

Optuna creates its schema statement by statement, and with SQLite's Python driver each
``CREATE`` commits on its own. A process killed between ``CREATE TABLE studies`` and the unique
index on the study names leaves a file whose ``studies`` table accepts a name twice; Optuna's
``create_study(load_if_exists=True)`` then adds a second row for the study and every later open
of it fails ("Multiple rows were found"). So a new file is built beside its path and linked into
place (:func:`create_whole`): the path holds a complete storage or nothing, and of several
processes creating it at once, the first link wins and the others open that one. A process
killed while building leaves only its ``.new`` file beside the path; the next creation there
removes it once it is ten minutes old (a build takes well under a second).

:func:`examine` looks at an existing file before Optuna opens it: one that holds other tables
(a table database, compare results) is refused, and one that an interrupted creation left without
the unique index is mended, if the index can be added (the empty study rows a later open added
are dropped first).

Example:
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "study.db")
    >>> create_whole(path, lambda tmp: open(tmp, "w").close())
    True
    >>> create_whole(path, lambda tmp: open(tmp, "w").close())  # it exists: kept as it is
    False
"""

from __future__ import annotations

import contextlib
import glob
import os
import sqlite3
import time
from collections.abc import Callable

from flysearch._optuna import (
    STUDIES_TABLE,
    STUDY_NAME_INDEX,
    mend_study_names,
    repeated_study_names,
)
from flysearch.errors import FlysearchError

__all__ = ["create_whole", "examine", "sqlite_path"]

_STALE_S = 600.0  # a build older than this was left by a killed process


def sqlite_path(url: str) -> str | None:
    """The file of a ``sqlite:///`` URL; ``None`` for other databases and SQLite in memory."""
    if not url.startswith("sqlite:///"):
        return None
    from sqlalchemy.engine import make_url

    path = make_url(url).database
    return path if path and path != ":memory:" else None


def create_whole(path: str, build: Callable[[str], None]) -> bool:
    """Make the file *path* with ``build(tmp)`` (which writes a complete file at *tmp*) if it does
    not exist; whether this call made it. *build*'s errors propagate, and nothing is left at
    *path*."""
    if os.path.exists(path):
        return False
    _sweep(path)
    tmp = f"{path}.{os.getpid()}.new"
    try:
        build(tmp)
        os.link(tmp, path)  # fails if the file appeared meanwhile: the other process's is kept
    except FileExistsError:
        return False
    finally:
        _remove(tmp)
    return True


def _sweep(path: str) -> None:
    """Remove the builds of *path* that killed processes left behind."""
    for stale in glob.glob(f"{glob.escape(path)}.*.new"):
        with contextlib.suppress(OSError):
            if time.time() - os.path.getmtime(stale) > _STALE_S:
                _remove(stale)


def _remove(build: str) -> None:
    for name in (build, f"{build}-journal"):
        with contextlib.suppress(OSError):
            os.unlink(name)


def examine(url: str, path: str) -> None:
    """Refuse the SQLite file *path* (of *url*) if it holds tables but no Optuna study storage;
    add the unique index on study names if an interrupted creation left it out."""
    if not os.path.isfile(path):
        return
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as conn:
            found = dict(conn.execute("SELECT name, type FROM sqlite_master"))
    except sqlite3.DatabaseError:
        return  # not SQLite at all: Optuna's own error says so
    tables = {name for name, kind in found.items() if kind == "table"}
    if tables and STUDIES_TABLE not in tables:
        raise FlysearchError(
            f"{url} is not an Optuna study storage (a table or results database?); give --storage "
            "another file."
        )
    if STUDIES_TABLE in tables and STUDY_NAME_INDEX not in found:
        _mend(url, path, tables)


def _mend(url: str, path: str, tables: set[str]) -> None:
    """Drop the study rows that repeat an earlier row's name and hold nothing, then add the unique
    index on study names, in one transaction. Of the tables that refer to studies, only those
    the interrupted creation made (*tables*) are looked at; Optuna adds the others."""
    conn = sqlite3.connect(path, timeout=60, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        mend_study_names(conn, tables)
        conn.execute("COMMIT")
    except sqlite3.IntegrityError:
        conn.execute("ROLLBACK")
        names = repeated_study_names(conn)
        raise FlysearchError(
            f"{url} holds two studies named {', '.join(map(repr, names))}, each with trials or "
            "attributes (its creation was interrupted); flysearch cannot tell which to keep: give "
            "--storage a new file."
        ) from None
    except sqlite3.OperationalError as exc:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise FlysearchError(f"Cannot open study storage {url!r}: {exc}.") from None
    finally:
        conn.close()
