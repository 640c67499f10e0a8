"""An empty study database made ahead of time and copied into place for a new SQLite study.

Creating a study database (Optuna's schema, its version stamp, the claim tables) is a few dozen
statements and commits: 0.1-0.3 s on the H200 hosts, a noticeable part of a short live study's
start. A process that runs many studies, or starts one the moment it is asked (a worker server's
warm study process), makes one empty database beforehand with :func:`make_template`; afterwards
:func:`place` copies it to a new SQLite study's path instead of creating the schema there. The copy
is the file Optuna and :mod:`flysearch.study` would have made (same versions, same process), and
it is put in place atomically: if another worker created the database meanwhile, theirs is kept.

Example:
    >>> from flysearch.study._storage_template import place
    >>> place("postgresql://host/db")  # only new SQLite files
    False
"""

from __future__ import annotations

import gc
import os
import shutil
import sqlite3
import tempfile
from multiprocessing.util import Finalize
from typing import TYPE_CHECKING

from flysearch.study._sqlite_file import create_whole, sqlite_path

if TYPE_CHECKING:
    import optuna

__all__ = ["make_template", "open_shared_storage", "place", "prepare_storage"]

_template: str | None = None


def make_template() -> str:
    """Create this process's template (an empty study database, removed when the process ends)
    and return its path."""
    global _template
    folder = tempfile.mkdtemp(prefix="flysearch-template-")
    # Removed when this process ends normally, also as a pool's or a server's worker process
    # (which ends through multiprocessing's finalizers, not atexit).
    Finalize(None, shutil.rmtree, args=(folder,), kwargs={"ignore_errors": True}, exitpriority=0)
    path = os.path.join(folder, "study.db")
    prepare_storage(f"sqlite:///{path}")
    gc.collect()  # the engines' pooled connections go, so that the log can be folded in
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal beside it
    finally:
        conn.close()
    _template = path
    return path


def place(url: str) -> bool:
    """Copy the template to *url*'s SQLite file if this process has one and the file does not
    exist yet; whether it did."""
    path = sqlite_path(url)
    if _template is None or path is None:
        return False
    template = _template
    try:
        return create_whole(path, lambda tmp: shutil.copyfile(template, tmp))
    except OSError:
        return False


def open_shared_storage(url: str) -> optuna.storages.BaseStorage:
    """Open the study storage that several workers share. A new SQLite study starts as a copy of
    this process's template, if it made one, opened without Optuna's schema checks; workers that
    create a new storage together are sorted out by :func:`flysearch.study._study.open_storage`."""
    from flysearch.study._study import open_storage

    return open_storage(url, current=place(url))


def prepare_storage(url: str) -> None:
    """Create the study storage's tables and the claim tables once, before workers start."""
    from flysearch.study._claims import create_claim_tables

    open_shared_storage(url)
    create_claim_tables(url)
