from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest

from flysearch.errors import InputFormatError, MissingConfigError, MissingTableError
from flysearch.evaluators import ReplayEvaluator
from flysearch.kernels import get_space
from flysearch.space import get_arch
from flysearch.tables import (
    GroundTruth,
    Outcome,
    Row,
    TableMeta,
    TableStore,
    dump_table_file,
    read_kernel_tuner_cache,
    read_table_file,
    space_for_table,
)


def _meta(name: str = "t") -> TableMeta:
    return TableMeta(
        name=name, kernel="gemm", arch="sm_90", device="NVIDIA H200",
        problem={"M": 1, "N": 4096, "K": 4096, "dtype": "bf16"},
        space={"name": "toy", "params": [{"name": "B", "values": [1, 2, 3]}]},
        source="test", versions={"torch": "2.11"},
    )


def test_write_and_load_round_trip(tmp_path: Path) -> None:
    store = TableStore(tmp_path / "t.db")
    rows = [
        Row("B=1", {"B": 1}, "ok", 2.0, 0.4, 0.01),
        Row("B=2", {"B": 2}, "compile_failed", None, 0.3, detail="ptxas error"),
        Row("B=3", {"B": 3}, "wrong_result", None, 0.5, 0.01, extra={"rel_err": 0.5}),
    ]
    store.write(_meta(), rows)
    table = TableStore(tmp_path / "t.db").load("t")
    assert table.rows == {r.key: r for r in rows}
    assert table.best().key == "B=1"
    assert table.meta.shape().regime == "decode"
    summary = next(iter(store.summaries()))
    assert (summary["rows"], summary["ok"], summary["best_ms"], summary["regime"]) == (3, 1, 2.0, "decode")


def test_a_failed_write_leaves_nothing(tmp_path: Path) -> None:
    store = TableStore(tmp_path / "t.db")
    rows = [Row("B=1", {"B": 1}, "ok", 2.0), Row("B=2", {"B": 2}, "exploded", None)]
    with pytest.raises(InputFormatError, match="exploded"):
        store.write(_meta(), rows)
    assert store.names() == []
    store.write(_meta(), rows[:1])
    with pytest.raises(InputFormatError, match="already exists"):
        store.write(_meta(), rows[:1])
    store.write(_meta(), [Row("B=3", {"B": 3}, "ok", 1.0)], replace=True)
    assert list(store.load("t").rows) == ["B=3"]


def test_add_rows_resumes(tmp_path: Path) -> None:
    store = TableStore(tmp_path / "t.db")
    store.add_rows(_meta(), [Row("B=1", {"B": 1}, "ok", 2.0)])
    store.add_rows(_meta(), [Row("B=2", {"B": 2}, "runtime_failed"), Row("B=1", {"B": 1}, "ok", 1.5)])
    assert store.done_keys("t") == {"B=1", "B=2"}
    assert store.load("t").rows["B=1"].time_ms == 1.5


def test_missing_table_and_database(tmp_path: Path) -> None:
    with pytest.raises(MissingTableError, match="No table database"):
        TableStore(tmp_path / "absent.db", create=False)
    assert not (tmp_path / "absent.db").exists()
    store = TableStore(tmp_path / "t.db")
    store.write(_meta("present"), [Row("B=1", {"B": 1}, "ok", 1.0)])
    with pytest.raises(MissingTableError, match="known tables: present"):
        store.load("absent")
    not_a_db = tmp_path / "junk.db"
    not_a_db.write_text("hello, I am not SQLite" * 100)
    with pytest.raises(InputFormatError, match="not a flysearch table database"):
        TableStore(not_a_db)


def test_import_convolution_mi250x(conv_mi250x: GroundTruth) -> None:
    assert conv_mi250x.name == "convolution_milo/MI250X"
    assert (conv_mi250x.meta.arch, conv_mi250x.meta.device) == ("gfx90a", "MI250X")
    assert len(conv_mi250x) == 4362 == len(conv_mi250x.ok_rows())
    assert conv_mi250x.meta.problem == {"problem_size": [4096, 4096]}
    best = conv_mi250x.best()
    assert best.time_ms == pytest.approx(0.6587962452322245)
    assert best.compile_s == pytest.approx(0.9928228356875479)
    assert conv_mi250x.meta.date == "2023-12-21"


def test_import_keeps_failures(conv_a100: GroundTruth) -> None:
    outcomes: dict[str, int] = {}
    for row in conv_a100.rows.values():
        outcomes[row.outcome] = outcomes.get(row.outcome, 0) + 1
    assert outcomes == {"ok": 4201, "runtime_failed": 155, "compile_failed": 6}
    assert conv_a100.meta.arch == "sm_80"
    failed = next(r for r in conv_a100.rows.values() if r.outcome == "compile_failed")
    assert failed.detail == "CompilationFailedConfig" and failed.time_ms is None


