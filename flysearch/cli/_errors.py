"""The one place where a command turns a user's mistake into one line and a non-zero exit code.

* A :class:`FlysearchError` (unknown sampler, malformed file, ...) is a usage error: exit code 2.
* A file the command cannot read or write (a folder given as a file, a missing or read-only folder)
  and a database that is not one (a damaged SQLite file, a text file as Optuna storage) are named
  in one line: exit code 1. A database SQLite cannot open or write is said to be unwritable, not
  damaged; a database server (PostgreSQL) that cannot be reached or dropped the connection (it
  restarted) is said to be lost, with what to run once it is back.
* A full disk, wherever the command meets it, is one line naming the file whose disk is full and
  saying that the same command resumes (:class:`~flysearch.errors.DiskFullError`): exit code 2, as
  it is the user who must make room.

With ``FLYSEARCH_DEBUG=1`` in the environment, each of these also prints its traceback first (to
stderr), so that a failure nobody expected can be traced to the call that raised it.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import sys
import traceback
from collections.abc import Callable
from typing import Any, TypeVar

import click

from flysearch.errors import DiskFullError, FlysearchError

__all__ = ["database_failure", "user_errors"]

F = TypeVar("F", bound=Callable[..., Any])

# What SQLite says of a file it cannot create, open or write (a folder, a read-only file or place):
# the database may be sound, so it is not called damaged.
_NOT_WRITABLE = ("unable to open database file", "attempt to write a readonly database")


def user_errors(func: F) -> F:
    """Decorate a click command so that a user's mistake is one line instead of a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return _traced(func, *args, **kwargs)
        except FlysearchError as exc:
            raise click.UsageError(str(exc)) from None
        except OSError as exc:
            full = DiskFullError.found_in(exc, None)
            if full is not None:
                raise click.UsageError(str(full)) from None
            raise click.ClickException(_os_message(exc)) from None
        except Exception as exc:
            if not database_failure(exc):
                raise
            # SQLite's own error comes from a table database; SQLAlchemy's from the study storage.
            first = ("db", "storage") if isinstance(exc, sqlite3.DatabaseError) else ("storage", "db")
            where = next((str(kwargs[k]) for k in first if kwargs.get(k)), None)
            full = DiskFullError.found_in(exc, where)
            if full is not None:
                raise click.UsageError(str(full)) from None
            reason = str(getattr(exc, "orig", None) or exc.__cause__ or exc).splitlines()[0]
            if _lost_connection(exc):
                storage = kwargs.get("storage")  # a server's URL (a table database is a SQLite file)
                server = _hidden_password(str(storage)) if storage else "the study storage"
                raise click.ClickException(
                    f"Lost the connection to {server} ({_reason(exc)}); what was finished before is stored, "
                    "so run the same command again once the database server is back to resume."
                ) from None
            if any(words in reason for words in _NOT_WRITABLE):  # a place, not a damaged file
                raise click.ClickException(f"{where or 'a database'} cannot be written: {reason}") from None
            raise click.ClickException(
                f"{where or 'a database'} cannot be used: {reason} (is it a flysearch SQLite file?)"
            ) from None

    return wrapper  # type: ignore[return-value]


def _traced(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``func(*args, **kwargs)``; with ``FLYSEARCH_DEBUG`` set, an exception's traceback is
    printed before it propagates."""
    try:
        return func(*args, **kwargs)
    except Exception:
        if os.environ.get("FLYSEARCH_DEBUG"):
            traceback.print_exc()
        raise


def database_failure(exc: BaseException) -> bool:
    """Whether *exc* says that a database file is damaged or is no database: SQLite's own error,
    or SQLAlchemy's or Optuna's wrapping of it (checked only when those packages are loaded)."""
    if isinstance(exc, sqlite3.DatabaseError):
        return True
    sa_exc = sys.modules.get("sqlalchemy.exc")
    if sa_exc is not None and isinstance(exc, sa_exc.DatabaseError):
        return True
    optuna_exc = sys.modules.get("optuna.exceptions")
    return optuna_exc is not None and isinstance(exc, optuna_exc.StorageInternalError)


def _lost_connection(exc: BaseException) -> bool:
    """Whether *exc* says that a database server's connection was lost or could not be made
    (:func:`flysearch.study.lost_connection`; only SQLAlchemy raises that)."""
    if "sqlalchemy.exc" not in sys.modules:
        return False
    from flysearch.study import lost_connection

    return lost_connection(exc)


def _hidden_password(url: str) -> str:
    """*url* with its password, if it has one, shown as ``***``."""
    import sqlalchemy

    try:
        return sqlalchemy.engine.make_url(url).render_as_string(hide_password=True)
    except sqlalchemy.exc.ArgumentError:
        return url


def _reason(exc: BaseException) -> str:
    """The driver's first line about *exc* (or what it wraps)."""
    found: BaseException | None = exc
    while found is not None:
        orig = getattr(found, "orig", None)
        if orig is not None:
            return (str(orig).strip().splitlines() or [type(orig).__name__])[0]
        found = found.__cause__
    return str(exc).splitlines()[0]


def _os_message(exc: OSError) -> str:
    """``<path>: <reason>``, as a shell says it."""
    reason = exc.strerror or str(exc)
    if exc.filename is None:
        return reason
    return f"{exc.filename}: {reason}"
