"""Ground-truth tables: exhaustive races stored in SQLite, every importer (flysearch table files,
Kernel Tuner caches, aiter CSVs: :func:`import_tables` takes them all), and the space each table
was measured over.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flysearch._lazy import lazy_names

if TYPE_CHECKING:
    from flysearch.tables._aiter_csv import (
        TUNED_HEADER,
        AiterRecord,
        check_flydsl_records,
        read_aiter_csv,
    )
    from flysearch.tables._declare import Declaration, declare, parse_renames
    from flysearch.tables._kernel_tuner import FAILURE_OUTCOMES, read_kernel_tuner_cache
    from flysearch.tables._outcome import Measurement, Outcome
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
    "Measurement",
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

# Imported when first used, so that a worker process that receives a Measurement (a compile pool's,
# a GPU timer's) imports the small _outcome module alone, not SQLite's and the importers' libraries.
_HOME = {
    "DEFAULT_DB": "_store",
    "FAILURE_OUTCOMES": "_kernel_tuner",
    "RETIME": "_store",
    "TUNED_HEADER": "_aiter_csv",
    "AiterRecord": "_aiter_csv",
    "Declaration": "_declare",
    "GroundTruth": "_store",
    "ImportedFile": "_read",
    "ImportedTable": "_read",
    "Measurement": "_outcome",
    "Outcome": "_outcome",
    "Row": "_store",
    "TableMeta": "_store",
    "TableStore": "_store",
    "check_flydsl_records": "_aiter_csv",
    "check_rows": "_store",
    "declare": "_declare",
    "dump_table_file": "_store",
    "import_table": "_read",
    "import_tables": "_read",
    "opened_store": "_store",
    "parse_renames": "_declare",
    "read_aiter_csv": "_aiter_csv",
    "read_any_table": "_read",
    "read_kernel_tuner_cache": "_kernel_tuner",
    "read_table_file": "_store",
    "read_tables": "_read",
    "space_for_table": "_spaces",
}


__getattr__ = lazy_names(__name__, _HOME)
