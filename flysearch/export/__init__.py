"""Export the best configs of tables where others read them: Triton autotune configs and JSON,
FlyDSL offline-autotune artifacts, aiter tuned CSVs (``flysearch export triton|flydsl|aiter``).
"""

from __future__ import annotations

from flysearch.export._aiter import (
    AiterExport,
    best_flydsl_record,
    export_aiter_csv,
    export_tuned_csv,
    unique_records,
    write_aiter_csv,
)
from flysearch.export._flydsl import FlydslExport, export_flydsl_artifacts
from flysearch.export._triton import best_configs, export_json, export_triton, triton_configs_source

__all__ = [
    "AiterExport",
    "FlydslExport",
    "best_configs",
    "best_flydsl_record",
    "export_aiter_csv",
    "export_flydsl_artifacts",
    "export_json",
    "export_triton",
    "export_tuned_csv",
    "triton_configs_source",
    "unique_records",
    "write_aiter_csv",
]
