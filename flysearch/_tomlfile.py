"""Reading the TOML files users write (study files, experiment files, shape corpora)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from flysearch.errors import InputFormatError

__all__ = ["read_toml"]


def read_toml(path: str | Path, what: str) -> dict[str, Any]:
    """Parse *path*; a missing or malformed file is one :class:`InputFormatError` naming *what* it is
    (``"Study file"``, ``"Experiment file"``, ``"Shape corpus"``)."""
    path = Path(path)
    try:
        return tomllib.loads(path.read_text())
    except FileNotFoundError:
        raise InputFormatError(f"{what} {path} does not exist.") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputFormatError(f"{what} {path} is not valid TOML: {exc}.") from None
