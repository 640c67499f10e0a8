"""No file flysearch writes carries code from its inputs (issue 72, "an export runs code"): hostile
names are refused where a table is stored, and every exporter writes them as data whatever a
database holds. The checks and the planting are ``lab/benchmarks/export_fuzz.py``'s, which runs the
same over thousands of random strings."""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from flysearch.cli import main
from flysearch.errors import InputFormatError
from flysearch.export import export_json, export_triton, triton_configs_source, write_kernel_tuner_cache
from flysearch.tables import GroundTruth, Row, TableStore, import_tables, read_table_file
from lab.tests._benchmarks import benchmark_script

fuzz = benchmark_script("export_fuzz")

PAYLOAD = '__import__("os").system("echo PWNED")'
ISSUE = f"x\n{PAYLOAD}, #"  # the name of issue 72's reproduction
HOSTILE = [
    ISSUE, f"x\r{PAYLOAD}", f"x\u2028{PAYLOAD}", f"'}}, {PAYLOAD}, {{'", f'"), {PAYLOAD}, ("',
    f'"""\n{PAYLOAD}\n"""', "back\\slash\\", "# -*- coding: latin-1 -*-", "\u202eevil\u2066", "nul\x00byte",
    "lone \ud800 surrogate", "\ufeff\U0001f600 \u4e2d\u6587 \u0627\u0644\u0639", "=1+1,\"quoted\"",
    "A" * 10_000 + PAYLOAD,
]
PRINTABLE = sum(text.isprintable() for text in HOSTILE)


def test_issue_72_a_name_with_code_is_refused_at_import(tmp_path: Path) -> None:
    db = tmp_path / "e.db"
    result = CliRunner().invoke(main, ["tables", "import", "--db", str(db), "--name", ISSUE,
                                       str(fuzz.TRITON_TABLE)])
    assert result.exit_code == 2
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and "holds '\\n'" in error[0] and "--name" in error[0]
    assert not db.exists()  # the database made for the refused table is removed


@pytest.mark.parametrize(("field", "value"), [("name", "a\u202eb"), ("name", "a\x00b"), ("kernel", "k\nk"),
                                              ("device", "d\ud800"), ("arch", "\x1b[2J")])
def test_every_name_a_table_is_known_by_must_be_printable(tmp_path: Path, field: str, value: str) -> None:
    meta, rows = read_table_file(fuzz.TRITON_TABLE)
    setattr(meta, field, value)
    store = TableStore(tmp_path / "t.db")
    with pytest.raises(InputFormatError, match="control or invisible character"):
        store.write(meta, rows)
    with pytest.raises(InputFormatError, match="control or invisible character"):
        store.add_rows(meta, rows[:1])
    assert store.names() == []


def _smuggled(tmp_path: Path, name: str) -> Path:
    """A database holding the committed table under *name*, as one written before names were
    checked holds it (renamed in SQLite itself)."""
    db = tmp_path / "old.db"
    import_tables([fuzz.TRITON_TABLE], db=db, name="printable")
    with sqlite3.connect(db) as conn:
        conn.execute("update gt_rows set table_name = ? where table_name = 'printable'", [name])
        conn.execute("update gt_tables set name = ? where name = 'printable'", [name])
    conn.close()
    return db


def test_issue_72_an_old_database_with_that_name_exports_data_only(tmp_path: Path) -> None:
    pytest.importorskip("triton")
    db = _smuggled(tmp_path, ISSUE)
    py, js = tmp_path / "best.py", tmp_path / "best.json"
    export_triton(db, prefix="x", out=py, json_out=js)
    source = py.read_text()
    verdict, why, lists = fuzz.python_verdict(source)
    assert (verdict, why, list(lists)) == (fuzz.OK, "", ["CONFIGS"])
    assert "    # " + repr(ISSUE)[:-1] + ": " in source  # the name as a string literal, in one comment line
    assert fuzz.run_python_files([py], {py: {"CONFIGS"}}) == {}  # runs, prints nothing
    assert json.loads(js.read_text())["configs"][0]["table"] == ISSUE


