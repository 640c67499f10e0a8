"""A user's mistake is one line and a non-zero exit code, and leaves no file behind."""

from __future__ import annotations

import contextlib
import gzip
import importlib.util
import json
import random
import re
import sqlite3
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from flysearch.cli import main
from flysearch.errors import FlysearchError, InputFormatError
from flysearch.tables import TableStore, opened_store, read_kernel_tuner_cache, read_table_file
from flysearch.tables._aiter_csv import (
    read_aiter_csv,
    read_profile_csv,
    read_tuned_csv,
    record_row,
    table_name,
)
from tests.conftest import DATA, REPO

TABLE_FILE = REPO / "lab" / "benchmarks" / "data" / "h200" / "triton_gemm__H200__256x1536x7168.table.json.gz"
TABLE = "triton_gemm/H200/256x1536x7168"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def one_error(out: str) -> str:
    """The one ``Error:`` line of *out* (and no traceback)."""
    errors = [line for line in out.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and "Traceback" not in out, out
    return errors[0]


@pytest.fixture()
def db(tmp_path: Path) -> str:
    path = str(tmp_path / "tables.db")
    code, out = run("tables", "import", str(TABLE_FILE), "--db", path)
    assert code == 0, out
    return path


def _table_doc() -> dict[str, Any]:
    with gzip.open(TABLE_FILE, "rt") as fh:
        return json.load(fh)


def _write(path: Path, doc: dict[str, Any]) -> str:
    with gzip.open(path, "wt") as fh:
        json.dump(doc, fh)
    return str(path)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["rows"].__setitem__(1, d["rows"][0]), "appears twice"),
        (lambda d: d["rows"][0].__setitem__("time_ms", "fast"), "has time_ms 'fast'; expected a number > 0"),
        (lambda d: d["rows"][0].__setitem__("time_ms", -1.0), "has time_ms -1.0"),
        (lambda d: d.__setitem__("rows", []), "has no config that ran (0 rows, none ok)"),
        (lambda d: [r.__setitem__("outcome", "runtime_failed") for r in d["rows"]], "none ok"),
    ],
)
def test_a_table_file_that_cannot_be_a_table_is_refused_before_any_database_is_made(
        tmp_path: Path, change: Any, message: str) -> None:
    doc = _table_doc()
    change(doc)
    path = _write(tmp_path / "bad.table.json.gz", doc)
    good = TABLE_FILE.with_name("triton_gemm__H200__1x6144x4096.table.json.gz")  # with it: none imported
    for command in (["tables", "import", path], ["tables", "import", str(good), path]):
        target = tmp_path / "new.db"
        code, out = run(*command, "--db", str(target))
        assert code == 2 and message in one_error(out)
        assert not target.exists()


def test_a_kernel_tuner_cache_whose_cache_is_not_an_object_is_one_line(tmp_path: Path) -> None:
    doc = {"tune_params_keys": ["a"], "tune_params": {"a": [1]}, "cache": [1, 2]}
    path = tmp_path / "cache.json"
    path.write_text(json.dumps(doc))
    code, out = run("tables", "import", str(path), "--db", str(tmp_path / "t.db"))
    assert code == 2 and "'cache' must be an object" in one_error(out)


def _kernel_tuner_cache(tmp_path: Path, entries: list[str], name: str = "MI250X.json") -> Path:
    """A Kernel Tuner cache as the tuner writes it, one cache entry a line from line 8 on (the
    text is built by hand: ``json.dumps`` cannot write the repeated keys these tests need)."""
    head = ['{', '"device_name": "MI250X",', '"kernel_name": "toy",', '"tune_params_keys": ["a", "b"],',
            '"tune_params": {"a": [1, 2], "b": [1, 2]},', '"objective": "time",', '"cache": {']
    text = "\n".join([*head, ",\n".join(entries), "}}"]) + "\n"
    path = tmp_path / "toy" / name
    path.parent.mkdir(exist_ok=True)
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def _entry(key: str, a: int, b: int, time: Any) -> str:
    return f'"{key}": {{"a": {a}, "b": {b}, "time": {json.dumps(time)}, "compile_time": 10.0}}'


@pytest.mark.parametrize("name", ["MI250X.json", "MI250X.json.gz"])
@pytest.mark.parametrize(
    ("planted", "message"),
    [  # a faster copy of "1,1" on line 10, once under its own key and once under another spelling
        (_entry("1,1", 1, 1, 0.001), r":10: cache key '1,1' appears twice \(first on line 8\)"),
        (_entry("1, 1", 1, 1, 0.001), r":10: cache entry '1, 1' holds the config of entry '1,1' \(line 8\)"),
    ],
)
def test_a_kernel_tuner_cache_with_a_repeated_key_is_one_line(
        tmp_path: Path, name: str, planted: str, message: str) -> None:
    entries = [_entry("1,1", 1, 1, 2.0), _entry("1,2", 1, 2, 3.0), planted]
    path = _kernel_tuner_cache(tmp_path, entries, name)
    with pytest.raises(InputFormatError, match=message):
        read_kernel_tuner_cache(path)
    target = tmp_path / "t.db"
    code, out = run("tables", "import", str(path), "--db", str(target))
    assert code == 2 and re.search(message, one_error(out)) and str(path) in one_error(out)
    assert not target.exists()


