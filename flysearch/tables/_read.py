"""Read table files of every supported format, and import them into a table database.

:func:`import_tables` is the one way files become tables (``flysearch tables import``). The format
is told by the file's name:

* ``*.table.json.gz``: a flysearch table file (``flysearch race dump``), one table;
* ``*.csv``: an aiter bf16 GEMM CSV, a tuned file or (``aiter_profile``) a tuner profile, one
  table per aiter key (:mod:`flysearch.tables._aiter_csv`);
* anything else (``*.json``, ``*.json.gz``): a Kernel Tuner cache, one table.

Example:
    >>> import tempfile
    >>> from flysearch.tables import TableStore, dump_table_file, GroundTruth, Row, TableMeta
    >>> file = tempfile.mkdtemp() + "/t.table.json.gz"
    >>> meta = TableMeta("toy/t", "toy", "", "", {"M": 1}, {})
    >>> dump_table_file(GroundTruth(meta, {"a=1": Row("a=1", {"a": 1}, "ok", 2.0)}), file)
    >>> [(f.format, [(t.name, t.rows, t.ok, t.best_ms) for t in f.tables])
    ...  for f in import_tables([file], db=file.replace(".table.json.gz", ".db"))]
    [('flysearch table file', [('toy/t', 1, 1, 2.0)])]
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from flysearch.errors import InputFormatError
from flysearch.tables._aiter_csv import read_profile_csv, read_tuned_csv
from flysearch.tables._declare import Declaration, declare
from flysearch.tables._kernel_tuner import read_kernel_tuner_cache
from flysearch.tables._store import DEFAULT_DB, Row, TableMeta, opened_store, read_table_file

__all__ = [
    "AITER_PROFILE",
    "AITER_TUNED",
    "FLYSEARCH_TABLE",
    "KERNEL_TUNER",
    "ImportedFile",
    "ImportedTable",
    "import_table",
    "import_tables",
    "read_any_table",
    "read_tables",
    "table_format",
]

FLYSEARCH_TABLE = "flysearch table file"
KERNEL_TUNER = "Kernel Tuner cache"
AITER_TUNED = "aiter tuned CSV"
AITER_PROFILE = "aiter tuner profile"
_ONE_TABLE = (FLYSEARCH_TABLE, KERNEL_TUNER)  # formats that hold one table, which must have run


def table_format(path: str | Path, *, aiter_profile: bool = False) -> str:
    """The format of the table file at *path*, by its name (see the module's list).

    Raises:
        InputFormatError: *aiter_profile* is set for a file that is no aiter CSV.
    """
    text = str(path).lower()
    if text.endswith(".csv"):
        return AITER_PROFILE if aiter_profile else AITER_TUNED
    kind = FLYSEARCH_TABLE if text.endswith(".table.json.gz") else KERNEL_TUNER
    if aiter_profile:
        raise InputFormatError(
            f"{path} is a {kind}, not an aiter CSV; the aiter-profile option reads aiter tuner profiles "
            "(*.csv) only: import the other files without it."
        )
    return kind


def read_any_table(path: str | Path, *, name: str | None = None,
                   declaration: Declaration | None = None) -> tuple[TableMeta, list[Row]]:
    """Read a one-table file: a flysearch table file (``*.table.json.gz``) or a Kernel Tuner cache
    (``.json`` / ``.json.gz``); *name* renames the table, *declaration* adds what the file does not
    say (its shape, kernel family, arch, device, parameter names: :func:`flysearch.tables.declare`).

    Raises:
        InputFormatError: the file is malformed, or is an aiter CSV (which holds many tables:
            import it with :func:`import_tables` and name one of them).
    """
    kind = table_format(path)
    if kind not in _ONE_TABLE:
        raise InputFormatError(
            f"{path} is an {kind}, which holds one table per GEMM; import it with 'flysearch tables "
            "import' and name one of its tables."
        )
    if kind == FLYSEARCH_TABLE:
        meta, rows = read_table_file(path)
        if name:
            meta.name = name
    else:
        meta, rows = read_kernel_tuner_cache(path, name=name)
    return declare(meta, rows, declaration) if declaration else (meta, rows)


def read_tables(
    path: str | Path, *, name: str | None = None, aiter_profile: bool = False, err_ratio_limit: float = 0.05,
    declaration: Declaration | None = None,
) -> list[tuple[TableMeta, list[Row]]]:
    """Read a table file of any supported format into its tables (nothing is written).

    Args:
        path: The file; its format is told by its name (:func:`table_format`).
        name: Rename the table of a one-table file (refused for an aiter CSV).
        aiter_profile: The file is an aiter tuner profile (``-o2``), not a tuned CSV.
        err_ratio_limit: For a profile, the tuner's ``--errRatio``: a candidate with a larger
            error ratio becomes ``wrong_result``.
        declaration: What a one-table file does not say (:class:`flysearch.tables.Declaration`).

    Raises:
        InputFormatError: the file is malformed, *name* or *declaration* is given for an aiter CSV,
            *aiter_profile* for a file that is no aiter CSV, or the declaration does not fit it.
    """
    kind = table_format(path, aiter_profile=aiter_profile)
    if kind in _ONE_TABLE:
        return [read_any_table(path, name=name, declaration=declaration)]
    if declaration:
        raise InputFormatError(
            f"{path} is an {kind}: its tables carry their own shape, kernel and arch, so none can be "
            "declared."
        )
    if name:
        raise InputFormatError(
            f"{path} is an {kind}: it holds one table per GEMM, named <file stem>/<gfx>/cu<CUs>/MxNxK, so "
            "a table name (--name) cannot be given to it."
        )
    if kind == AITER_PROFILE:
        return read_profile_csv(path, err_ratio_limit=err_ratio_limit)
    return read_tuned_csv(path)


@dataclass(frozen=True)
class ImportedTable:
    """One table written by :func:`import_tables`: its name, row and ok-row counts, and best time."""

    name: str
    rows: int
    ok: int
    best_ms: float | None


@dataclass(frozen=True)
class ImportedFile:
    """The tables one file gave (:func:`import_tables`), and the format it was read as."""

    path: str
    format: str
    tables: list[ImportedTable]

    @property
    def one_table(self) -> bool:
        """Whether the file's format holds one table (a flysearch table file, a Kernel Tuner cache),
        not one per GEMM (an aiter CSV)."""
        return self.format in _ONE_TABLE


def _imported(meta: TableMeta, rows: list[Row]) -> ImportedTable:
    times = [r.time_ms for r in rows if r.ok and r.time_ms is not None]
    return ImportedTable(meta.name, len(rows), sum(r.ok for r in rows), min(times) if times else None)


def import_tables(
    paths: Sequence[str | Path], *, db: str | Path = DEFAULT_DB, name: str | None = None,
    replace: bool = False, aiter_profile: bool = False, err_ratio_limit: float = 0.05,
    declaration: Declaration | None = None,
) -> list[ImportedFile]:
    """Import table files of any supported format (:func:`read_tables`) into the table database:
    every file is read first, then all their tables are written in one transaction, so a malformed
    file, a table that exists (without *replace*) or one that cannot be a table imports none of them
    (and a database made for them is removed again).

    A flysearch table file or Kernel Tuner cache must hold a config that ran (there would be nothing
    to search or compare against); an aiter CSV's tables are kept whatever ran, as aiter's record
    (aiter ships rows for archs with no kernel).

    Args:
        paths: The files, in order.
        db: The table database (created if missing).
        name: The table's name, for a single one-table file.
        replace: Overwrite tables of the same name.
        aiter_profile: The files are aiter tuner profiles (``-o2``), not tuned CSVs.
        err_ratio_limit: For profiles, the tuner's ``--errRatio``.
        declaration: What the files do not say, for each of them (:class:`flysearch.tables.Declaration`):
            their shape (for one file), kernel family, arch, device, parameter names.

    Returns:
        Per file, its format and the tables written from it.

    Raises:
        InputFormatError: a file is malformed or of the wrong format for the options, *name* is given
            for several files or an aiter CSV, two files hold one table, a table exists and
            *replace* is false, or a one-table file holds no config that ran.
    """
    if not paths:
        raise InputFormatError("No file to import; give table files, Kernel Tuner caches or aiter CSVs.")
    if name and len(paths) > 1:
        raise InputFormatError(
            f"--name names one table, but {len(paths)} files were given; import them one at a time to "
            "rename them."
        )
    if declaration and declaration.shape and len(paths) > 1:
        raise InputFormatError(
            f"A shape names one table's GEMM, but {len(paths)} files were given; import them one at a time."
        )
    kinds = [table_format(p, aiter_profile=aiter_profile) for p in paths]  # cheap refusals first
    read = [read_tables(p, name=name, aiter_profile=aiter_profile, err_ratio_limit=err_ratio_limit,
                        declaration=declaration) for p in paths]
    origin: dict[str, int] = {}  # table name -> the file that holds it first
    for at, tables in enumerate(read):
        for meta, _rows in tables:
            first = origin.setdefault(meta.name, at)
            if first != at:
                raise InputFormatError(
                    f"{paths[first]} and {paths[at]} both hold table {meta.name!r}; leave one of them out "
                    "(a one-table file can be imported apart under another --name)."
                )
    with opened_store(db) as store, store.db.atomic():  # all the files' tables, or none
        for kind, tables in zip(kinds, read, strict=True):
            for meta, rows in tables:
                store.write(meta, rows, replace=replace, require_ok=kind in _ONE_TABLE)
    return [ImportedFile(str(p), kind, [_imported(meta, rows) for meta, rows in tables])
            for p, kind, tables in zip(paths, kinds, read, strict=True)]


def import_table(
    path: str | Path, *, db: str | Path = DEFAULT_DB, name: str | None = None, replace: bool = False
) -> str:
    """Import a one-table file (see :func:`read_any_table`) into the table database; return its name."""
    meta, rows = read_any_table(path, name=name)
    with opened_store(db) as store:  # a database made for a table that is refused is removed
        store.write(meta, rows, replace=replace, require_ok=True)
    return meta.name
