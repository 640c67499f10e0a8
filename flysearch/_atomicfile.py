"""Files written whole or not at all.

Every result flysearch writes (tables, exports, reports, plots, artifacts) goes through
:func:`atomic_write`: the content goes to a temporary file beside the target, which replaces the
target only once it is complete. A crash, a full disk or an exception while writing leaves the old
file (or none) and no temporary file. The new file gets the permissions an ordinary ``open`` would
give it (``0o666`` less the umask), not :func:`tempfile.mkstemp`'s private ``0o600``.

Example:
    >>> import tempfile
    >>> from pathlib import Path
    >>> path = Path(tempfile.mkdtemp()) / "best.json"
    >>> with atomic_write(path) as fh:
    ...     _ = fh.write("{}")
    >>> path.read_text(), sorted(p.name for p in path.parent.iterdir())
    ('{}', ['best.json'])
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

__all__ = ["atomic_write", "write_text_atomic"]


def _file_mode() -> int:
    """The mode ``open(path, "w")`` would create a file with under this process's umask."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


@contextmanager
def atomic_write(path: str | Path, mode: str = "w", **open_kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary file beside *path* for writing; move it onto *path* when the block ends
    without an exception (and remove it when it does not).

    Args:
        path: The file to write (replaced if it exists).
        mode: ``"w"`` (text, UTF-8 unless *open_kwargs* names another encoding) or ``"wb"``.
        open_kwargs: Passed to :func:`open` (``newline``, ``encoding``).
    """
    if mode not in ("w", "wb"):
        raise ValueError(f"atomic_write writes with mode 'w' or 'wb', not {mode!r}.")
    path = Path(path)
    if mode == "w":
        open_kwargs.setdefault("encoding", "utf-8")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, _file_mode())
        with os.fdopen(fd, mode, **open_kwargs) as fh:
            yield fh
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)


def write_text_atomic(path: str | Path, text: str) -> None:
    """Write *text* (UTF-8) to *path* with :func:`atomic_write`."""
    with atomic_write(path) as fh:
        fh.write(text)