def test_a_repeated_key_inside_a_cache_entry_is_one_line(tmp_path: Path) -> None:
    twice = '"2,2": {"a": 2, "b": 2, "time": 5.0, "time": 0.001}'
    path = _kernel_tuner_cache(tmp_path, [_entry("1,1", 1, 1, 2.0), twice])
    with pytest.raises(InputFormatError, match=r":9: key 'time' of cache entry '2,2' appears twice"):
        read_kernel_tuner_cache(path)


@pytest.mark.parametrize("time", ["fast", "", "runtimefailedconfig", None, True, [1.0], {"ms": 1.0}])
def test_a_kernel_tuner_time_that_is_no_number_nor_failure_is_one_line(tmp_path: Path, time: Any) -> None:
    path = _kernel_tuner_cache(tmp_path, [_entry("1,1", 1, 1, 2.0), _entry("1,2", 1, 2, time)])
    message = f":9: cache entry '1,2' has time {time!r}"
    with pytest.raises(InputFormatError, match=re.escape(message)):
        read_kernel_tuner_cache(path)
    target = tmp_path / "t.db"
    code, out = run("tables", "import", str(path), "--db", str(target))
    assert code == 2 and message in one_error(out)
    assert not target.exists()


def test_an_unknown_kernel_tuner_error_name_is_one_line(tmp_path: Path) -> None:
    failed = '"1,2": {"a": 1, "b": 2, "__error__": "Melted", "compile_time": 1.0}'
    path = _kernel_tuner_cache(tmp_path, [_entry("1,1", 1, 1, 2.0), failed])
    code, out = run("tables", "import", str(path), "--db", str(tmp_path / "t.db"))
    assert code == 2 and ":9: cache entry '1,2' has __error__ 'Melted'" in one_error(out)


def test_a_failed_block_removes_the_database_it_created_but_keeps_one_that_existed(tmp_path: Path) -> None:
    new = tmp_path / "new.db"
    with pytest.raises(RuntimeError), opened_store(new):
        raise RuntimeError("race failed")
    assert not new.exists()
    meta, rows = read_table_file(TABLE_FILE)
    with opened_store(new) as store:
        store.write(meta, rows)
    with pytest.raises(RuntimeError), opened_store(new):
        raise RuntimeError("later failure")
    assert TableStore(new, create=False).names() == [TABLE]


def _commands_reading(source: str, tmp_path: Path, db: str) -> dict[str, list[str]]:
    """Each command that reads a table, reading *source* (a file, or a table of *db*)."""
    experiment = tmp_path / "c.toml"
    experiment.write_text(f'[experiment]\nbudget = 3\nseeds = 1\noutput = "out"\ndb = "{db}"\n'
                          f'[[table]]\nsource = "{source}"\n[[sampler]]\nname = "random"\n')
    storage = f"sqlite:///{tmp_path / 's.db'}"
    model = ["model", "train", "--out", str(tmp_path / "m.joblib"), "--db", db]
    if Path(source).is_file():
        study = tmp_path / "s.toml"
        study.write_text(f'[study]\nimport = "{source}"\ntable = "toy/MI250X"\nbudget = 3\ndb = "{db}"\n'
                         f'storage = "{storage}"\n')
        return {"tables import": ["tables", "import", source, "--db", db],
                "compare": ["compare", str(experiment)], "study": ["study", "run", str(study)],
                "model train": [*model, "--file", source]}
    return {"compare": ["compare", str(experiment)],
            "study": ["study", "run", "--table", source, "--db", db, "--storage", storage],
            "model train": [*model, "--table", source]}


@pytest.mark.parametrize("time", [float("nan"), float("inf"), 0.0, -1.0])
def test_every_command_refuses_a_table_file_time_no_table_can_hold(tmp_path: Path, time: float) -> None:
    path = _kernel_tuner_cache(tmp_path, [_entry("1,1", 1, 1, 2.0), _entry("1,2", 1, 2, time)])
    message = f"{path}: row 'a=1,b=2' of table 'toy/MI250X' has time_ms {time!r}; expected a number > 0"
    for command, args in _commands_reading(str(path), tmp_path, str(tmp_path / "t.db")).items():
        code, out = run(*args)
        assert code == 2 and message in one_error(out), command
        assert sorted(p.name for p in tmp_path.iterdir()) == ["c.toml", "s.toml", "toy"], command


@pytest.mark.parametrize(("time", "message"), [
    (float("inf"), "has time_ms inf; expected a number > 0"),
    (-1.0, "has time_ms -1.0; expected a number > 0"),
    (0.0, "has time_ms 0.0; expected a number > 0"),
    (float("nan"), "is ok but has no time"),  # SQLite stores NaN as NULL
])
def test_every_command_refuses_a_stored_time_no_table_can_hold(db: str, tmp_path: Path, time: float,
                                                               message: str) -> None:
    with sqlite3.connect(db) as conn:
        key = conn.execute("select min(key) from gt_rows where outcome = 'ok'").fetchone()[0]
        conn.execute("update gt_rows set time_ms = ? where key = ?", (time, key))
    conn.close()
    for command, args in _commands_reading(TABLE, tmp_path, db).items():
        code, out = run(*args)
        assert code == 2 and f"{db}: row {key!r} of table {TABLE!r} {message}" in one_error(out), command
        assert sorted(p.name for p in tmp_path.iterdir()) == ["c.toml", "tables.db"], command


