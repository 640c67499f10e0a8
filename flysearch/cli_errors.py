"""The one place where a command turns a user's mistake into one line and exit code 2."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import click

from flysearch.errors import FlysearchError

__all__ = ["user_errors"]

F = TypeVar("F", bound=Callable[..., Any])


def user_errors(func: F) -> F:
    """Decorate a click command so that a :class:`FlysearchError` becomes a ``click.UsageError``."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except FlysearchError as exc:
            raise click.UsageError(str(exc)) from None

    return wrapper  # type: ignore[return-value]
