"""A table written as a Kernel Tuner cache keys each config as Kernel Tuner does, and reads back whole."""

from __future__ import annotations

from pathlib import Path

from flysearch.export import write_kernel_tuner_cache
from flysearch.tables import GroundTruth, read_kernel_tuner_cache, read_table_file
from tests.conftest import REPO

TMA = (REPO / "lab" / "benchmarks" / "data" / "h100_tma_holdout"
       / "triton_gemm_tma__H100__1x7168x5120.table.json.gz")


def test_a_table_with_a_bool_parameter_reads_back_from_its_kernel_tuner_cache(tmp_path: Path) -> None:
    # triton_gemm_tma's EPILOGUE_SUBTILE is a bool; Kernel Tuner keys it str(value): True, not true.
    meta, rows = read_table_file(TMA)
    table = GroundTruth(meta, {r.key: r for r in rows})
    path = write_kernel_tuner_cache(table, tmp_path / "tma.json")
    _, back = read_kernel_tuner_cache(path)
    assert {r.key: (r.params, r.outcome, r.time_ms) for r in back} == \
        {r.key: (r.params, r.outcome, r.time_ms) for r in rows}
    assert any(r.params["EPILOGUE_SUBTILE"] is True for r in back)
