from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner

from flysearch.cli import main
from flysearch.study import trial_records
from flysearch.tables import TableStore
from tests.conftest import DATA, REPO


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


@pytest.fixture()
def db(tmp_path: Path, conv_mi250x_path: Path) -> str:
    path = str(tmp_path / "tables.db")
    code, out = run("tables", "import", str(conv_mi250x_path), "--db", path)
    assert code == 0, out
    assert "imported convolution_milo/MI250X: 4362 rows (4362 ok), best 0.6588 ms" in out
    return path


def test_tables_import_and_list(db: str, conv_a100_path: Path) -> None:
    code, out = run("tables", "import", str(conv_a100_path), "--db", db, "--name", "conv-a100")
    assert code == 0 and "4362 rows (4201 ok)" in out
    code, out = run("tables", "list", "--db", db, "--json")
    assert code == 0
    assert [line.split('"name": "')[1].split('"')[0] for line in out.splitlines()] == [
        "conv-a100", "convolution_milo/MI250X",
    ]
    code, out = run("tables", "import", str(conv_a100_path), "--db", db, "--name", "conv-a100")
    assert code == 2 and "already exists" in out


def test_tables_import_takes_every_format_in_one_call(tmp_path: Path, conv_mi250x_path: Path) -> None:
    aiter_csv = DATA / "aiter" / "bf16_tuned_gemm.csv"
    if not aiter_csv.is_file():
        pytest.skip(f"{aiter_csv} is absent (../shared/data)")
    table_file = REPO / "lab/benchmarks/data/h200/triton_gemm__H200__256x1536x7168.table.json.gz"
    db = str(tmp_path / "t.db")
    files = [str(table_file), str(conv_mi250x_path), str(aiter_csv)]
    code, out = run("tables", "import", *files, "--db", db)
    assert code == 0, out
    assert "imported triton_gemm/H200/256x1536x7168: " in out
    assert "imported convolution_milo/MI250X: 4362 rows (4362 ok)" in out
    assert f"imported 232 tables from {aiter_csv} (aiter tuned CSV)" in out
    assert "imported 234 tables from 3 files" in out
    assert len(TableStore(db, create=False).names()) == 234
    code, out = run("tables", "import", *files, "--db", db)
    assert code == 2 and "already exists" in out
    code, out = run("tables", "import", *files, "--db", db, "--replace")
    assert code == 0 and "imported 234 tables from 3 files" in out


def test_study_run_and_show(db: str, tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    args = ["--db", db, "--storage", storage]
    code, out = run("study", "run", "--table", "convolution_milo/MI250X", "--sampler", "random",
                    "--budget", "40", "--name", "r", *args)
    assert code == 0, out
    assert "40 compiled" in out and "regret" in out and "nothing left" not in out
    code, again = run("study", "run", "--table", "convolution_milo/MI250X", "--sampler", "random",
                      "--budget", "40", "--name", "r", *args)
    assert code == 0 and "40 compiled" in again
    assert "resumed a finished study: nothing left to do" in again
    code, shown = run("study", "show", "r", *args)
    assert code == 0 and "40 compiled" in shown
    code, listed = run("study", "list", "--storage", storage)
    assert code == 0 and "r" in listed


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--sampler", "hyperband"], "Unknown sampler 'hyperband'; choose one of: grid"),
        (["--encoding", "onehot"], "Unknown encoding 'onehot'"),
        (["--budget", "0"], "budget must be a positive"),
    ],
)
def test_bad_flags_are_one_line_and_write_nothing(
    db: str, tmp_path: Path, extra: list[str], message: str
) -> None:
    storage = tmp_path / "studies.db"
    code, out = run("study", "run", "--table", "convolution_milo/MI250X", "--db", db,
                    "--storage", f"sqlite:///{storage}", *extra)
    assert code == 2 and message in out
    assert len([line for line in out.splitlines() if line.startswith("Error")]) == 1
    assert not storage.exists()


