"""``flysearch export``: the best configs of ground-truth tables, written where each target reads them.

One sub-command per target, each a thin caller of one function of :mod:`flysearch.export`.
"""

from __future__ import annotations

import click

from flysearch.cli._console import OutputConsole
from flysearch.cli._errors import user_errors
from flysearch.cli._options import db_option, writable_dir, writable_file

__all__ = ["export"]

console = OutputConsole()


@click.group()
def export() -> None:
    """Export the best configs of tables for Triton, FlyDSL or aiter (CSV and Triton JSON)."""


@export.command("triton")
@db_option
@click.option("--prefix", default="", help="Only tables whose name starts with this.")
@click.option("--top", type=click.IntRange(min=1), default=1, show_default=True,
              help="Best configs per table.")
@click.option("--out", "out_py", default=None, callback=writable_file,
              help="Write the triton.Config list here (else stdout).")
@click.option("--json", "out_json", default=None, callback=writable_file,
              help="Also write the configs as JSON here.")
@user_errors
def export_triton(db: str, prefix: str, top: int, out_py: str | None, out_json: str | None) -> None:
    """Best configs per Triton table as a triton.autotune config list.

    The list is Python source (stdout, or --out); --json also writes the configs, with their tables,
    shapes and times, as JSON.

    Example:

    \b
      flysearch export triton --db h200.db --prefix triton_gemm/H200 --out best.py --json best.json
    """
    from flysearch.export import export_triton as export_triton_configs

    source = export_triton_configs(db, prefix=prefix, top=top, out=out_py, json_out=out_json)
    if not out_py:
        click.echo(source, nl=False)


@export.command("flydsl")
@db_option
@click.option("--table", "tables", multiple=True, required=True,
              help="Table whose best FlyDSL config to export; repeatable.")
@click.option("--name", required=True, help="The kernel's artifact_name in @flydsl.autotune.")
@click.option("--key", default="M,N,K", show_default=True, help="The autotune key: problem fields, in order.")
@click.option("--device", "device_name", required=True, help="torch's name: 'AMD Instinct MI300X'.")
@click.option("--arch", required=True, help="gfx arch of the device, e.g. gfx942.")
@click.option("--cu", type=click.IntRange(min=1), default=None,
              help="Compute units (default: the arch profile's device).")
@click.option("--out", required=True, callback=writable_dir,
              help="The FLYDSL_AUTOTUNE_CONFIG_DIR to write into.")
@user_errors
def export_flydsl(db: str, tables: tuple[str, ...], name: str, key: str, device_name: str, arch: str,
                  cu: int | None, out: str) -> None:
    """Best FlyDSL config per table as FlyDSL offline autotune artifacts.

    Only FlyDSL rows count (an aiter table's Triton or asm rows are skipped, and a table without a
    FlyDSL row is named and skipped), and only tables measured on --arch are exported.

    Example:

    \b
      flysearch export flydsl --table flydsl_gemm/MI300X/1x4096x4096 --name flysearch_gemm \\
          --device 'AMD Instinct MI300X' --arch gfx942 --out ~/.flydsl/configs
    """
    from flysearch.export import export_flydsl_artifacts

    result = export_flydsl_artifacts(db, tables, out, name=name, key=key, device_name=device_name,
                                     arch=arch, cu=cu)
    for item in result.written:
        line = f"{item.table}: {item.row.key} ({item.row.time_ms:.4g} ms) -> {item.path}"
        console.print(line, markup=False)
    for table_name, reason in result.skipped:
        console.print(f"{table_name}: skipped: {reason}", markup=False)


@export.command("aiter")
@db_option
@click.option("--prefix", default="", help="Only tables whose name starts with this.")
@click.option("--out", required=True, type=click.Path(dir_okay=False), callback=writable_file,
              help="The tuned CSV to write (what AITER_CONFIG_GEMM_BF16 names).")
@user_errors
def export_aiter(db: str, prefix: str, out: str) -> None:
    """Best FlyDSL config per aiter table as an aiter tuned CSV.

    The tables come from aiter's CSVs ('flysearch tables import FILE.csv'); the CSV holds one winner
    per aiter key, for AITER_CONFIG_GEMM_BF16 to name. An existing --out is replaced only when a
    table matches.

    Example:

    \b
      flysearch export aiter --out flysearch_bf16_tuned_gemm.csv
    """
    from flysearch.export import export_aiter_csv

    result = export_aiter_csv(db, out, prefix=prefix)
    console.print(f"wrote {len(result.records)} FlyDSL winners from {len(result.tables)} tables to {out}",
                  markup=False, soft_wrap=True)


@export.command("aiter-triton")
@db_option
@click.option("--prefix", default="", help="Only aiter_triton_gemm tables whose name starts with this.")
@click.option("--table", "tables", multiple=True,
              help="Export this table (instead of every one --prefix matches); repeatable.")
@click.option("--out", required=True, callback=writable_dir,
              help="The folder aiter reads as AITER_TRITON_CONFIGS_PATH; files go to OUT/gemm/.")
@user_errors
def export_aiter_triton(db: str, prefix: str, tables: tuple[str, ...], out: str) -> None:
    """Best config per aiter Triton GEMM table as aiter's tuned config JSON.

    One {dev}-GEMM-A16W16-N={N}-K={K}.json per arch (gfx942: MI300X, gfx950: MI350X), N and K: a
    table of M=m fills the smallest M_LEQ_ bucket >= m (the largest M of a bucket wins), buckets
    nobody measured are left out (aiter takes the next larger one), and "any" is the largest M's.
    A file aiter ships is never replaced.

    Example:

    \b
      flysearch export aiter-triton --prefix aiter_triton_gemm/MI300X --out tuned_configs
    """
    from flysearch.export import export_aiter_triton as export_files

    result = export_files(db, out, prefix=prefix, tables=tables)
    for item in result.written:
        buckets = ", ".join(item.tables)
        console.print(f"wrote {item.path} ({buckets}) from {len(set(item.tables.values()))} tables",
                      markup=False, soft_wrap=True)
    for table_name, reason in result.skipped:
        console.print(f"{table_name}: skipped: {reason}", markup=False, soft_wrap=True)


@export.command("kernel-tuner")
@db_option
@click.option("--table", "table_name", required=True, help="The table to write.")
@click.option("--rename", "renames", multiple=True, metavar="NEW=OLD,...",
              help="Parameter names, flysearch's to the cache's (BLOCK_M=BM); repeatable.")
@click.option("--out", required=True, type=click.Path(dir_okay=False), callback=writable_file,
              help="The cache to write (.json, or .json.gz to compress it).")
@user_errors
def export_kernel_tuner(db: str, table_name: str, renames: tuple[str, ...], out: str) -> None:
    """A whole table as a Kernel Tuner cache, which Kernel Tuner's simulation mode replays.

    Example:

    \b
      flysearch export kernel-tuner --table triton_gemm/H200/1x6144x4096 --out 1x6144x4096.json
    """
    from flysearch.export import write_kernel_tuner_cache
    from flysearch.tables import TableStore, parse_renames

    store = TableStore(db, create=False)
    try:
        table = store.load(table_name)
    finally:
        store.close()
    write_kernel_tuner_cache(table, out, rename=parse_renames(renames))
    console.print(f"wrote {table.name} ({len(table.rows)} configs) to {out}", markup=False, soft_wrap=True)
