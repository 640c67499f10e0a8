"""``flysearch aiter check``: check the FlyDSL rows of aiter's CSVs against the aiter HGEMM space.

aiter's CSVs are imported with ``flysearch tables import`` and written with ``flysearch export aiter``.
"""

from __future__ import annotations

import click
from rich.console import Console

from flysearch.cli._errors import user_errors as _user_errors
from flysearch.errors import FlysearchError
from flysearch.tables import check_flydsl_records, read_aiter_csv

__all__ = ["aiter"]

console = Console()


@click.group()
def aiter() -> None:
    """Check aiter's bf16 GEMM CSVs against the FlyDSL HGEMM space.

    Import them as tables with 'flysearch tables import FILE.csv'; write one with 'flysearch export aiter'.
    """


@aiter.command("check")
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_user_errors
def aiter_check(paths: tuple[str, ...]) -> None:
    """Check that every FlyDSL row parses and passes the space's constraints at its own shape.

    Example:

        flysearch aiter check ../shared/data/aiter/bf16_tuned_gemm.csv
    """
    records = [r for path in paths for r in read_aiter_csv(path)]
    count, failures = check_flydsl_records(records)
    for line in failures:
        console.print(line, markup=False)
    console.print(f"{count} FlyDSL rows checked, {len(failures)} failed")
    if failures:
        raise FlysearchError(f"{len(failures)} FlyDSL rows fail the aiter HGEMM space; see above.")