def test_missing_table_and_database(db: str, tmp_path: Path) -> None:
    storage = tmp_path / "studies.db"
    code, out = run("study", "run", "--table", "nope", "--db", db, "--storage", f"sqlite:///{storage}")
    assert code == 2 and "No table 'nope'" in out and "known tables: convolution_milo/MI250X" in out
    absent = tmp_path / "absent.db"
    code, out = run("study", "run", "--table", "nope", "--db", str(absent))
    assert code == 2 and "No table database" in out
    assert not absent.exists() and not storage.exists()
    code, out = run("study", "show", "nope", "--storage", f"sqlite:///{storage}")
    assert code == 2 and "No study storage" in out and not storage.exists()


def test_malformed_study_files(tmp_path: Path) -> None:
    cases = {
        "notoml.toml": "[study\nname=",
        "unknown.toml": '[study]\ntable = "t"\nsampler = "tpe"\npatience = 3\n',
        "notable.toml": '[study]\nsampler = "tpe"\n',
        "badtype.toml": '[study]\ntable = "t"\nbudget = "many"\n',
    }
    expected = ["not valid TOML", "unknown keys ['patience']", "does not name a table", "budget"]
    for (name, text), message in zip(cases.items(), expected, strict=True):
        path = tmp_path / name
        path.write_text(text)
        code, out = run("study", "run", str(path))
        assert code == 2 and message in out, (name, out)
    code, out = run("study", "run", str(tmp_path / "absent.toml"))
    assert code == 2 and "does not exist" in out


def test_quickstart_study_file_resolves_paths() -> None:
    from flysearch.study import load_study_file

    spec = load_study_file(REPO / "studies" / "quickstart.toml")
    assert spec.import_path is not None and spec.sampler == "tpe" and spec.budget == 200
    # Committed data: the quickstart runs on any clone, shared/ beside it or not.
    assert Path(spec.import_path).resolve() == (
        REPO / "lab/benchmarks/data/h200/triton_gemm__H200__256x1536x7168.table.json.gz"
    ).resolve()
    assert Path(spec.import_path).is_file()


def _trials_done(path: Path) -> int:
    try:
        with sqlite3.connect(path) as conn:
            return conn.execute("select count(*) from trials where state = 'COMPLETE'").fetchone()[0]
    except sqlite3.Error:
        return 0


