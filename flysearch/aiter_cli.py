"""``flysearch aiter``: import aiter's CSVs as tables, export winners for aiter, check FlyDSL rows."""

from __future__ import annotations

import click
from rich.console import Console

from flysearch.aiter_csv import check_flydsl_records, export_tuned_csv, import_into_store, read_aiter_csv
from flysearch.cli_errors import user_errors as _user_errors
from flysearch.cli_options import db_option, writable_file
from flysearch.errors import FlysearchError
from flysearch.kernels.aiter_hgemm import SPACE_NAME
from flysearch.tables import TableStore, opened_store

__all__ = ["aiter"]

console = Console()


@click.group()
def aiter() -> None:
    """aiter's bf16 GEMM CSVs: tuned files, tuner profiles and the FlyDSL HGEMM space."""


@aiter.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--profile", is_flag=True, help="The files are tuner profiles (-o2), not tuned CSVs.")
@click.option("--err-ratio", type=click.FloatRange(min=0), default=0.05, show_default=True,
              help="The tuner's --errRatio (profiles).")
@click.option("--replace", is_flag=True, help="Overwrite tables of the same name.")
@db_option
@_user_errors
def aiter_import(paths: tuple[str, ...], profile: bool, err_ratio: float, replace: bool, db: str) -> None:
    """Import aiter tuned CSVs (or tuner profiles) as one table per GEMM key.

    Example:

        flysearch aiter import ../shared/data/aiter/bf16_tuned_gemm.csv
    """
    with opened_store(db) as store:  # each file all or nothing; a database made for none is removed
        for path in paths:
            names = import_into_store(path, store, profile=profile, err_ratio_limit=err_ratio,
                                      replace=replace)
            console.print(f"imported {len(names)} tables from {path} into {db}")


@aiter.command("export")
@click.argument("out", type=click.Path(dir_okay=False), callback=writable_file)
@click.option("--prefix", default="", help="Export only tables whose name starts with this.")
@db_option
@_user_errors
def aiter_export(out: str, prefix: str, db: str) -> None:
    """Write each table's fastest FlyDSL config as an aiter tuned CSV (AITER_CONFIG_GEMM_BF16).

    Example:

        flysearch aiter export flysearch_bf16_tuned_gemm.csv
    """
    store = TableStore(db, create=False)
    names = [n for n in store.names() if n.startswith(prefix) and store.meta(n).kernel == SPACE_NAME]
    if not names:  # an existing CSV is not replaced by a header
        raise FlysearchError(f"No aiter FlyDSL table in {db} starts with {prefix!r}; nothing to export.")
    records = export_tuned_csv([store.load(n) for n in names], out)
    console.print(f"wrote {len(records)} FlyDSL winners from {len(names)} tables to {out}")


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
