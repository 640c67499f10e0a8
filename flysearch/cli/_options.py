"""Options that several of the ``flysearch`` command's groups share (imported by :mod:`flysearch.cli`
and its sub-command modules, so that none of them imports the other)."""

from __future__ import annotations

import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from flysearch.study import DEFAULT_STORAGE
from flysearch.tables import DEFAULT_DB

__all__ = [
    "db_option",
    "dir_write_problem",
    "file_write_problem",
    "gpu_list",
    "storage_option",
    "writable_dir",
    "writable_file",
]

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


def gpu_list(text: str | None, flag: str) -> list[str]:
    """The GPUs of a comma-separated *flag* value, as ``CUDA_VISIBLE_DEVICES`` names them (indices,
    or ``GPU-``/``MIG-`` UUIDs); a one-line error for anything else, or for a GPU named twice."""
    if not text:
        return []
    gpus = [g.strip() for g in text.split(",")]
    bad = [g for g in gpus if not re.fullmatch(r"\d+|(GPU|MIG)-[0-9A-Za-z/-]+", g)]
    if bad or len(set(gpus)) < len(gpus):
        raise click.BadParameter(
            f"{text!r}: give GPU indices (or GPU-/MIG- UUIDs), distinct and separated by commas",
            param_hint=flag,
        )
    return gpus


def _path_callback(problem_of: Callable[[Path], str | None]) -> Callable[..., str | None]:
    """A click callback that fails at once, in one line, when *problem_of* finds the path unusable,
    instead of after the work whose result it would hold."""

    def callback(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
        problem = problem_of(Path(value)) if value is not None else None
        if problem:
            raise click.BadParameter(f"{value}: {problem}", ctx=ctx, param=param)
        return value

    return callback


def file_write_problem(path: Path) -> str | None:
    """Why *path* cannot be written as a file (``None`` when it can). An existing file is opened
    for appending and left as it was; a new one is created and removed again."""
    if path.is_dir():
        return "is a folder, not a file"
    if not path.parent.is_dir():
        return f"its folder {path.parent} does not exist"
    existed = path.exists()
    try:
        with open(path, "a"):
            pass
    except OSError as exc:
        return exc.strerror or str(exc)
    if not existed:
        path.unlink(missing_ok=True)
    return None


def dir_write_problem(path: Path) -> str | None:
    """Why *path* cannot be used as an output folder: it is a file, or its nearest existing
    ancestor is not a folder one can create entries in (``None`` when it can)."""
    if path.exists() and not path.is_dir():
        return "is a file, not a folder"
    ancestor = path
    while not ancestor.exists():
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor} is not a folder"
    try:
        os.rmdir(tempfile.mkdtemp(dir=ancestor))
    except OSError as exc:
        return f"cannot create entries in {ancestor}: {exc.strerror or exc}"
    return None


writable_file = _path_callback(file_write_problem)  # the value is a file this command writes
writable_dir = _path_callback(dir_write_problem)  # the value is a folder it creates or writes into
