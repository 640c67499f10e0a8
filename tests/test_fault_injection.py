"""The fault-injection run (issue 72): a short run of ``benchmarks/fault_injection.py`` reports no
violation, and each of its checks fails on what it is there to catch."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
from optuna.trial import create_trial

import flysearch
from tests._benchmarks import benchmark_script

faults = benchmark_script("fault_injection")


def test_a_short_run_kills_a_study_twice_fills_its_disk_and_finds_no_violation(tmp_path: Path) -> None:
    out = tmp_path / "faults.md"
    done = subprocess.run([sys.executable, faults.__file__, "--faults", "3", "--targets", "study,disk",
                           "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    text = out.read_text()
    assert "**0 invariant violations** (target 0) in 3 faults (seed 0)" in text
    rows = {line.split(" | ")[0] for line in text.splitlines() if "| study |" in line}
    assert rows == {"| SIGKILL", "| SIGTERM", "| disk full"}
    assert "cannot be written" in text  # the full disk's one line, not "is it a flysearch SQLite file?"


def test_a_repeated_compile_a_running_trial_and_a_budget_overrun_are_found(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    table = faults.TABLES[0].with_name("triton_gemm__H200__1x6144x4096.table.json.gz")
    spec = flysearch.StudySpec(table="triton_gemm/H200/1x6144x4096", db=str(tmp_path / "t.db"), storage=url,
                               import_path=str(table), sampler="random", budget=5, name="s")
    flysearch.launch(spec)
    clean = faults.Found()
    assert faults.check_study_storage(url, clean, budget=5) == 1 and not clean.counts
    study = optuna.load_study(study_name="s", storage=url)
    first = next(t for t in study.trials if t.user_attrs["flysearch"].get("compile_index") == 1)
    again = {**first.user_attrs, "flysearch": {**first.user_attrs["flysearch"], "compile_index": 6}}
    study.add_trial(create_trial(params=first.params, distributions=first.distributions, value=first.value,
                                 user_attrs=again))
    study.ask()  # left RUNNING, as a killed process leaves its trial
    found = faults.Found()
    faults.check_study_storage(url, found, budget=5)
    assert set(found.counts) == {faults.LOST, faults.BUDGET, faults.RUNNING}
    assert "compiled twice" in found.why[faults.LOST]


def test_an_orphan_is_found_and_ended(tmp_path: Path) -> None:
    shell = subprocess.Popen(["sh", "-c", "sleep 60 & wait"], cwd=tmp_path, start_new_session=True)
    deadline = time.monotonic() + 10
    while not (tree := faults.descendants(shell.pid)) and time.monotonic() < deadline:
        time.sleep(0.02)
    shell.send_signal(signal.SIGKILL)
    shell.wait()
    assert faults.still_alive(tree, 0.2) == tree  # the sleep outlived its parent
    assert set(tree) <= set(faults.leftovers(tmp_path, {shell.pid}))
    faults.kill_all(tree)
    assert faults.still_alive(tree, 0.0) == {}


def test_a_half_written_file_and_a_traceback_are_found(tmp_path: Path) -> None:
    meta, rows = flysearch.read_table_file(faults.TABLES[0])
    prior = flysearch.fit_prior([flysearch.GroundTruth(meta, {r.key: r for r in rows})], max_iter=5)
    path = tmp_path / "p.joblib"
    prior.save(path)
    assert faults.prior_loads(path) == ""
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    assert "not a" in faults.prior_loads(path)
    db = tmp_path / "t.db"
    flysearch.TableStore(db).write(meta, rows)
    assert faults.sqlite_sound(db) == ""
    db.write_bytes(db.read_bytes()[:8192])
    assert faults.sqlite_sound(db)
    for name, whole in (("f.png", b"\x89PNG\r\n\x1a\n" + b"x" * 20 + b"\0\0\0\0IEND\xaeB`\x82"),
                        ("f.svg", b"<svg><g/></svg>"), ("s.csv", b"a,b\n1,2\n"), ("s.md", b"# t\n\nx\n")):
        assert faults._whole(name, whole) and not faults._whole(name, whole[: len(whole) - 5]), name
    assert faults.masked("0.4 ms, 12 runs") == faults.masked("0.53 ms, 12 runs")
    proc = faults.Proc.start("p", [sys.executable, "-c", "raise SystemExit(1) from ValueError()"], tmp_path)
    proc.wait(60)
    crashed = faults.Proc.start("q", [sys.executable, "-c", "1 / 0"], tmp_path)
    crashed.wait(60)
    found = faults.Found()
    faults.check_tracebacks([proc, crashed], found)
    assert found.counts == {faults.TRACEBACK: 1} and "ZeroDivisionError" in found.why[faults.TRACEBACK]
