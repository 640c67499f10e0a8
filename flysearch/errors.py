"""Errors a user can cause. Each message is one sentence that names the value and the fix."""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator

__all__ = [
    "AutotuneError",
    "DiskFullError",
    "EmptySpaceError",
    "FlysearchError",
    "InputFormatError",
    "MissingConfigError",
    "MissingTableError",
    "StudyMismatchError",
    "ToolchainError",
    "UnknownArchError",
    "UnknownSamplerError",
]


class FlysearchError(Exception):
    """Base class of every error flysearch raises for a user mistake."""


class UnknownArchError(FlysearchError, KeyError):
    """An arch or device name that flysearch has no profile for."""

    def __str__(self) -> str:  # KeyError quotes its message; a user wants the sentence.
        return str(self.args[0]) if self.args else ""


class UnknownSamplerError(FlysearchError, ValueError):
    """A sampler name that flysearch does not know."""


class EmptySpaceError(FlysearchError, ValueError):
    """The constraints removed every candidate of a space."""


class MissingTableError(FlysearchError, LookupError):
    """A ground-truth table that the database does not hold."""


class MissingConfigError(FlysearchError, LookupError):
    """A config that a replayed table does not hold."""


class InputFormatError(FlysearchError, ValueError):
    """A malformed input file: a study file, a Kernel Tuner cache, a CSV."""


class StudyMismatchError(FlysearchError, ValueError):
    """A stored study that was started with other settings than the ones given now."""


class ToolchainError(FlysearchError, RuntimeError):
    """A tool a compile needs (such as ld.lld >= 19 for FlyDSL) is missing from this machine."""


class AutotuneError(FlysearchError, ValueError):
    """A decorator argument that does not fit the kernel it decorates, or a store it cannot use."""


class DiskFullError(FlysearchError):
    """The disk that holds a file a command writes is full: nothing stored before is lost, and the
    same command, run again once there is room, resumes where it stopped (a study keeps every
    finished trial, a comparison every finished run). Exit code 2, as a mistake: only the user can
    make room."""

    @classmethod
    def found_in(cls, exc: BaseException, where: str | os.PathLike[str] | None) -> DiskFullError | None:
        """The error to raise for *exc* when it says that the disk holding *where* (a file, or a
        ``sqlite:///`` URL) is full, else ``None``: SQLite's "database or disk is full", wrapped by
        SQLAlchemy or Optuna or not; ``ENOSPC``; or a SQLite "disk I/O error" on a disk with no
        room left (what SQLite says when it cannot even start its journal there)."""
        path = _local_path(where)
        for err in _chain(exc):
            text = str(err)
            full = "database or disk is full" in text or getattr(err, "errno", None) == errno.ENOSPC
            if full or ("disk I/O error" in text and path is not None and _no_room(path)):
                named = path or getattr(err, "filename", None)
                place = f"the disk holding {named}" if named else "the disk a file of this command is on"
                return cls(f"No space left on {place}: free some there and run the same command again, "
                           "which resumes where it stopped (what was stored before is kept).")
        return None

    @classmethod
    @contextlib.contextmanager
    def raised_for(cls, where: str | os.PathLike[str] | None) -> Iterator[None]:
        """Within the block, an error that says the disk holding *where* is full
        (:meth:`found_in`) is raised as a :class:`DiskFullError` instead."""
        try:
            yield
        except Exception as exc:
            full = cls.found_in(exc, where)
            if full is None:
                raise
            raise full from exc


def _chain(exc: BaseException) -> list[BaseException]:
    """*exc* and the errors it wraps: SQLAlchemy's ``orig``, a cause, a context."""
    seen: list[BaseException] = []
    todo: list[BaseException | None] = [exc]
    while todo:
        err = todo.pop()
        if err is None or any(err is s for s in seen) or len(seen) > 16:
            continue
        seen.append(err)
        todo += [getattr(err, "orig", None), err.__cause__, err.__context__]
    return seen


def _local_path(where: str | os.PathLike[str] | None) -> str | None:
    """The file *where* names: itself, or a ``sqlite:///`` URL's file; ``None`` for another URL."""
    if where is None:
        return None
    text = os.fspath(where)
    if text.startswith("sqlite:///"):
        return text[len("sqlite:///"):] or None
    return None if "://" in text or text == ":memory:" else text


def _no_room(path: str) -> bool:
    """Whether the file system of *path* (its nearest existing folder) has less than 1 MiB left."""
    folder = os.path.dirname(os.path.abspath(path))
    while not os.path.isdir(folder) and folder != os.path.dirname(folder):
        folder = os.path.dirname(folder)
    try:
        st = os.statvfs(folder)
    except OSError:
        return False
    return st.f_bavail * st.f_frsize < 1 << 20