def test_a_kernel_tuner_key_that_disagrees_with_its_values_is_one_line(tmp_path: Path) -> None:
    entries = [_entry("1,1", 1, 1, 2.0), _entry("1,2", 2, 2, 3.0)]  # "1,2" holds a = 2
    path = _kernel_tuner_cache(tmp_path, entries)
    target = tmp_path / "t.db"
    code, out = run("tables", "import", str(path), "--db", str(target))
    message = f"{path}:9: cache entry '1,2' holds a 2 where its key says 1; a key lists its entry's values"
    assert code == 2 and message in one_error(out)
    assert not target.exists()
    agreeing = [_entry("1,1", 1, 1, 2.0), _entry("2.0, 2", 2, 2, 3.0)]  # another spelling of one value
    rows = read_kernel_tuner_cache(_kernel_tuner_cache(tmp_path, agreeing, "A100.json"))[1]
    assert [r.key for r in rows] == ["a=1,b=1", "a=2,b=2"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seed", "-1"], "'--seed': -1 is not in the range 0<=x<=4294967295"),
        (["--seed", "4294967296"], "is not in the range"),
        (["--evaluator", "simulated", "--scale", "-1"], "'--scale': -1.0 is not in the range x>=0"),
        (["--evaluator", "simulated", "--rounds", "0"], "'--rounds'"),
        (["--evaluator", "simulated", "--compile-workers", "0"], "'--compile-workers'"),
    ],
)
def test_out_of_range_flags_are_refused(db: str, tmp_path: Path, args: list[str], message: str) -> None:
    storage = tmp_path / "s.db"
    code, out = run("study", "run", "--table", TABLE, "--db", db, "--storage", f"sqlite:///{storage}",
                    "--budget", "3", *args)
    assert code == 2 and message in one_error(out)
    assert not storage.exists()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("seed = -4", "A seed must be an integer from 0 to 4294967295, got -4."),
        ('seed = "x"', "got 'x'"),
        ("seed = true", "got True"),
        ("max_idle = -1", "max_idle must be a positive integer, got -1."),
        ("name = 5", "A study name must be a string, got 5."),
    ],
)
def test_bad_values_in_a_study_file_are_one_line(db: str, tmp_path: Path, line: str, message: str) -> None:
    study = tmp_path / "s.toml"
    storage = tmp_path / "s.db"
    study.write_text(f'[study]\ntable = "{TABLE}"\nbudget = 3\ndb = "{db}"\n'
                     f'storage = "sqlite:///{storage}"\n{line}\n')
    code, out = run("study", "run", str(study))
    assert code == 2 and message in one_error(out)
    assert not storage.exists()


def _experiment(tmp_path: Path, samplers: str = '[[sampler]]\nname = "random"\n', head: str = "") -> Path:
    """An experiment file over the one table, with output folder ``out``."""
    path = tmp_path / "c.toml"
    path.write_text(f'[experiment]\nbudget = 3\n{head}\noutput = "out"\n[[table]]\nsource = "{TABLE_FILE}"\n'
                    f"{samplers}")
    return path


@pytest.mark.parametrize(
    ("experiment", "sampler", "message"),
    [
        ("seeds = [-1]", "", "seeds must be a count or a list of integers from 0 to 4294967295"),
        ("seeds = 1", "max_idle = -1", "max_idle of sampler 'random' must be a positive integer"),
        ("seeds = 1", 'max_idle = "x"', "got 'x'"),
    ],
)
def test_bad_values_in_an_experiment_file_are_one_line(tmp_path: Path, experiment: str, sampler: str,
                                                      message: str) -> None:
    path = _experiment(tmp_path, f'[[sampler]]\nname = "random"\n{sampler}\n', head=experiment)
    code, out = run("compare", str(path), "--out", str(tmp_path / "out"))
    assert code == 2 and message in one_error(out)
    assert not (tmp_path / "out").exists()


def test_an_unknown_sampler_lists_each_known_one_once(tmp_path: Path) -> None:
    path = _experiment(tmp_path, '[[sampler]]\nname = "x"\n')
    code, out = run("compare", str(path), "--out", str(tmp_path / "out"))
    known = one_error(out).split("choose one of: ")[1].rstrip(".").split(", ")
    assert code == 2 and "costmodel" in known and len(known) == len(set(known))


def test_a_damaged_results_database_is_named(tmp_path: Path) -> None:
    path = _experiment(tmp_path)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "results.db").write_text("not a database\n")
    for extra in ([], ["--report-only"]):
        code, out = run("compare", str(path), "--out", str(tmp_path / "out"), *extra)
        assert code == 2 and "results.db is not a results database" in one_error(out)


