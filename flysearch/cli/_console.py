"""The console the commands print their results on: the terminal's width on a terminal, and no
wrapping anywhere else.

rich takes 80 columns when its output is a pipe or a file, and breaks a longer line where it
reaches them, so that a config key (``BLOCK_K=64,BLOCK_M=64,...``) or a path that a script reads
from the output arrives in two pieces. :class:`OutputConsole` lays its output out for a width no
line reaches when it is not writing to a terminal (every line whole; a table as wide as its cells),
unless ``COLUMNS`` names a width to lay it out for.
"""

from __future__ import annotations

import os

from rich.console import Console, ConsoleDimensions

__all__ = ["UNWRAPPED", "OutputConsole"]

UNWRAPPED = 10_000  # the width an output that is not a terminal is laid out for: no line is this long


class OutputConsole(Console):
    """rich's :class:`~rich.console.Console`, unwrapped where its output is not a terminal (a pipe,
    a file, a test's captured output) and ``COLUMNS`` is not set; it asks on every print, so that
    it follows the stream it writes to now."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        columns = os.environ.get("COLUMNS", "")
        if columns.isdigit():  # now: rich keeps the COLUMNS of when the console was made
            return ConsoleDimensions(int(columns), size.height)
        if self.is_terminal:
            return size
        return ConsoleDimensions(UNWRAPPED, size.height)
