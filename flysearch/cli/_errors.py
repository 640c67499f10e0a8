"""The one place where a command turns a user's mistake into one line and a non-zero exit code.

* A :class:`FlysearchError` (unknown sampler, malformed file, ...) is a usage error: exit code 2.
* A file the command cannot read or write (a folder given as a file, a missing or read-only folder)
  and a database that is not one (a damaged SQLite file, a text file as Optuna storage) are named
  in one line: exit code 1. A database SQLite cannot open or write is said to be unwritable, not
  damaged.

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

from flysearch.errors import FlysearchError

__all__ = ["database_failure", "user_errors"]

F = TypeVar("F", bound=Callable[..., Any])

# What SQLite says of a file it cannot create, open or write (a folder, a read-only file or place, a
# full disk, a write the system refused, such as one past a file size limit): the database may be
# sound, so it is not called damaged.
_NOT_WRITABLE = ("unable to open database file", "attempt to write a readonly database",
                 "database or disk is full", "disk I/O error")


def user_errors(func: F) -> F:
    """Decorate a click command so that a user's mistake is one line instead of a traceback."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return _traced(func, *args, **kwargs)
        except FlysearchError as exc:
            raise click.UsageError(str(exc)) from None
        except OSError as exc:
            raise click.ClickException(_os_message(exc)) from None
        except Exception as exc:
            if not database_failure(exc):
                raise
            # SQLite's own error comes from a table database; SQLAlchemy's from the study storage.
            first = ("db", "storage") if isinstance(exc, sqlite3.DatabaseError) else ("storage", "db")
            where = next((str(kwargs[k]) for k in first if kwargs.get(k)), None)
            # SQLite's own words: SQLAlchemy's error holds them, or its cause of Optuna's error.
            cause = exc.__cause__
            said = getattr(exc, "orig", None) or getattr(cause, "orig", None) or cause or exc
            reason = str(said).splitlines()[0]
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


def _os_message(exc: OSError) -> str:
    """``<path>: <reason>``, as a shell says it."""
    reason = exc.strerror or str(exc)
    if exc.filename is None:
        return reason
    return f"{exc.filename}: {reason}"