def _damage(path: Path) -> None:
    with path.open("r+b") as fh:  # the pages after the first few: the schema survives, the data not
        fh.seek(4096 * 3)
        fh.write(b"x" * 4096 * 4)


def test_a_damaged_table_database_is_one_line(db: str, tmp_path: Path) -> None:
    _damage(Path(db))
    for args in (["tables", "list"], ["study", "run", "--table", TABLE, "--budget", "3",
                                      "--storage", f"sqlite:///{tmp_path / 's.db'}"],
                 ["export", "triton"], ["race", "summary"]):
        code, out = run(*args, "--db", db)
        assert code != 0 and f"{db} cannot be used: " in one_error(out), args


@pytest.mark.parametrize("where", ["folder", "missing folder"])
def test_an_output_that_cannot_be_written_fails_before_the_work(db: str, tmp_path: Path, where: str) -> None:
    target = tmp_path / "a_folder" if where == "folder" else tmp_path / "missing" / "x"
    if where == "folder":
        target.mkdir()
    expected = ("is a folder, not a file", "is a directory") if where == "folder" else ("does not exist",)
    storage = tmp_path / "s.db"
    for args in (
        ["export", "triton", "--db", db, "--out", str(target)],
        ["export", "triton", "--db", db, "--out", str(tmp_path / "ok.py"), "--json", str(target)],
        ["model", "train", "--db", db, "--table", TABLE, "--out", str(target)],
        ["export", "aiter", "--out", str(target), "--db", db],
        ["study", "run", "--evaluator", "simulated", "--table", TABLE, "--db", db, "--budget", "2",
         "--storage", f"sqlite:///{storage}", "--compile-log", str(target)],
        ["study", "run", "--evaluator", "simulated", "--table", TABLE, "--db", db, "--budget", "2",
         "--storage", f"sqlite:///{storage}", "--json", str(target)],
    ):
        code, out = run(*args)
        assert code == 2 and any(e in one_error(out) for e in expected), args
    assert not (tmp_path / "ok.py").exists() and not storage.exists()


def test_an_output_folder_under_a_file_fails_before_the_work(db: str, tmp_path: Path) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("")
    for args in (["race", "dump", str(a_file / "sub"), "--db", db],
                 ["export", "flydsl", "--db", db, "--table", TABLE, "--name", "n", "--device", "d",
                  "--arch", "gfx942", "--cu", "304", "--out", str(a_file)]):
        code, out = run(*args)
        assert code == 2 and "not a folder" in one_error(out), args


def test_a_shape_corpus_that_is_malformed_is_one_line(tmp_path: Path) -> None:
    cases = {"shape = 5\n": "'shape' must be [[shape]] tables",
             '[[shape]]\nname = "a"\nN = 1\nK = 2\n': "shape #1 lacks M."}
    for text, message in cases.items():
        path = tmp_path / "shapes.toml"
        path.write_text(text)
        code, out = run("race", "run", "--shapes", str(path), "--db", str(tmp_path / "r.db"))
        assert code == 2 and message in one_error(out)
    code, out = run("race", "run", "--shapes", str(REPO / "studies" / "shapes_h200.toml"), "--only", "nope",
                    "--db", str(tmp_path / "r.db"))
    assert code == 2 and "--only names ['nope']" in one_error(out)
    code, out = run("race", "run", "--shape", "1x4096x4096", "--space", "flydsl_gemm",
                    "--db", str(tmp_path / "r.db"))
    assert code == 2 and ("--space flydsl_gemm is no Triton family that flysearch races; give one of "
                          "aiter_triton_gemm_cuda, triton_gemm_splitk, triton_gemm_splitk_fused, "
                          "triton_gemm_tma.") in one_error(out)
    assert not (tmp_path / "r.db").exists()


def test_model_eval_with_nothing_to_train_on_is_one_line(db: str) -> None:
    code, out = run("model", "eval", "--db", db, "--table", TABLE, "--seeds", "1", "--budget", "2")
    assert code == 2 and "Leave-one-table-out needs two tables of one kernel" in one_error(out)
    code, out = run("model", "eval", "--db", db, "--table", TABLE, "--budget", "0")
    assert code == 2 and "'--budget'" in one_error(out)


@pytest.mark.skipif(importlib.util.find_spec("triton") is not None, reason="checks a Python without Triton")
@pytest.mark.parametrize("command", [["study", "run", "--evaluator", "triton", "--shape", "64x64x64"],
                                     ["serve", "--evaluator", "triton"]])
def test_a_triton_evaluator_without_triton_is_one_line(tmp_path: Path, command: list[str]) -> None:
    code, out = run(*command, *(["--socket", str(tmp_path / "s.sock")] if command[0] == "serve" else []))
    assert code == 2 and "needs the triton package" in one_error(out)


def test_a_missing_linker_is_a_one_line_user_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from flysearch.evaluators import _toolchain as toolchain

    monkeypatch.setattr(toolchain, "find_lld", lambda: None)
    with pytest.raises(FlysearchError, match=r"No ld\.lld >= 19 found; install Debian's lld-19") as info:
        toolchain.compile_env("gfx942", "/nonexistent")
    assert "\n" not in str(info.value)


