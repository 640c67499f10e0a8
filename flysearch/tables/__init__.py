"""Ground-truth tables: exhaustive races stored in SQLite, every importer (flysearch table files,
Kernel Tuner caches, aiter CSVs: :func:`import_tables` takes them all), and the space each table
was measured over.
"""

from __future__ import annotations

from flysearch.tables._aiter_csv import (
    TUNED_HEADER,
    AiterRecord,
    check_flydsl_records,
    read_aiter_csv,
)
from flysearch.tables._declare import Declaration, declare, parse_renames
from flysearch.tables._kernel_tuner import FAILURE_OUTCOMES, read_kernel_tuner_cache
from flysearch.tables._outcome import Outcome
from flysearch.tables._read import (
    ImportedFile,
    ImportedTable,
    import_table,
    import_tables,
    read_any_table,
    read_tables,
)
from flysearch.tables._spaces import space_for_table
from flysearch.tables._store import (
    DEFAULT_DB,
    RETIME,
    GroundTruth,
    Row,
    TableMeta,
    TableStore,
    check_rows,
    dump_table_file,
    opened_store,
    read_table_file,
)

__all__ = [
    "DEFAULT_DB",
    "FAILURE_OUTCOMES",
    "RETIME",
    "TUNED_HEADER",
    "AiterRecord",
    "Declaration",
    "GroundTruth",
    "ImportedFile",
    "ImportedTable",
    "Outcome",
    "Row",
    "TableMeta",
    "TableStore",
    "check_flydsl_records",
    "check_rows",
    "declare",
    "dump_table_file",
    "import_table",
    "import_tables",
    "opened_store",
    "parse_renames",
    "read_aiter_csv",
    "read_any_table",
    "read_kernel_tuner_cache",
    "read_table_file",
    "read_tables",
    "space_for_table",
]