def test_kernel_tuner_failure_markers_of_either_format_are_failures(tmp_path: Path) -> None:
    # The hub's caches write the marker as the time; Kernel Tuner 1.5 writes it as "__error__" and
    # no time (util.store_cache writes str() of the error object: its class name).
    cache = {
        "1,1": {"a": 1, "b": 1, "time": 2.0},
        "1,2": {"a": 1, "b": 2, "time": "InvalidConfig"},
        "2,1": {"a": 2, "b": 1, "__error__": "CompilationFailedConfig", "compile_time": 40.0},
        "2,2": {"a": 2, "b": 2, "__error__": "RuntimeFailedConfig", "compile_time": 50.0,
                "benchmark_time": 1.0},
    }
    doc = {"device_name": "MI250X", "tune_params_keys": ["a", "b"], "tune_params": {"a": [1, 2], "b": [1, 2]},
           "cache": cache}
    path = tmp_path / "toy" / "MI250X.json"
    path.parent.mkdir()
    path.write_text(json.dumps(doc))
    _, rows = read_kernel_tuner_cache(path)
    got = {r.key: (r.outcome, r.time_ms, r.detail) for r in rows}
    assert got == {
        "a=1,b=1": ("ok", 2.0, ""),
        "a=1,b=2": ("rejected", None, "InvalidConfig"),
        "a=2,b=1": ("compile_failed", None, "CompilationFailedConfig"),
        "a=2,b=2": ("runtime_failed", None, "RuntimeFailedConfig"),
    }
    assert next(r for r in rows if r.key == "a=2,b=1").compile_s == pytest.approx(0.04)


def test_plain_json_cache_and_malformed_caches(tmp_path: Path, conv_mi250x_path: Path) -> None:
    plain = tmp_path / "conv" / "MI250X.json"
    plain.parent.mkdir()
    with gzip.open(conv_mi250x_path, "rt") as fh:
        doc = json.load(fh)
    plain.write_text(json.dumps(doc))
    meta, rows = read_kernel_tuner_cache(plain)
    assert meta.name == "conv/MI250X" and len(rows) == 4362
    broken = tmp_path / "broken.json.gz"
    shutil.copy(conv_mi250x_path, broken)
    broken.write_bytes(broken.read_bytes()[:5000])
    with pytest.raises(InputFormatError, match="not a readable Kernel Tuner cache"):
        read_kernel_tuner_cache(broken)
    del doc["tune_params_keys"]
    plain.write_text(json.dumps(doc))
    with pytest.raises(InputFormatError, match="tune_params_keys"):
        read_kernel_tuner_cache(plain)
    with pytest.raises(InputFormatError, match="does not exist"):
        read_kernel_tuner_cache(tmp_path / "nope.json")


def test_table_file_round_trip(tmp_path: Path, conv_a100: GroundTruth) -> None:
    path = tmp_path / "a100.table.json.gz"
    dump_table_file(conv_a100, path)
    meta, rows = read_table_file(path)
    assert meta == conv_a100.meta
    assert {r.key: r for r in rows} == conv_a100.rows
    path.write_bytes(b"not gzip")
    with pytest.raises(InputFormatError):
        read_table_file(path)


def test_space_of_an_imported_table(conv_mi250x: GroundTruth) -> None:
    space = space_for_table(conv_mi250x)
    result = space.enumerate()
    assert result.summary() == "10240 -> 4362: listed_in_table -5878"
    assert {c.key for c in result.feasible} == set(conv_mi250x.rows)


def test_a_raced_table_replays_over_the_value_sets_of_its_race() -> None:
    """A family that gained a value after a table was raced (split-K's num_stages = 5) does not
    offer it in that table's replay: the space, and so every search of the table, is the race's."""
    h200 = Path(__file__).resolve().parents[2] / "lab/benchmarks/data/h200"
    path = sorted(h200.glob("*.table.json.gz"))[0]
    meta, rows = read_table_file(path)
    table = GroundTruth(meta, {r.key: r for r in rows})
    family = get_space(meta.space["name"])
    assert 5 in family.param("num_stages").values
    space = space_for_table(table)
    assert space.param("num_stages").values == (2, 3, 4)
    assert [p.name for p in space.params] == [p.name for p in family.params]
    enum = space.enumerate(meta.shape(), get_arch("sm_90"))
    assert {c.key for c in enum.feasible} == set(table.rows)


def test_replay_charges_a_compile_once(conv_a100: GroundTruth) -> None:
    space = space_for_table(conv_a100)
    evaluator = ReplayEvaluator(conv_a100)
    best = space.config_from_key(conv_a100.best().key)
    first = evaluator.compile(best)
    measured = evaluator.time(first)
    assert measured.outcome is Outcome.OK and measured.time_ms == conv_a100.best().time_ms
    row = conv_a100.best()
    assert evaluator.cost_s == pytest.approx(row.compile_s + row.bench_s)
    again = evaluator.compile(best)
    assert again.compile_s == 0.0 and evaluator.compiles == 1
    failed_key = next(k for k, r in conv_a100.rows.items() if r.outcome == "compile_failed")
    compiled = evaluator.compile(space.config_from_key(failed_key))
    assert compiled.outcome is Outcome.COMPILE_FAILED
    assert evaluator.time(compiled).outcome is Outcome.COMPILE_FAILED
    missing = next(c for c in space.configs() if c.key not in conv_a100.rows)
    with pytest.raises(MissingConfigError):
        evaluator.compile(missing)