@pytest.mark.skipif(importlib.util.find_spec("flydsl") is None, reason="needs flydsl")
def test_a_flydsl_factory_that_cannot_be_loaded_is_a_user_error() -> None:
    from flysearch.evaluators import find_lld

    if find_lld() is None:
        pytest.skip("a FlyDSL compile needs ld.lld >= 19 (Debian lld-19)")
    from flysearch.evaluators import FlydslCompileEvaluator
    from flysearch.kernels import get_space
    from flysearch.space import parse_shape

    space, shape = get_space("flydsl_gemm"), parse_shape("256x256x256")
    config = space.enumerate(shape, None).feasible[0]
    for factory, message in (("nope_module_x:fn", "cannot be loaded (ModuleNotFoundError"),
                             ("flysearch:no_such_function", "cannot be loaded (AttributeError"),
                             ("no_colon", "is not of the form module:function")):
        with pytest.raises(FlysearchError, match=message.replace("(", r"\(")):
            FlydslCompileEvaluator(factory, "gfx942").compile(config, shape)


def test_table_rows_are_checked_in_python_too(tmp_path: Path) -> None:
    meta, rows = read_table_file(TABLE_FILE)
    with pytest.raises(InputFormatError, match="appears twice"):
        TableStore(":memory:").write(meta, [*rows, rows[0]])
    with pytest.raises(InputFormatError, match="none ok"):
        failed = [replace(r, outcome="runtime_failed") for r in rows]
        TableStore(":memory:").write(meta, failed, require_ok=True)


def test_a_table_database_is_not_taken_as_a_study_storage(db: str) -> None:
    for args in (["study", "list"], ["study", "run", "--table", TABLE, "--db", db, "--budget", "2"]):
        code, out = run(*args, "--storage", f"sqlite:///{db}")
        assert code == 2 and "is not an Optuna study storage" in one_error(out)
    assert "studies" not in TableStore(db, create=False).db.table_names()  # no Optuna schema added


@pytest.mark.parametrize("gpus", ["abc", "0,0", "0,,1"])
def test_gpus_that_cuda_cannot_name_are_refused(db: str, tmp_path: Path, gpus: str) -> None:
    storage = tmp_path / "s.db"
    code, out = run("study", "run", "--evaluator", "simulated", "--table", TABLE, "--db", db, "--budget", "2",
                    "--storage", f"sqlite:///{storage}", "--gpus", gpus)
    assert code == 2 and "give GPU indices" in one_error(out)
    assert not storage.exists()


AITER_CSV = DATA / "aiter" / "bf16_tuned_gemm.csv"
needs_aiter = pytest.mark.skipif(not AITER_CSV.is_file(), reason=f"{AITER_CSV} is absent (../shared/data)")


def _aiter_copy(tmp_path: Path, row: int, column: int, value: str, name: str = "x.csv") -> Path:
    lines = AITER_CSV.read_text().splitlines(keepends=True)
    cells = lines[row].split(",")
    cells[column] = value
    lines[row] = ",".join(cells)
    path = tmp_path / name
    path.write_text("".join(lines))
    return path


@needs_aiter
@pytest.mark.parametrize(("value", "row"), [("inf", 1), ("0", 1), ("-64", 1), ("1e30", -1), ("64.7", 1)])
def test_an_aiter_csv_with_an_impossible_size_is_one_line_and_imports_nothing(
        tmp_path: Path, value: str, row: int) -> None:
    path = _aiter_copy(tmp_path, row, 2, value)  # column 2: M
    code, out = run("tables", "import", str(path), "--db", str(tmp_path / "a.db"))
    assert code == 2 and f"column 'M' holds '{value}', not a whole number >= 1" in one_error(out)
    assert not (tmp_path / "a.db").exists()


@needs_aiter
def test_an_aiter_import_is_all_or_nothing(tmp_path: Path) -> None:
    lines = AITER_CSV.read_text().splitlines(keepends=True)
    (tmp_path / "part").mkdir()
    (tmp_path / "part" / "x.csv").write_text("".join([lines[0], *lines[150:]]))
    (tmp_path / "whole").mkdir()
    (tmp_path / "whole" / "x.csv").write_text("".join(lines))
    db = tmp_path / "a.db"
    assert run("tables", "import", str(tmp_path / "part" / "x.csv"), "--db", str(db))[0] == 0
    before = TableStore(db, create=False).names()
    code, out = run("tables", "import", str(tmp_path / "whole" / "x.csv"), "--db", str(db))
    assert code == 2 and "already exists" in one_error(out)
    assert TableStore(db, create=False).names() == before  # none of the file's new tables written