@pytest.mark.slow
def test_kill_and_resume(db: str, tmp_path: Path) -> None:
    """SIGKILL a study mid-run; running it again keeps every finished trial and continues."""
    studies = tmp_path / "studies.db"
    cmd = [sys.executable, "-m", "flysearch", "study", "run", "--table", "convolution_milo/MI250X",
           "--sampler", "random", "--budget", "1500", "--name", "k", "--db", db,
           "--storage", f"sqlite:///{studies}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(REPO)})
    deadline = time.time() + 120
    while _trials_done(studies) < 40 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    storage = f"sqlite:///{studies}"
    killed = optuna.load_study(study_name="k", storage=storage)
    before = {
        t.number: t.user_attrs["flysearch"]
        for t in killed.trials
        if t.state == optuna.trial.TrialState.COMPLETE
    }
    assert 40 <= len(before)
    assert max(r["compile_index"] or 0 for r in before.values()) < 1500, "killed too late to test a resume"
    subprocess.run(cmd, check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    study = optuna.load_study(study_name="k", storage=storage)
    after = {t.number: t.user_attrs.get("flysearch") for t in study.trials}
    assert all(after[n] == rec for n, rec in before.items())
    keys = [r.key for _, r in trial_records(study) if r.compile_index is not None]
    assert len(keys) == len(set(keys)) == 1500
    assert not [t for t in study.trials if t.state == optuna.trial.TrialState.RUNNING]


@pytest.mark.slow
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
def test_a_signal_stops_a_study_in_one_line_and_the_same_command_resumes(
        db: str, tmp_path: Path, signum: int, code: int) -> None:
    """SIGTERM or Ctrl-C: the study ends with one line saying how to resume (no traceback), keeps
    every finished trial, and its progress went to the log as plain lines meanwhile."""
    studies = tmp_path / "studies.db"
    cmd = [sys.executable, "-m", "flysearch", "study", "run", "--table", "convolution_milo/MI250X",
           "--sampler", "random", "--budget", "1500", "--name", "s", "--db", db,
           "--storage", f"sqlite:///{studies}"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.time() + 120
    while _trials_done(studies) < 40 and time.time() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signum)
    _out, err = proc.communicate(timeout=60)
    assert proc.returncode == code, err
    assert "Traceback" not in err
    assert err.splitlines()[0].startswith("s: 0/1500 compiles")  # progress lines, not a bar: no terminal
    assert err.splitlines()[-1] == (f"study s: stopped by {signal.Signals(signum).name}; its finished trials "
                                    f"are stored in sqlite:///{studies}; the same command resumes.")
    stored = _trials_done(studies)
    assert stored >= 40
    done = subprocess.run(cmd, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    keys = [r.key for _, r in trial_records(optuna.load_study(study_name="s", storage=f"sqlite:///{studies}"))
            if r.compile_index is not None]
    assert len(keys) == len(set(keys)) == 1500


def test_tables_are_picked_by_kernel_arch_and_shape(db: str, tmp_path: Path) -> None:
    storage = f"sqlite:///{tmp_path / 'studies.db'}"
    code, out = run("study", "run", "--kernel", "convolution_kernel", "--arch", "gfx90a", "--sampler",
                    "random", "--budget", "3", "--db", db, "--storage", storage)
    assert code == 0 and "3 compiled" in out
    code, out = run("study", "run", "--arch", "gfx1200", "--db", db, "--storage", storage)
    assert code == 2 and "Unknown arch 'gfx1200'; known archs: gfx1032, gfx1100, gfx90a, gfx942" in out
    code, out = run("study", "run", "--kernel", "gemm", "--db", db, "--storage", storage)
    assert code == 2 and "No table in" in out and "matches kernel gemm" in out


def test_the_cli_starts_without_scikit_learn() -> None:
    # scikit-learn takes about a second to import; only the cost-model commands and samplers need it.
    code = "import sys, flysearch.cli; print('sklearn' in sys.modules, 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]



def test_a_users_evaluator_runs_through_study_run_unchanged(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    from flysearch.evaluators import (
        EvaluatorRequest,
        EvaluatorSetup,
        ReplayEvaluator,
        _registry,
        register_evaluator,
    )
    from flysearch.tables import GroundTruth, read_table_file, space_for_table

    monkeypatch.setattr(_registry, "_ENTRIES", dict(_registry._ENTRIES))  # registered for this test only

    @register_evaluator("h200-replay", live=False)
    def _h200(r: EvaluatorRequest) -> EvaluatorSetup:
        assert r.shape is not None
        name = f"triton_gemm__H200__{r.shape.M}x{r.shape.N}x{r.shape.K}.table.json.gz"
        meta, rows = read_table_file(REPO / "lab" / "benchmarks" / "data" / "h200" / name)
        table = GroundTruth(meta, {row.key: row for row in rows})
        return EvaluatorSetup(space_for_table(table), evaluator=ReplayEvaluator(table), shape=r.shape)

    storage = ("--storage", f"sqlite:///{tmp_path / 'studies.db'}")
    code, out = run("study", "run", "--evaluator", "h200-replay", "--shape", "1x6144x4096", "--sampler",
                    "random", "--budget", "3", *storage)
    assert code == 0 and "1x6144x4096:random:seed0" in out and "3 compiled" in out, out
    code, out = run("study", "run", "--evaluator", "h200-replay", *storage)
    assert code == 2 and "A h200-replay study needs --shape MxNxK." in out
    code, out = run("study", "run", "--evaluator", "tritn", "--shape", "64x64x64", *storage)
    errors = [line for line in out.splitlines() if line.startswith("Error")]
    names = "replay, triton, flydsl, simulated, h200-replay"
    assert code == 2 and errors == [f"Error: Unknown evaluator 'tritn'; choose one of: {names}."], out