def test_hostile_names_through_every_importer_and_exporter(tmp_path: Path) -> None:
    verdicts, _seconds = fuzz.run_texts(HOSTILE, tmp_path)
    for stage, counts in verdicts.counts.items():
        assert set(counts) <= {fuzz.OK, fuzz.REFUSED}, (stage, counts, verdicts.examples)
    refused = {stage for stage, counts in verdicts.counts.items() if counts[fuzz.REFUSED]}
    assert refused == {"import: table file (--name, device)", "import: aiter tuned CSV (dtypes, kernel name)",
                       "import: Kernel Tuner cache (kernel, device, parameter)", "export aiter CSV"}
    written = {stage: counts[fuzz.OK] for stage, counts in verdicts.counts.items()}
    # Every exporter wrote every string from a table that held it; the printable ones were stored.
    for stage in ("export triton", "export triton JSON", "export kernel-tuner", "export flydsl",
                  "export aiter-triton"):
        assert written.get(stage, len(HOSTILE)) == len(HOSTILE), stage  # aiter-triton: where aiter imports
    for stage in ("import: table file (--name, device)", "export triton (stored table)",
                  "export triton JSON (stored table)", "export aiter CSV"):
        assert written[stage] == PRINTABLE, stage


def test_the_checks_catch_what_the_export_wrote_before(tmp_path: Path) -> None:
    """The checks can fail: the file ``export triton`` wrote for issue 72's name before the fix."""
    pytest.importorskip("triton")
    before = ('"""Best configs exported by flysearch on 2026-12-07."""\n\nimport triton\n\nCONFIGS = [\n'
              f"    # {ISSUE}: 0.01931 ms\n    triton.Config(\n        {{'BLOCK_M': 16}},\n"
              "        num_warps=4, num_stages=4,\n    ),\n]\n")
    assert fuzz.python_verdict(before)[0] == fuzz.CODE
    assert fuzz.python_verdict(before.replace("CONFIGS = [", "CONFIGS = [print('PWNED'),"))[0] == fuzz.CODE
    assert fuzz.python_verdict(before.replace("    # x\n", "    # x\n'''"))[0] == fuzz.UNPARSED
    path = tmp_path / "before.py"
    path.write_text(before)
    ran = fuzz.run_python_files([path], {path: {"CONFIGS"}})
    assert "PWNED" in ran[path]


def test_a_value_without_a_literal_is_refused_and_kernel_names_never_share_a_list() -> None:
    entry = {"table": "t", "kernel": "triton_gemm", "time_ms": 0.01, "params": {"BLOCK_M": math.nan}}
    for export in (triton_configs_source, export_json):
        with pytest.raises(InputFormatError, match=r"NaN|literal"):
            export([entry])
    with pytest.raises(InputFormatError, match="identifier"):
        triton_configs_source([entry], name="import os")
    fine = {**entry, "params": {"BLOCK_M": 16}}
    kernels = [fine, {**fine, "kernel": "triton-gemm"}, {**fine, "kernel": "triton\u00b2gemm"}]
    source = triton_configs_source(kernels)
    assert fuzz.python_verdict(source)[2].keys() == {"CONFIGS_TRITON_GEMM", "CONFIGS_TRITON_GEMM_2",
                                                     "CONFIGS_TRITON_GEMM_3"}


def test_a_kernel_tuner_cache_with_a_nan_is_refused(tmp_path: Path) -> None:
    meta, _ = read_table_file(fuzz.TRITON_TABLE)
    meta.space = {"params": [{"name": "BLOCK_M", "values": [math.inf]}]}
    table = GroundTruth(meta, {"x": Row("x", {"BLOCK_M": math.inf}, "ok", 1.0)})
    with pytest.raises(InputFormatError, match="NaN or infinite"):
        write_kernel_tuner_cache(table, tmp_path / "c.json")
    assert not (tmp_path / "c.json").exists()