def test_tables_import_refuses_options_and_files_that_do_not_fit(tmp_path: Path,
                                                                 conv_mi250x_path: Path) -> None:
    csv_file = tmp_path / "tuned.csv"
    csv_file.write_text(",".join(["gfx", "cu_num", "M", "N", "K"]) + "\n")
    cases = [
        (["--name", "x", str(TABLE_FILE), str(conv_mi250x_path)], "--name names one table, but 2 files"),
        (["--name", "x", str(csv_file)], "a table name (--name) cannot be given to it"),
        (["--aiter-profile", str(csv_file), str(TABLE_FILE)], "is a flysearch table file, not an aiter CSV"),
        ([str(TABLE_FILE), str(TABLE_FILE)], f"both hold table {TABLE!r}"),
    ]
    target = tmp_path / "t.db"
    for args, message in cases:
        code, out = run("tables", "import", *args, "--db", str(target))
        assert code == 2 and message in one_error(out), args
        assert not target.exists()


def test_a_one_table_reader_refuses_an_aiter_csv(tmp_path: Path) -> None:
    from flysearch.tables import read_any_table

    with pytest.raises(InputFormatError, match="holds one table per GEMM"):
        read_any_table(tmp_path / "tuned.csv")


@needs_aiter
@pytest.mark.parametrize("profile", [False, True])
def test_an_aiter_csv_with_a_repeated_row_is_one_line_and_imports_nothing(
        tmp_path: Path, profile: bool) -> None:
    lines = AITER_CSV.read_text().splitlines()
    planted = lines[5].split(",")
    planted[13] = "0.001"  # column 13: us; a faster copy of line 6 would become its table's optimum
    path = tmp_path / "x.csv"
    path.write_text("\n".join([*lines, ",".join(planted)]) + "\n")
    record = read_aiter_csv(path)[4]
    key, table = record_row(record).key, table_name("x", record)
    message = f"{path}:{len(lines) + 1}: config {key!r} of table {table!r} repeats line 6"
    reader = read_profile_csv if profile else read_tuned_csv
    with pytest.raises(InputFormatError, match=re.escape(message)):
        reader(path)
    target = tmp_path / "a.db"
    profile_flag = ["--aiter-profile"] if profile else []
    code, out = run("tables", "import", str(path), *profile_flag, "--db", str(target))
    assert code == 2 and message in one_error(out)
    assert not target.exists()


@needs_aiter
def test_a_spreadsheets_byte_order_mark_is_not_part_of_the_first_column(tmp_path: Path) -> None:
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf" + AITER_CSV.read_bytes())
    code, out = run("tables", "import", str(path), "--db", str(tmp_path / "a.db"))
    assert code == 0, out


@needs_aiter
def test_aiter_export_without_a_matching_table_keeps_the_existing_csv(db: str, tmp_path: Path) -> None:
    keep = tmp_path / "keep.csv"
    keep.write_text("precious\n")
    code, out = run("export", "aiter", "--out", str(keep), "--db", db)
    assert code == 2 and "No aiter FlyDSL table" in one_error(out)
    assert keep.read_text() == "precious\n"


def test_a_corrupt_gzip_body_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "garbage.table.json.gz"
    path.write_bytes(b"\x1f\x8b\x08\x00garbage" * 10)
    for args in (["tables", "import", str(path), "--db", str(tmp_path / "t.db")],
                 ["model", "train", "--file", str(path), "--out", str(tmp_path / "m.joblib")]):
        code, out = run(*args)
        assert code == 2 and "is not a readable flysearch table file" in one_error(out), args
    assert not (tmp_path / "t.db").exists()


def test_a_study_files_bad_import_leaves_no_database(tmp_path: Path) -> None:
    bad = tmp_path / "bad.table.json.gz"
    doc = _table_doc()
    doc["rows"][0]["time_ms"] = "fast"
    _write(bad, doc)
    study = tmp_path / "s.toml"
    study.write_text(f'[study]\ntable = "{TABLE}"\nimport = "bad.table.json.gz"\nbudget = 3\n'
                     f'db = "{tmp_path / "t.db"}"\nstorage = "sqlite:///{tmp_path / "s.db"}"\n')
    code, out = run("study", "run", str(study))
    assert code == 2 and "has time_ms 'fast'" in one_error(out)
    assert not (tmp_path / "t.db").exists() and not (tmp_path / "s.db").exists()


