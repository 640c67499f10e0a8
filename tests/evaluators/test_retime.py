"""Confirming a race's top (flysearch.evaluators): the rounds, the stored medians, the confirmed order,
and a race whose single timing of one config was lucky (tests/_race_fakes.py stand-ins)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from flysearch.cli import main
from flysearch.errors import FlysearchError
from flysearch.evaluators import RetimeSettings, interleaved_rounds, top_rows, with_rounds
from flysearch.export import best_configs
from flysearch.kernels._triton_gemm import make_space
from flysearch.race import RaceSettings, RaceShape, race_summary, run_race, vendor_in_rounds, vendor_ms
from flysearch.space import Shape
from flysearch.tables import RETIME, GroundTruth, Row, TableMeta, TableStore, dump_table_file, read_table_file
from tests import _race_fakes as fakes

SHAPE = Shape(4, 576, 7168)
NAME = "triton_gemm/H200/4x576x7168"


def _table(times: list[float | None], extra: dict[int, dict] | None = None) -> GroundTruth:
    meta = TableMeta(name="t", kernel="gemm", arch="sm_90", device="NVIDIA H200",
                     problem={"M": 1, "N": 64, "K": 64, "dtype": "bf16"}, space={})
    rows = [Row(f"B={i}", {"B": i}, "ok" if t else "compile_failed", t, extra=(extra or {}).get(i, {}))
            for i, t in enumerate(times)]
    return GroundTruth(meta, {r.key: r for r in rows})


def test_top_rows_clamps_the_margin_and_skips_failures() -> None:
    table = _table([1.30, 1.00, None, 1.05, 1.09, 1.20, 1.11])
    assert [r.key for r in top_rows(table, 0.10, 1, 10)] == ["B=1", "B=3", "B=4"]
    assert [r.key for r in top_rows(table, 0.10, 5, 10)] == ["B=1", "B=3", "B=4", "B=6", "B=5"]
    assert [r.key for r in top_rows(table, 0.50, 1, 2)] == ["B=1", "B=3"]
    assert top_rows(_table([None]), 0.1, 1, 4) == []


def test_rounds_time_every_config_once_per_round_in_changing_orders() -> None:
    rows = list(_table([1.0, 1.1, 1.2, 1.3]).rows.values())
    calls: list[str] = []

    def time_one(row: Row) -> float | str:
        calls.append(row.key)
        return "wrong result" if row.key == "B=2" and calls.count("B=2") == 2 else 1.0 + len(calls)

    samples, failed = interleaved_rounds(rows, time_one, rounds=5, seed=3)
    assert failed == {"B=2": "wrong result"}
    # B=2 failed in its second round and was not timed again; the others ran every round
    assert calls.count("B=2") == 2 and all(calls.count(k) == 5 for k in ("B=0", "B=1", "B=3"))
    assert len(samples["B=2"]) == 1 and all(len(samples[k]) == 5 for k in ("B=0", "B=1", "B=3"))
    orders = [tuple(calls[i:i + 4]) for i in (0, 4)]
    assert orders[0] != orders[1]  # a fresh order per round (seed 3 shuffles them apart)
    again: list[str] = []
    interleaved_rounds(rows, lambda r: again.append(r.key) or 1.0, rounds=5, seed=3)
    assert again[:8] == calls[:8]  # the same seed, the same orders


def test_stored_rounds_reorder_the_table() -> None:
    table = _table([1.00, 1.01, 1.20, None])
    samples = {"B=0": [1.05, 1.04, 1.06], "B=1": [1.00, 0.99, 1.01]}
    rows = with_rounds([table.rows["B=0"], table.rows["B=1"]], samples, {})
    assert rows[0].extra[RETIME] == {"rounds_ms": [1.05, 1.04, 1.06], "median_ms": 1.05}
    table.rows.update({r.key: r for r in rows})
    assert table.best().key == "B=0"  # the race's single timing
    assert table.confirmed_best().key == "B=1"  # the better measurement
    assert [r.key for r in table.ranked()] == ["B=1", "B=0", "B=2"]
    assert table.retimed_ms() == {"B=0": 1.05, "B=1": 1.00}
    assert table.within_retimed(0.01) == ["B=1"] and table.within_retimed(0.06) == ["B=0", "B=1"]


def test_a_config_that_failed_its_rounds_is_never_confirmed() -> None:
    table = _table([1.00, 1.01])
    rows = with_rounds(list(table.rows.values()), {"B=0": [0.5], "B=1": [1.0, 1.0]}, {"B=0": "crash"})
    table.rows.update({r.key: r for r in rows})
    assert table.rows["B=0"].extra[RETIME]["failed"] == "crash"
    assert table.confirmed_best().key == "B=1" and table.retimed_ms() == {"B=1": 1.0}


def test_a_table_never_retimed_keeps_the_race_order() -> None:
    table = _table([1.2, 1.0, 1.1])
    assert table.confirmed_best() == table.best() and [r.key for r in table.ranked()] == ["B=1", "B=2", "B=0"]
    assert table.within_retimed() == [] and table.retimed_ms() == {}


@pytest.mark.parametrize("kw", [{"rounds": 1}, {"min_k": 0}, {"min_k": 9, "max_k": 8}, {"within": 1.0}])
def test_bad_settings_are_one_clear_error(kw) -> None:
    with pytest.raises(FlysearchError, match="Bad re-time settings"):
        RetimeSettings(**kw)


def _settings(**kw) -> RaceSettings:
    base = dict(workers=3, compile_timeout_s=10.0, launch_timeout_s=30.0, compile_fn=fakes.fake_compile,
                timer_fn=fakes.fake_timer_lucky, batch_rows=7, limit=60,
                retime=RetimeSettings(rounds=3, within=0.05, min_k=8, max_k=16))
    base.update(kw)
    return RaceSettings(**base)


# Under pytest-xdist one worker runs this module, so that its module fixture is set up once.
pytestmark = pytest.mark.xdist_group("evaluators/test_retime")


@pytest.fixture(scope="module")
def lucky(tmp_path_factory) -> tuple[TableStore, object, list[str]]:
    store = TableStore(tmp_path_factory.mktemp("retime") / "race.db")
    lines: list[str] = []
    report = run_race(make_space(), [RaceShape(SHAPE)], store, _settings(), progress=lines.append)
    return store, report, lines


def test_the_race_confirms_its_top_and_unmasks_a_lucky_timing(lucky) -> None:
    store, report, lines = lucky
    table = store.load(NAME)
    race_best = table.best()
    assert fakes._matches(race_best.params, fakes.LUCKY)  # one fast timing made it the race's best
    true = fakes.fake_time_ms(race_best.params)
    assert race_best.time_ms == pytest.approx(0.8 * true)
    retimed = table.retimed_ms()
    assert len(retimed) == 8  # nothing else within 5% of the lucky time: min_k of them
    assert retimed[race_best.key] == pytest.approx(true)
    confirmed = table.confirmed_best()
    assert confirmed.key != race_best.key
    assert retimed[confirmed.key] == pytest.approx(min(fakes.fake_time_ms(r.params) for r in table.ok_rows()))
    for key in retimed:
        assert len(table.rows[key].extra[RETIME]["rounds_ms"]) == 3
    shape = report.shapes[0]
    assert (shape.best_key, shape.confirmed_key, shape.retimed) == (race_best.key, confirmed.key, 8)
    assert any("re-timed" in line and "not the race's best" in line for line in lines)
    notes = json.loads(table.meta.notes)
    assert notes["retime"]["rounds"] == 3 and notes["retime"]["device"] == "NVIDIA H200"
    assert notes["layer"] == ""  # the race's own notes are kept


def test_summary_export_and_table_file_use_the_confirmed_order(lucky, tmp_path) -> None:
    store, _, _ = lucky
    table = store.load(NAME)
    (summary,) = race_summary(store)
    assert summary["best_key"] == table.confirmed_best().key != summary["race_best_key"]
    assert summary["confirmed_ms"] == pytest.approx(table.retimed_ms()[summary["best_key"]])
    # cuBLAS was in the rounds: both times are medians of them
    assert summary["cublas_in_rounds"] and summary["triton_ms"] == summary["confirmed_ms"]
    assert summary["ratio"] == pytest.approx(summary["confirmed_ms"] / 1.05)
    assert summary["retimed"] == 8
    (entry,) = best_configs(store, "triton_gemm/", top=1)
    assert entry["key"] == table.confirmed_best().key
    assert entry["time_ms"] == table.retimed_ms()[entry["key"]]
    assert entry["race_ms"] == table.rows[entry["key"]].time_ms
    dump_table_file(table, tmp_path / "t.table.json.gz")
    meta, rows = read_table_file(tmp_path / "t.table.json.gz")
    assert GroundTruth(meta, {r.key: r for r in rows}).retimed_ms() == table.retimed_ms()


def test_a_rerun_keeps_the_rounds_unless_it_measured_new_configs(lucky, tmp_path) -> None:
    store, _, _ = lucky
    path = tmp_path / "copy.db"
    copy = TableStore(path)
    table = store.load(NAME)
    copy.write(table.meta, table.rows.values())
    before = copy.load(NAME)
    again = run_race(make_space(), [RaceShape(SHAPE)], copy, _settings()).shapes[0]
    assert again.measured == 0 and again.retime_s == 0.0 and again.retimed == 8
    assert copy.load(NAME).rows == before.rows
    more = run_race(make_space(), [RaceShape(SHAPE)], copy, _settings(limit=120)).shapes[0]
    assert more.measured == 60 and more.retime_s > 0
    after = copy.load(NAME)
    top = {r.key for r in top_rows(after, 0.05, 8, 16)}
    assert set(after.retimed_ms()) == top  # re-timed anew; no stale rounds outside the new top
    assert all(RETIME not in r.extra for k, r in after.rows.items() if k not in top)


def test_a_race_without_retiming_and_the_cli_switch(tmp_path) -> None:
    store = TableStore(tmp_path / "n.db")
    report = run_race(make_space(), [RaceShape(SHAPE)], store, _settings(retime=None))
    assert report.shapes[0].confirmed_key is None and store.load(NAME).retimed_ms() == {}
    # A rerun re-times the finished table it did not re-time, measuring nothing new.
    again = run_race(make_space(), [RaceShape(SHAPE)], store, _settings()).shapes[0]
    assert again.measured == 0 and again.retimed == 8 and len(store.load(NAME).retimed_ms()) == 8
    result = CliRunner().invoke(main, ["race", "run", "--shape", "4x576x7168", "--retime-rounds", "1",
                                       "--db", str(tmp_path / "c.db")])
    assert result.exit_code != 0 and "--retime-rounds 1 confirms nothing" in result.output
    assert "Traceback" not in result.output


def test_cublas_is_timed_in_the_rounds_and_a_table_without_it_is_re_timed(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv(fakes.VENDOR_CALLS_ENV, str(tmp_path / "vendor_calls"))
    store = TableStore(tmp_path / "w.db")
    warm = _settings(timer_fn=fakes.fake_timer_warm_vendor)
    report = run_race(make_space(), [RaceShape(SHAPE)], store, warm)
    table = store.load(NAME)
    vendor = json.loads(table.meta.notes)["vendor"]
    assert vendor["time_ms"] == 1.05  # the race's one timing, before any config, is kept
    assert vendor["retime"]["rounds_ms"] == [1.10] * 3 and vendor["retime"]["median_ms"] == 1.10
    assert vendor_ms(table.meta) == 1.10 and vendor_in_rounds(table.meta)
    assert report.shapes[0].vendor_ms == 1.10
    (summary,) = race_summary(store)
    best = table.confirmed_best()
    assert (summary["triton_ms"], summary["cublas_ms"]) == (table.retimed_ms()[best.key], 1.10)
    assert summary["ratio"] == pytest.approx(table.retimed_ms()[best.key] / 1.10)

    # A table re-timed before cuBLAS joined the rounds (every committed table until then) is re-timed
    # by a rerun that measures nothing new.
    notes = json.loads(table.meta.notes)
    del notes["vendor"]["retime"]
    store.set_notes(NAME, json.dumps(notes))
    assert not vendor_in_rounds(store.meta(NAME)) and vendor_ms(store.meta(NAME)) == 1.05
    again = run_race(make_space(), [RaceShape(SHAPE)], store, warm).shapes[0]
    assert again.measured == 0 and again.retime_s > 0 and again.retimed == 8
    assert vendor_in_rounds(store.meta(NAME)) and vendor_ms(store.meta(NAME)) == 1.10
    once_more = run_race(make_space(), [RaceShape(SHAPE)], store, warm).shapes[0]
    assert once_more.retime_s == 0.0  # now it has them: nothing to do
