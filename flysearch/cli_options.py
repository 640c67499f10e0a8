"""Options that several of the ``flysearch`` command's groups share (imported by :mod:`flysearch.cli`
and its sub-command modules, so that none of them imports the other)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

from flysearch.study import DEFAULT_STORAGE
from flysearch.tables import DEFAULT_DB

__all__ = ["db_option", "storage_option"]

F = TypeVar("F", bound=Callable[..., Any])


def db_option(func: F) -> F:
    return click.option(
        "--db", default=DEFAULT_DB, show_default=True, help="Ground-truth table database (SQLite)."
    )(func)


def storage_option(func: F) -> F:
    return click.option(
        "--storage", default=None,
        help=f"Optuna storage URL (default {DEFAULT_STORAGE}; postgresql://... works too).",
    )(func)