def _dump(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return list(conn.iterdump())
    finally:
        conn.close()


def test_a_study_storage_is_not_taken_as_a_table_database(db: str, tmp_path: Path) -> None:
    storage = tmp_path / "s.db"
    assert run("study", "run", "--table", TABLE, "--db", db, "--budget", "2", "--sampler", "random",
               "--storage", f"sqlite:///{storage}")[0] == 0
    before = _dump(storage)  # its content: the run's last commits may still be in its -wal file
    for args in (["tables", "list"], ["tables", "import", str(TABLE_FILE)], ["export", "triton"]):
        code, out = run(*args, "--db", str(storage))
        assert code == 2 and "is an Optuna study storage" in one_error(out), args
    assert _dump(storage) == before


def test_exports_refuse_tables_of_another_kernel(db: str, tmp_path: Path, conv_mi250x_path: Path) -> None:
    other = str(tmp_path / "conv.db")
    assert run("tables", "import", str(conv_mi250x_path), "--db", other)[0] == 0
    code, out = run("export", "triton", "--db", other, "--out", str(tmp_path / "x.py"))
    assert code == 2 and "No triton table" in one_error(out)
    common = ["export", "flydsl", "--db", db, "--table", TABLE, "--name", "n", "--device",
              "AMD Instinct MI300X", "--cu", "304", "--out", str(tmp_path / "fl")]
    code, out = run(*common, "--arch", "sm_90")
    assert code == 2 and "FlyDSL artifacts are for AMD archs" in one_error(out)
    code, out = run(*common, "--arch", "gfx942")
    assert code == 2 and "not a FlyDSL kernel" in one_error(out)
    assert not (tmp_path / "x.py").exists() and not list((tmp_path / "fl").glob("**/*.json"))


def test_race_dump_refuses_two_tables_for_one_file_and_an_empty_selection(tmp_path: Path) -> None:
    db = str(tmp_path / "t.db")
    for name in ("a/b", "a__b"):
        assert run("tables", "import", str(TABLE_FILE), "--db", db, "--name", name)[0] == 0
    code, out = run("race", "dump", str(tmp_path / "out"), "--db", db)
    assert code == 2 and "would both be written to a__b.table.json.gz" in one_error(out)
    code, out = run("race", "dump", str(tmp_path / "out"), "--db", db, "--prefix", "nomatch")
    assert code == 2 and "nothing to dump" in one_error(out)
    assert not (tmp_path / "out").exists()


def test_a_costmodel_comparison_without_tables_to_train_on_runs_nothing(tmp_path: Path) -> None:
    path = _experiment(tmp_path, '[[sampler]]\nname = "random"\n[[sampler]]\nname = "costmodel"\n')
    code, out = run("compare", str(path), "--out", str(tmp_path / "out"))
    assert code == 2 and "add a [[prior_table]] or a second [[table]]" in one_error(out)
    assert not (tmp_path / "out").exists()


def test_model_files_and_globs_that_hold_nothing_are_one_line(db: str, tmp_path: Path) -> None:
    import joblib

    model = tmp_path / "m.joblib"
    joblib.dump({"format": "flysearch-prior/1"}, model)
    code, out = run("model", "rank", "--model", str(model), "--db", db, "--table", TABLE)
    assert code == 2 and "is not a whole flysearch model file" in one_error(out)
    code, out = run("model", "train", "--file", str(tmp_path / "nothing" / "*.gz"), "--out", str(model))
    assert code == 2 and "matches no file" in one_error(out)


def test_a_prior_of_random_bytes_names_the_file_and_how_to_train_one(db: str, tmp_path: Path) -> None:
    model = tmp_path / "prior.joblib"
    model.write_bytes(random.Random(194).randbytes(4096))
    storage = tmp_path / "s.db"
    message = (f"Model file {model} is not a flysearch model file (joblib cannot read it); train one with "
               f"'flysearch model train --out {model}'.")
    study = ["study", "run", "--table", TABLE, "--db", db, "--budget", "3",
             "--storage", f"sqlite:///{storage}"]
    for args in (["model", "rank", "--model", str(model), "--db", db, "--table", TABLE],
                 [*study, "--sampler", "costmodel", "--prior", str(model)]):
        code, out = run(*args)
        assert code == 2 and one_error(out) == f"Error: {message}"
    assert not storage.exists()


@pytest.mark.parametrize(("url", "missing", "message"), [
    ("postgresql+psycopg2://u@localhost/studies", ["psycopg2"],
     "its driver psycopg2 is not installed; pip install 'flysearch[postgres]'."),
    ("postgresql://u@localhost/studies", ["psycopg", "psycopg2"],  # SQLAlchemy 2.1's default, or 2.0's
     "pip install 'flysearch[postgres]'"),
    ("postgresql+pg8000://u@localhost/studies", ["pg8000"],
     "its driver pg8000 is not installed; install it, or pip install 'flysearch[postgres]' and write the URL "
     "as postgresql+psycopg2://."),
])
def test_a_postgresql_storage_without_its_driver_names_the_install(
        db: str, monkeypatch: pytest.MonkeyPatch, url: str, missing: list[str], message: str) -> None:
    for module in missing:
        monkeypatch.setitem(sys.modules, module, None)  # not installed: importing it fails
    code, out = run("study", "run", "--table", TABLE, "--db", db, "--budget", "3", "--storage", url)
    assert code == 2 and f"Cannot open study storage {url!r}: its driver " in one_error(out)
    assert message in one_error(out)


@contextlib.contextmanager
def _sqlite_pages_at_most(pages: int) -> Iterator[None]:
    """Every SQLite database SQLAlchemy connects to (the study storages) holds at most *pages* pages:
    past them SQLite itself fails a write as on a full disk (SQLITE_FULL, "database or disk is full")."""
    import sqlalchemy as sa

    def cap(connection: sqlite3.Connection, _record: object) -> None:
        connection.execute(f"PRAGMA max_page_count = {pages}")

    sa.event.listen(sa.engine.Engine, "connect", cap)
    try:
        yield
    finally:
        sa.event.remove(sa.engine.Engine, "connect", cap)


def _trials(storage: Path) -> int:
    with contextlib.closing(sqlite3.connect(storage)) as conn:
        return conn.execute("select count(*) from trials").fetchone()[0]


def test_a_full_disk_is_one_line_that_names_the_file_and_the_study_resumes(db: str, tmp_path: Path) -> None:
    storage = tmp_path / "s.db"
    args = ["study", "run", "--table", TABLE, "--db", db, "--sampler", "random", "--name", "s",
            "--storage", f"sqlite:///{storage}"]
    message = (f"Error: No space left on the disk holding {storage}: free some there and run the same "
               "command again, which resumes where it stopped (what was stored before is kept).")
    with _sqlite_pages_at_most(1):  # at open: the storage's first table does not fit
        code, out = run(*args, "--budget", "3")
    assert code == 2 and one_error(out) == message and not storage.exists()
    assert run(*args, "--budget", "3")[0] == 0
    first = _trials(storage)
    with contextlib.closing(sqlite3.connect(storage)) as conn:
        pages = conn.execute("pragma page_count").fetchone()[0]
    with _sqlite_pages_at_most(pages + 2):  # mid-study: the new trials fill the pages left
        code, out = run(*args, "--budget", "300")
    assert code == 2 and one_error(out) == message
    stored = _trials(storage)
    assert stored > first  # it failed mid-study, after the trials that fitted were stored
    code, out = run(*args, "--budget", "300")
    assert code == 0 and "300/300 compiles" in out and _trials(storage) > stored


def test_study_show_with_a_named_db_that_is_no_table_database_is_one_line(db: str, tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 's.db'}"
    assert run("study", "run", "--table", TABLE, "--db", db, "--budget", "2", "--sampler", "random",
               "--name", "s", "--storage", storage)[0] == 0
    text = tmp_path / "text.db"
    text.write_text("hello\n")
    for bad, message in ((text, "is not a flysearch table database"),
                         (tmp_path / "none.db", "No table database")):
        code, out = run("study", "show", "s", "--storage", storage, "--db", str(bad))
        assert code == 2 and message in one_error(out)
    code, out = run("study", "show", "s", "--storage", storage, "--db", db)
    assert code == 0 and "regret" in out


def test_a_comparison_whose_output_is_a_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "out").write_text("")
    code, out = run("compare", str(_experiment(tmp_path)), "--out", str(tmp_path / "out"))
    assert code == 2 and "cannot be a folder" in one_error(out)
    assert (tmp_path / "out").read_text() == ""


