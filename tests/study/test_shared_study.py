"""Several processes on one replay study (flysearch.study): they take turns, compile nothing
twice, spend one budget between them, and a killed process leaves nothing half-written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from flysearch.study import trial_records

TABLE = "convolution_milo/MI250X"


@pytest.fixture
def table_db(tmp_path: Path, conv_mi250x_path: Path) -> Path:
    db = tmp_path / "tables.db"
    subprocess.run([sys.executable, "-m", "flysearch", "tables", "import", str(conv_mi250x_path),
                    "--db", str(db)], check=True, capture_output=True)
    return db


def _study_run(db: Path, storage: str, budget: int, sampler: str = "random", seed: int = 0) -> list[str]:
    return [sys.executable, "-m", "flysearch", "study", "run", "--table", TABLE, "--db", str(db),
            "--storage", storage, "--sampler", sampler, "--budget", str(budget), "--seed", str(seed),
            "--name", "shared"]


def _compiled(storage: str) -> list[str]:
    study = optuna.load_study(study_name="shared", storage=storage)
    return [r.key for _t, r in trial_records(study) if r.compile_index is not None]


def _three_processes_share_one_budget(db: Path, storage: str) -> None:
    # One study, so one seed: the three samplers propose the same configs, the hardest case.
    procs = [subprocess.Popen(_study_run(db, storage, 120), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=600) for p in procs]
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
        assert "Traceback" not in err and "Error" not in err, err
    keys = _compiled(storage)
    assert len(keys) == len(set(keys)) == 120
    study = optuna.load_study(study_name="shared", storage=storage)
    trials = study.get_trials(deepcopy=False)
    assert [t.number for t in trials] == list(range(len(trials)))
    assert all(t.state.is_finished() for t in trials)
    indices = sorted(r.compile_index for _t, r in trial_records(study) if r.compile_index is not None)
    assert indices == list(range(1, 121))


@pytest.mark.slow
def test_three_processes_on_one_sqlite_study_compile_each_config_once(table_db: Path, tmp_path: Path) -> None:
    _three_processes_share_one_budget(table_db, f"sqlite:///{tmp_path}/studies.db")


@pytest.mark.slow
def test_three_processes_on_one_postgresql_study_compile_each_config_once(table_db: Path,
                                                                         postgres_url: str) -> None:
    _three_processes_share_one_budget(table_db, postgres_url)


def test_an_in_memory_sqlite_url_is_one_process_study(conv_mi250x) -> None:
    """``sqlite:///:memory:`` is one database per connection: it is used directly, not shared."""
    from flysearch.evaluators import ReplayEvaluator
    from flysearch.study import StudySpec, run_study
    from flysearch.tables import space_for_table

    space = space_for_table(conv_mi250x)
    settings = StudySpec(sampler="random", budget=20, seed=0, space=space.name, table=conv_mi250x.name)
    summary = run_study("m", space, ReplayEvaluator(conv_mi250x), settings, storage="sqlite:///:memory:")
    assert summary.compiles == 20 and summary.new_trials == summary.trials


def test_a_dropped_server_connection_is_told_apart_from_a_damaged_sqlite_file() -> None:
    """A server that drops a connection inside a transaction surfaces, at the next read, as
    SQLAlchemy's "can't reconnect until the transaction is rolled back": that is a lost connection
    (rerun to resume), whereas SQLite's own errors and other rollback errors are not."""
    import sqlite3

    import sqlalchemy as sa

    from flysearch.study import lost_connection

    pending = sa.exc.PendingRollbackError("Can't reconnect until invalid transaction is rolled back.",
                                          code="8s2b")
    wrapped = RuntimeError("storage failed")
    wrapped.__cause__ = pending
    assert lost_connection(pending) and lost_connection(wrapped)
    flush = sa.exc.PendingRollbackError("This Session's transaction has been rolled back.", code="7s2a")
    assert not lost_connection(flush)
    damaged = sa.exc.OperationalError("SELECT 1", {}, sqlite3.DatabaseError("file is not a database"))
    assert not lost_connection(damaged)
