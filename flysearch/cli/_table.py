"""Terminal tables whose first column, the names a user copies into the next command, is never cut.

rich shrinks every column of a table that is wider than the terminal, and a name without spaces
(``triton_gemm/H200/256x1536x7168``) then loses its end to an ellipsis. :func:`name_table` keeps
that column whole (no wrapping, as wide as its longest name) and, when the terminal is too narrow
for all the columns even at their narrowest (each as wide as its longest word), leaves out the
less important ones, in the order given, until the table fits.

Example:
    >>> table, left_out, needed = name_table(
    ...     ["table", "rows", "date"], [["a/long/name", "12", "2026-11-29"]], width=30, drop=["date"])
    >>> left_out, needed
    (['date'], 22)
"""

from __future__ import annotations

from collections.abc import Sequence

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

__all__ = ["name_table", "print_name_table"]


def _widest(text: str) -> int:
    """The width of *text* unwrapped: its longest line."""
    return max((cell_len(line) for line in text.splitlines()), default=0)


def _narrowest(text: str) -> int:
    """The width *text* wraps to without cutting a word: its longest word."""
    return max((cell_len(word) for word in text.split()), default=0)


def name_table(
    headers: Sequence[str], rows: Sequence[Sequence[str]], *, width: int, drop: Sequence[str] = ()
) -> tuple[Table, list[str], int]:
    """A table of *rows* under *headers* whose first column is never cut, fitted to *width*.

    Each column gets a fixed width: its widest cell while the table fits, less (down to its longest
    word, the widest columns first) when it does not; the columns of *drop* are left out, in
    order, while even that is too wide. rich is given no room to shrink a column on its own.

    Args:
        headers: The column headers; the first column holds the names.
        rows: The cells, one sequence per row, as strings.
        width: The terminal's width.
        drop: Headers of the columns that may be left out, the least important first.

    Returns:
        The table, the headers of the columns left out (empty when everything fits) and the table's
        width (more than *width* only when the names alone are wider).
    """
    cells = {h: [h, *(r[i] for r in rows)] for i, h in enumerate(headers)}
    widest = {h: max(map(_widest, texts)) for h, texts in cells.items()}
    narrowest = {h: max(map(_narrowest, texts)) for h, texts in cells.items()}
    narrowest[headers[0]] = widest[headers[0]]  # the names: never wrapped

    def frame(n_columns: int) -> int:  # one space each side of a column's cells, a rule between
        return 3 * n_columns + 1

    kept = list(headers)
    left_out: list[str] = []
    for header in drop:
        if sum(narrowest[h] for h in kept) + frame(len(kept)) <= width:
            break
        kept.remove(header)
        left_out.append(header)
    widths = {h: widest[h] for h in kept}
    excess = sum(widths.values()) + frame(len(kept)) - width
    while excess > 0:  # narrow the widest column that can still wrap, one cell at a time
        shrinkable = [h for h in kept if widths[h] > narrowest[h]]
        if not shrinkable:
            break
        widths[max(reversed(shrinkable), key=lambda h: widths[h])] -= 1
        excess -= 1
    table = Table()
    for header in kept:
        name = header == headers[0]
        table.add_column(header, width=widths[header], no_wrap=name, overflow="fold")
    index = [headers.index(h) for h in kept]
    for row in rows:
        table.add_row(*(row[i] for i in index))
    return table, left_out, sum(widths.values()) + frame(len(kept))


def print_name_table(
    console: Console,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    drop: Sequence[str] = (),
    hint: str = "",
) -> None:
    """Print :func:`name_table` on *console*, then a line naming the columns left out, if any, and
    *hint* (where to see them). A terminal narrower than the names in a frame gets the names alone,
    one a line, unframed."""
    table, left_out, needed = name_table(headers, rows, width=console.width, drop=drop)
    if needed <= console.width:
        console.print(table)
    else:
        left_out = list(headers[1:])
        for row in rows:  # soft wrap: rich adds no line break, the terminal wraps a name if it must
            console.print(row[0], soft_wrap=True, highlight=False, markup=False)
    if left_out:
        console.print(Text(f"left out for the terminal's width: {', '.join(left_out)}{hint}", style="dim"))