def test_race_dump_leaves_out_a_table_tables_import_would_refuse(db: str, tmp_path: Path) -> None:
    meta, rows = read_table_file(TABLE_FILE)
    failed = [replace(r, outcome="compile_failed", time_ms=None) for r in rows[:3]]
    store = TableStore(db)
    store.write(replace(meta, name="triton_gemm/H200/nothing_ran"), failed)
    store.close()
    out_dir = tmp_path / "out"
    code, out = run("race", "dump", str(out_dir), "--db", db)
    assert code == 0, out
    assert "wrote 1 table files" in out
    assert "skipped 1 with no successful config: triton_gemm/H200/nothing_ran" in out
    assert [p.name for p in out_dir.iterdir()] == ["triton_gemm__H200__256x1536x7168.table.json.gz"]
    code, out = run("tables", "import", *map(str, out_dir.iterdir()), "--db", str(tmp_path / "back.db"))
    assert code == 0, out


def test_a_model_of_another_kernel_is_refused_in_one_line(db: str, tmp_path: Path,
                                                          conv_mi250x_path: Path) -> None:
    model = str(tmp_path / "gemm.joblib")
    assert run("model", "train", "--db", db, "--table", TABLE, "--out", model)[0] == 0
    code, out = run("model", "rank", "--model", model, "--file", str(conv_mi250x_path))
    assert code == 2
    assert "trained on none of the parameters of table convolution_milo/MI250X" in one_error(out)
    assert run("tables", "import", str(conv_mi250x_path), "--db", db)[0] == 0
    storage = tmp_path / "s.db"
    code, out = run("study", "run", "--db", db, "--table", "convolution_milo/MI250X", "--sampler",
                    "costmodel", "--prior", model, "--budget", "3", "--storage", f"sqlite:///{storage}")
    assert code == 2 and "trained on none of the parameters of space" in one_error(out)
    # The model's own kernel is ranked as before.
    code, out = run("model", "rank", "--model", model, "--db", db, "--table", TABLE, "--top", "2")
    assert code == 0 and "BLOCK_" in out



def test_flysearch_debug_adds_the_traceback_to_the_one_line(tmp_path: Path, monkeypatch) -> None:
    args = ["study", "run", "--table", "nope", "--db", str(tmp_path / "t.db")]
    code, out = run(*args)
    assert code == 2 and "No table database" in one_error(out)
    monkeypatch.setenv("FLYSEARCH_DEBUG", "1")
    code, out = run(*args)
    errors = [line for line in out.splitlines() if line.startswith("Error")]
    assert code == 2 and "Traceback" in out and "in launch" in out
    assert len(errors) == 1 and "No table database" in errors[0]
