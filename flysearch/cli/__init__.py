"""The ``flysearch`` command: one thin module per command group over the library.
"""

from __future__ import annotations

from flysearch.cli._main import main

__all__ = [
    "main",
]
