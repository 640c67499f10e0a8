"""A table row holds a measurement: a row and the measurement it stores convert one into the other."""

from __future__ import annotations

from flysearch.tables import Measurement, Outcome, Row, read_table_file
from tests.conftest import REPO

RACED = (REPO / "lab" / "benchmarks" / "data" / "h100_fused_unpruned"
         / "triton_gemm_fused_unpruned__H100__1x6144x4096.table.json.gz")


def test_every_row_of_a_raced_table_is_its_measurement_with_a_key() -> None:
    _meta, rows = read_table_file(RACED)
    assert {r.outcome for r in rows} == {Outcome.OK.value, Outcome.COMPILE_FAILED.value}
    assert all(r.extra for r in rows)
    for row in rows:
        m = row.measurement()
        assert isinstance(m.outcome, Outcome) and (m.time_ms is not None) == row.ok
        assert Row.from_measurement(row.key, row.params, m) == row


def test_a_failed_measurement_is_a_row_without_a_time() -> None:
    m = Measurement(Outcome.WRONG_RESULT, 1.5, compile_s=2.0, bench_s=0.25, detail="max error 0.3")
    row = Row.from_measurement("B=1", {"B": 1}, m)
    assert row == Row("B=1", {"B": 1}, "wrong_result", None, 2.0, 0.25, "max error 0.3")
    assert row.measurement().cost_s == 2.25
