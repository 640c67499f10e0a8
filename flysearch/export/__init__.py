"""Export the best configs of tables where others read them: Triton autotune configs and JSON,
FlyDSL offline-autotune artifacts, aiter tuned CSVs, aiter's Triton GEMM config JSON, and whole
tables as Kernel Tuner caches (``flysearch export triton|flydsl|aiter|aiter-triton|kernel-tuner``).
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
from flysearch.export._aiter_triton import (
    AiterTritonExport,
    AiterTritonFile,
    aiter_triton_buckets,
    export_aiter_triton,
    write_aiter_triton,
)
from flysearch.export._flydsl import FlydslExport, export_flydsl_artifacts
from flysearch.export._kernel_tuner import kernel_tuner_cache, write_kernel_tuner_cache
from flysearch.export._triton import best_configs, export_json, export_triton, triton_configs_source
from flysearch.export._tuned import tuned_entries

__all__ = [
    "AiterExport",
    "AiterTritonExport",
    "AiterTritonFile",
    "FlydslExport",
    "aiter_triton_buckets",
    "best_configs",
    "best_flydsl_record",
    "export_aiter_csv",
    "export_aiter_triton",
    "export_flydsl_artifacts",
    "export_json",
    "export_triton",
    "export_tuned_csv",
    "kernel_tuner_cache",
    "triton_configs_source",
    "tuned_entries",
    "unique_records",
    "write_aiter_csv",
    "write_aiter_triton",
    "write_kernel_tuner_cache",
]
