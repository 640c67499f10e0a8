"""A new SQLite study database copied from a template is the database a study would have created."""

from __future__ import annotations

import sqlite3

import optuna
import pytest

from flysearch.study import _storage_template as storage_template
from flysearch.study._claims import ClaimStore
from flysearch.study._storage_template import open_shared_storage, prepare_storage


def _schema(path) -> list[tuple]:
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT type, name, sql FROM sqlite_master ORDER BY name").fetchall()
        stamp = conn.execute("SELECT version_num FROM alembic_version").fetchall()
        versions = conn.execute("SELECT * FROM version_info").fetchall()
    finally:
        conn.close()
    return [*rows, *stamp, *versions]


@pytest.fixture
def template(monkeypatch):
    monkeypatch.setattr(storage_template, "_template", None)
    return storage_template.make_template()


def test_a_placed_database_is_the_one_a_study_creates_and_holds_a_study(tmp_path, template, monkeypatch):
    fresh, placed = tmp_path / "fresh.db", tmp_path / "placed.db"
    with monkeypatch.context() as m:
        m.setattr(storage_template, "_template", None)
        prepare_storage(f"sqlite:///{fresh}")  # built beside its path, then linked into place
    storage = open_shared_storage(f"sqlite:///{placed}")  # copied into place, then opened
    assert placed.exists() and _schema(placed) == _schema(fresh)
    study = optuna.create_study(storage=storage, study_name="s")
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=3)
    ClaimStore(f"sqlite:///{placed}", "s").close()
    assert len(optuna.load_study(study_name="s", storage=f"sqlite:///{placed}").trials) == 3


def test_only_a_new_sqlite_file_is_placed(tmp_path, template):
    existing = tmp_path / "s.db"
    assert storage_template.place(f"sqlite:///{existing}")
    before = existing.read_bytes()
    assert not storage_template.place(f"sqlite:///{existing}")  # another worker's file is kept
    assert existing.read_bytes() == before
    assert not storage_template.place("postgresql://localhost/db")
    assert not storage_template.place("sqlite:///:memory:")
    assert not storage_template.place(f"sqlite:///{tmp_path}/no/such/dir/s.db")
    assert list(tmp_path.glob("*.new")) == []


def test_without_a_template_nothing_is_placed(tmp_path, monkeypatch):
    monkeypatch.setattr(storage_template, "_template", None)
    assert not storage_template.place(f"sqlite:///{tmp_path}/s.db")
    assert not (tmp_path / "s.db").exists()


def test_only_a_placed_copy_skips_optunas_schema_checks(tmp_path, template, monkeypatch):
    opened = []
    real = optuna.storages.RDBStorage

    def spy(url, *args, **kwargs):
        opened.append(all(kwargs.get(k) for k in ("skip_table_creation", "skip_compatibility_check")))
        return real(url, *args, **kwargs)

    monkeypatch.setattr(optuna.storages, "RDBStorage", spy)
    url = f"sqlite:///{tmp_path / 's.db'}"
    open_shared_storage(url)  # placed: the template's schema is this Optuna's
    open_shared_storage(url)  # exists already: another process may have made it
    assert opened == [True, False]
