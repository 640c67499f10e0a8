"""A PostgreSQL server restarted in the middle of a replay study: the study rides it out, or stops
with one line saying how to go on, and running it again completes it with each config compiled
once, the budget spent exactly and no trial left RUNNING; also with two processes on the study.

The tests start a server of their own (tests/pgserver.py), since they restart it; they skip, with
the reason, where PostgreSQL is not installed.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import optuna
import pytest

from flysearch.evaluators import ReplayEvaluator
from flysearch.study import StudySpec, run_study, trial_records
from flysearch.tables import GroundTruth, TableStore, read_any_table, space_for_table
from tests.conftest import REPO
from tests.pgserver import PostgresServer

TABLE_FILE = REPO / "lab/benchmarks/data/h100_coldstart8/triton_gemm__H100__128x2048x8192.table.json.gz"
BUDGET = 150


# Under pytest-xdist one worker runs this module, so that its module fixture is set up once.
pytestmark = pytest.mark.xdist_group("study/test_postgres_restart")


@pytest.fixture(scope="module")
def server() -> Iterator[PostgresServer]:
    server = PostgresServer()
    why = server.available
    if why:
        pytest.skip(why)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def tables(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, GroundTruth]:
    """A table database holding the committed table, and the table."""
    meta, rows = read_any_table(TABLE_FILE)
    db = tmp_path_factory.mktemp("tables") / "tables.db"
    store = TableStore(db)
    try:
        store.write(meta, rows)
        return db, store.load(meta.name)
    finally:
        store.close()


def _complete(url: str) -> None:
    """The study in *url* spent its budget exactly, on distinct configs, and left nothing open."""
    study = optuna.load_study(study_name="shared", storage=url)
    trials = study.get_trials(deepcopy=False)
    assert [t.number for t in trials] == list(range(len(trials)))
    assert all(t.state.is_finished() for t in trials), "a trial was left RUNNING"
    compiled = [r for _t, r in trial_records(study) if r.compile_index is not None]
    assert len(compiled) == len({r.key for r in compiled}) == BUDGET  # none compiled twice
    assert sorted(r.compile_index for r in compiled) == list(range(1, BUDGET + 1))


@pytest.mark.parametrize("down", ["restarted", "down for a second"])
def test_a_restart_between_trials_is_ridden_out(server: PostgresServer, tables: tuple[Path, GroundTruth],
                                                down: str) -> None:
    """The connection a study holds between two trials is dead after a restart: the next trial
    opens a fresh one, waiting for the server if it is not back yet, and the study goes on to its
    budget."""
    _db, table = tables
    url = server.create_database(down.replace(" ", "_"))
    space = space_for_table(table)
    settings = StudySpec(sampler="random", budget=BUDGET, seed=0, space=space.name, table=table.name)
    restarted: list[int] = []
    back = threading.Timer(1.0, server.resume)

    def progress(compiles: int, _target: int) -> None:
        if compiles >= BUDGET // 4 and not restarted:
            if down == "restarted":
                server.restart()
            else:
                server.pause()
                back.start()
            restarted.append(compiles)

    try:
        summary = run_study("shared", space, ReplayEvaluator(table), settings, storage=url, progress=progress)
    finally:  # the server is up again for what follows, whatever happened here
        if back.is_alive():
            back.join()
    assert restarted and summary.compiles == BUDGET
    _complete(url)


@pytest.mark.slow
def test_two_processes_on_one_study_while_postgresql_restarts(
        server: PostgresServer, tables: tuple[Path, GroundTruth]) -> None:
    """Two `study run` processes share one study; the server restarts under them (mid-trial, most
    likely). Each finishes or stops with one line saying that the same command resumes; running
    them again completes the study."""
    import sqlalchemy as sa

    db, table = tables
    url = server.create_database("two")
    command = [sys.executable, "-m", "flysearch", "study", "run", "--table", table.name, "--db", str(db),
               "--storage", url, "--sampler", "random", "--budget", str(BUDGET), "--name", "shared"]
    procs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    engine = sa.create_engine(url, pool_pre_ping=True)
    try:
        deadline, trials = time.monotonic() + 300, 0
        while trials < 40 and all(p.poll() is None for p in procs):
            assert time.monotonic() < deadline, "the study never got going"
            try:
                with engine.connect() as conn:
                    trials = conn.exec_driver_sql("SELECT count(*) FROM trials").scalar_one()
            except sa.exc.ProgrammingError:  # no trials table yet
                pass
            time.sleep(0.02)
        server.restart()
        outs = [p.communicate(timeout=600) for p in procs]
    finally:
        engine.dispose()
        for p in procs:
            p.kill()
            p.wait()
    for p, (_out, err) in zip(procs, outs, strict=True):
        assert "Traceback" not in err, err
        if p.returncode != 0:
            assert p.returncode == 1, err
            line = err.strip().splitlines()[-1]
            assert "Lost the connection to" in line and "run the same command again" in line, err
    again = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    for p in again:
        _out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err
    _complete(url)
