"""``flysearch tune run|show|export`` over a user's file: pre-tuning, listing, exporting, bad input."""

from __future__ import annotations

import ast
import json
import textwrap

import pytest
from click.testing import CliRunner

from flysearch.cli import main

WORKLOAD = textwrap.dedent('''
    import numpy as np
    import flysearch

    @flysearch.autotune(space={"chunk": [16, 64, 256], "unroll": [1, 2]}, key=["n"], budget=4,
                        reference=lambda x, out, n: x + 1, outputs=["out"])
    def add_one(x, out, n, chunk, unroll):
        for i in range(0, n, chunk):
            out[i:i + chunk] = x[i:i + chunk] + 1

    def workload(n):
        x, out = np.arange(float(n)), np.empty(n)
        add_one(x, out, n)
''')


@pytest.fixture
def files(tmp_path):
    (tmp_path / "mine.py").write_text(WORKLOAD)
    (tmp_path / "keys.toml").write_text("[[key]]\nn = 256\n\n[[key]]\nn = 1024\n")
    return tmp_path


def _invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def test_run_tunes_every_key_then_show_and_export_read_the_store(files):
    store = files / "store.db"
    result = _invoke("tune", "run", f"{files}/mine.py:workload", "--keys", files / "keys.toml",
                     "--store", store)
    assert result.exit_code == 0, result.output
    shown = json.loads(_invoke("tune", "show", "--store", store, "--json").output)
    assert sorted(t["key"] for t in shown) == ["n=1024", "n=256"]
    assert all(t["state"] == "done" and t["report"]["compiles"] == 4 for t in shown)
    winner = json.dumps(next(t["config"] for t in shown if t["key"] == "n=1024"))
    table = _invoke("tune", "show", "--store", store).output  # a pipe's lines are never wrapped
    assert any("add_one" in line and "n=1024" in line and winner in line for line in table.splitlines())
    source = _invoke("tune", "export", "--store", store, "--kernel", "add_one").output
    tree = ast.parse(source)
    assert "triton.Config(" in source and tree.body
    exported = json.loads(_invoke("tune", "export", "--store", store, "--format", "json").output)
    assert {c["key"] for c in exported["configs"]} == {"n=256", "n=1024"}


def test_a_second_run_tunes_nothing(files):
    store = files / "store.db"
    args = ("tune", "run", f"{files}/mine.py:workload", "--keys", files / "keys.toml", "--store", store)
    _invoke(*args)
    before = json.loads(_invoke("tune", "show", "--store", store, "--json").output)
    again = _invoke(*args, "--json")  # its result as 'tune show --json' prints it, on stdout alone
    assert again.exit_code == 0
    assert json.loads(again.stdout) == before


@pytest.mark.parametrize(("edit", "message"), [
    (lambda f: None, "holds no [[key]]"),
    (lambda f: (f / "mine.py").write_text(WORKLOAD.replace('key=["n"]', 'key=["m"]')), "key names 'm'"),
    (lambda f: (f / "mine.py").write_text(WORKLOAD.replace('"unroll": [1, 2]', '"block": [1]')),
     "'block', which add_one does not take"),
])
def test_bad_input_is_one_line_and_exit_2(files, edit, message):
    edit(files)
    keys = files / ("empty.toml" if message.startswith("holds") else "keys.toml")
    keys.touch()
    result = _invoke("tune", "run", f"{files}/mine.py:workload", "--keys", keys, "--store", files / "s.db")
    assert result.exit_code == 2
    assert message in result.output and "Traceback" not in result.output


def test_an_unwritable_store_or_a_missing_workload_is_exit_2(files):
    (files / "a-file").write_text("")
    cases = [(f"{files}/mine.py:workload", files / "a-file" / "s.db", "Cannot make the autotune store"),
             (f"{files}/mine.py:nothing", files / "s.db", "defines no function 'nothing'"),
             (f"{files}/absent.py:workload", files / "s.db", "No workload file")]
    for target, store, message in cases:
        result = _invoke("tune", "run", target, "--keys", files / "keys.toml", "--store", store)
        assert result.exit_code == 2 and message in result.output, result.output
    assert not (files / "s.db").exists()


def test_race_writes_one_table_per_key_that_compare_can_read(files):
    from flysearch.tables import read_table_file

    result = _invoke("tune", "race", f"{files}/mine.py:workload", "--keys", files / "keys.toml",
                     "--out", files / "races")
    assert result.exit_code == 0, result.output
    tables = sorted((files / "races").glob("*.table.json.gz"))
    assert [p.name for p in tables] == ["add_one__n=1024.table.json.gz", "add_one__n=256.table.json.gz"]
    meta, rows = read_table_file(tables[0])
    assert len(rows) == 6 and meta.problem == {"n": 1024}
    assert not (files / "store.db").exists()
