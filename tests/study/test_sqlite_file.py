"""A new SQLite study storage appears whole or not at all; one an interrupted creation left without
its unique index on study names is mended when it is opened."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap
import time

import optuna
import pytest

from flysearch.errors import FlysearchError
from flysearch.study._sqlite_file import create_whole
from flysearch.study._study import open_storage

_KILLED_BEFORE_THE_INDEX = textwrap.dedent("""
    import os, sys
    import optuna
    import sqlalchemy as sa
    from flysearch.study._study import open_storage

    @sa.event.listens_for(sa.engine.Engine, "before_cursor_execute")
    def _die(conn, cursor, statement, *args):
        if statement.startswith("CREATE UNIQUE INDEX ix_studies_study_name"):
            os._exit(9)  # as if killed between Optuna's CREATE TABLE studies and its index

    if sys.argv[2] == "flysearch":
        open_storage(sys.argv[1])
    else:
        optuna.storages.RDBStorage(sys.argv[1])  # as an older flysearch created a storage
""")

_OPEN_AND_CREATE = textwrap.dedent("""
    import sys
    import optuna
    from flysearch.study._study import open_storage

    optuna.create_study(storage=open_storage(sys.argv[1]), study_name="s", load_if_exists=True)
""")


def _x(trial: optuna.Trial) -> float:
    return trial.suggest_float("x", 0, 1)


def _rows(path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _kill_while_creating(url: str, by: str) -> None:
    killed = subprocess.run([sys.executable, "-c", _KILLED_BEFORE_THE_INDEX, url, by], check=False)
    assert killed.returncode == 9


def _half_made(path) -> None:
    """A storage as a creation killed between ``CREATE TABLE studies`` and its index leaves it."""
    _kill_while_creating(f"sqlite:///{path}", "optuna")
    assert _rows(path, "SELECT name FROM sqlite_master") == [("studies",)]


def test_a_storage_killed_while_it_is_created_is_not_left_half_made(tmp_path):
    path = tmp_path / "study.db"
    url = f"sqlite:///{path}"
    _kill_while_creating(url, "flysearch")
    assert not path.exists()
    for _ in range(3):  # a half-made file took the study twice at the second open, then failed
        study = optuna.create_study(storage=open_storage(url), study_name="s", load_if_exists=True)
        study.optimize(_x, n_trials=1)
    assert _rows(path, "SELECT study_name FROM studies") == [("s",)]
    assert len(optuna.load_study(study_name="s", storage=url).trials) == 3


def test_a_half_made_storage_is_mended_when_it_is_next_opened(tmp_path):
    path = tmp_path / "study.db"
    url = f"sqlite:///{path}"
    _half_made(path)
    for _ in range(3):
        optuna.create_study(storage=open_storage(url), study_name="s", load_if_exists=True)
    assert _rows(path, "SELECT study_name FROM studies") == [("s",)]


def test_a_half_made_storage_is_mended_and_keeps_its_trials(tmp_path):
    path = tmp_path / "study.db"
    url = f"sqlite:///{path}"
    _half_made(path)
    optuna.create_study(storage=url, study_name="s").optimize(_x, n_trials=2)
    with pytest.raises(optuna.exceptions.StorageInternalError):  # what an older flysearch met
        optuna.create_study(storage=url, study_name="s", load_if_exists=True)
    assert len(_rows(path, "SELECT study_id FROM studies WHERE study_name = 's'")) == 2

    study = optuna.create_study(storage=open_storage(url), study_name="s", load_if_exists=True)
    assert len(study.trials) == 2
    assert _rows(path, "SELECT study_name FROM studies") == [("s",)]
    assert _rows(path, "SELECT name FROM sqlite_master WHERE name = 'ix_studies_study_name'")
    with pytest.raises(optuna.exceptions.DuplicatedStudyError):  # the index holds again
        optuna.create_study(storage=url, study_name="s")


def test_two_half_made_studies_with_trials_are_refused_in_one_line(tmp_path):
    path = tmp_path / "study.db"
    url = f"sqlite:///{path}"
    _half_made(path)
    optuna.create_study(storage=url, study_name="s").optimize(_x, n_trials=1)
    conn = sqlite3.connect(path)
    second = conn.execute("INSERT INTO studies (study_name) VALUES ('s')").lastrowid
    conn.execute("INSERT INTO trials (number, study_id, state) VALUES (0, ?, 'COMPLETE')", (second,))
    conn.commit()
    conn.close()
    with pytest.raises(FlysearchError, match="holds two studies named 's'") as raised:
        open_storage(url)
    assert "\n" not in str(raised.value)
    assert len(_rows(path, "SELECT study_id FROM studies")) == 2  # nothing of it was changed


def test_processes_that_create_one_new_storage_at_once_share_it(tmp_path):
    url = f"sqlite:///{tmp_path / 'study.db'}"
    procs = [subprocess.Popen([sys.executable, "-c", _OPEN_AND_CREATE, url], stderr=subprocess.PIPE)
             for _ in range(4)]
    errors = [p.communicate(timeout=120)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0] * 4, errors
    assert _rows(tmp_path / "study.db", "SELECT study_name FROM studies") == [("s",)]
    assert list(tmp_path.glob("*.new*")) == []  # the losers' own builds are gone


def test_a_failed_build_leaves_nothing(tmp_path):
    path = tmp_path / "f.db"

    def build(tmp: str) -> None:
        open(tmp, "w").close()
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        create_whole(str(path), build)
    assert list(tmp_path.iterdir()) == []


def test_builds_that_killed_processes_left_are_removed_once_old(tmp_path):
    path = tmp_path / "study.db"
    old, fresh = tmp_path / "study.db.123.new", tmp_path / "study.db.456.new"
    for build in (old, fresh, tmp_path / "study.db.123.new-journal"):
        build.write_bytes(b"")
    hour_ago = time.time() - 3600
    os.utime(old, (hour_ago, hour_ago))
    open_storage(f"sqlite:///{path}")
    assert sorted(p.name for p in tmp_path.glob("study.db.*")) == ["study.db.456.new"]  # may be building
