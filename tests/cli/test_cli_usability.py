"""What a user reads and types at the command line: the help's examples work, the table names that
``tables list`` prints can be copied on a narrow terminal, and an unwritable ``--db`` is named as such."""

from __future__ import annotations

import shlex
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from flysearch.cli import main
from flysearch.study import load_study_file
from flysearch.tables import TableStore, read_table_file
from tests.conftest import REPO

QUICKSTART = REPO / "studies" / "quickstart.toml"
H200 = REPO / "lab" / "benchmarks" / "data" / "h200"
TABLE_FILES = [H200 / f"triton_gemm__H200__{s}.table.json.gz" for s in ("256x1536x7168", "1x6144x4096")]


def run(*args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    result = CliRunner(env=env).invoke(main, list(args))
    return result.exit_code, result.output


def one_error(out: str) -> str:
    """The one ``Error:`` line of *out* (and no traceback)."""
    errors = [line for line in out.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and "Traceback" not in out, out
    return errors[0]


def test_study_show_example_names_the_study_the_quickstart_creates() -> None:
    with QUICKSTART.open("rb") as fh:
        name = tomllib.load(fh)["study"]["name"]
    assert load_study_file(QUICKSTART).study_name == name  # the name `study run` gives the study
    code, out = run("study", "show", "--help")
    examples = [shlex.split(line) for line in out.splitlines()
                if line.strip().startswith("flysearch study show")]
    assert code == 0 and examples
    assert [words[3] for words in examples] == [name]


def test_race_run_help_names_every_triton_family_it_races() -> None:
    from flysearch.kernels import triton_families

    code, out = run("race", "run", "--help")
    text = " ".join(out.split())  # the help's lines are wrapped
    assert code == 0 and all(name in text for name in triton_families()), out


@pytest.fixture()
def two_tables(tmp_path: Path) -> tuple[str, list[str]]:
    """A table database holding two committed H200 tables, and their names."""
    path = str(tmp_path / "tables.db")
    store = TableStore(path)
    names = []
    for file in TABLE_FILES:
        meta, rows = read_table_file(file)
        store.write(meta, rows)
        names.append(meta.name)
    store.close()
    return path, names


@pytest.mark.parametrize("columns", [20, 40, 60, 100])
def test_tables_list_prints_whole_names_on_a_narrow_terminal(two_tables: tuple[str, list[str]],
                                                             columns: int) -> None:
    db, names = two_tables
    code, out = run("tables", "list", "--db", db, env={"COLUMNS": str(columns)})
    assert code == 0, out
    for name in names:
        assert name in out, out  # not cut to "trito…", nor folded over two lines
    # Within the terminal; narrower than a name (20), the names alone, one a line.
    assert all(len(line) <= columns or line in names for line in out.splitlines()), out


def test_tables_list_shows_every_column_when_the_terminal_is_wide(two_tables: tuple[str, list[str]]) -> None:
    db, _names = two_tables
    code, out = run("tables", "list", "--db", db, env={"COLUMNS": "200"})
    assert code == 0, out
    header = out.splitlines()[1]
    for column in ("table", "kernel", "arch", "device", "problem", "regime", "rows", "ok", "best ms", "date"):
        assert f" {column} " in header, out
    assert "left out" not in out


def test_the_output_is_laid_out_for_the_columns_set_when_it_prints(monkeypatch: pytest.MonkeyPatch) -> None:
    """Not those of when the console was made (at import, perhaps under another command's COLUMNS)."""
    import io

    from flysearch.cli._console import UNWRAPPED, OutputConsole

    monkeypatch.setenv("COLUMNS", "20")
    console = OutputConsole(file=io.StringIO())
    monkeypatch.setenv("COLUMNS", "200")
    assert console.size.width == 200
    monkeypatch.delenv("COLUMNS")
    assert console.size.width == UNWRAPPED


@pytest.mark.parametrize("columns", [30, 60])
def test_study_list_prints_whole_names_on_a_narrow_terminal(tmp_path: Path, columns: int) -> None:
    import optuna

    url = f"sqlite:///{tmp_path / 'studies.db'}"
    names = ["triton_gemm/H200/256x1536x7168:tpe-unseen:seed12", "convolution_milo/A100:gp:seed1"]
    for name in names:
        optuna.create_study(study_name=name, storage=url).add_trial(
            optuna.trial.create_trial(params={}, distributions={}, value=0.25))
    code, out = run("study", "list", "--storage", url, env={"COLUMNS": str(columns)})
    assert code == 0, out
    for name in names:
        assert name in out, out


@pytest.mark.parametrize("where", ["under a file", "under a missing folder under a file", "a folder",
                                   "a read-only place"])
def test_an_unwritable_db_is_named_as_one(tmp_path: Path, where: str) -> None:
    a_file = tmp_path / "a_file"
    a_file.write_text("keep\n")
    (tmp_path / "a_folder").mkdir()
    target = {
        "under a file": a_file / "t.db",
        "under a missing folder under a file": a_file / "missing" / "t.db",
        "a folder": tmp_path / "a_folder",
        "a read-only place": Path("/proc/flysearch-test.db"),  # procfs: even root cannot create there
    }[where]
    if where == "a read-only place":
        try:
            target.touch()
        except OSError:
            pass
        else:
            target.unlink()
            pytest.skip(f"{target} can be created here")
    code, out = run("tables", "import", str(TABLE_FILES[0]), "--db", str(target))
    line = one_error(out)
    assert code == 1 and f"{target} cannot be written" in line, out
    assert "SQLite file" not in line, out
    assert a_file.read_text() == "keep\n" and not list((tmp_path / "a_folder").iterdir())


def test_a_read_only_database_is_named_as_one_not_as_damaged(tmp_path: Path) -> None:
    """SQLite opens a file the user may not write read-only and fails at the first write (root,
    who runs these tests, may write anyway: the failure is raised here as SQLite raises it)."""
    import sqlite3

    import click

    from flysearch.cli._errors import user_errors

    @click.command()
    @click.option("--db")
    @user_errors
    def write(db: str) -> None:
        raise sqlite3.OperationalError("attempt to write a readonly database")

    result = CliRunner().invoke(write, ["--db", str(tmp_path / "t.db")])
    line = one_error(result.output)
    assert result.exit_code == 1 and f"{tmp_path / 't.db'} cannot be written: attempt to write" in line
    assert "SQLite file" not in line


def test_a_stop_passing_through_sqlalchemy_s_pool_is_not_logged_but_its_errors_are(capfd) -> None:  # type: ignore[no-untyped-def]
    # SQLAlchemy logs an exception raised while it resets a pooled connection, then re-raises it;
    # a signal landing there is the stop itself, and its traceback must not reach stderr.
    import logging

    from flysearch.cli._progress import Stopped, stop_on_signals

    pool_log = logging.getLogger("sqlalchemy.pool.impl.QueuePool")
    with stop_on_signals("test"):
        for error in (Stopped(15), RuntimeError("disk I/O error")):
            try:
                raise error
            except BaseException:
                pool_log.error("Exception during reset or similar", exc_info=True)
    err = capfd.readouterr().err
    assert "disk I/O error" in err and "Traceback" in err
    assert "Stopped" not in err and err.count("Exception during reset") == 1


def test_a_study_shows_as_json_and_piped_output_keeps_its_config_key_whole(
        two_tables: tuple[str, list[str]], tmp_path: Path) -> None:
    """``study show`` and ``study list`` print JSON on request; printed to a pipe (no terminal, no
    ``COLUMNS``), a line longer than 80 columns is not broken, so the best config's key, which a
    script reads, stays on one line."""
    import json
    import os
    import subprocess
    import sys

    db, names = two_tables
    url = f"sqlite:///{tmp_path / 'studies.db'}"
    code, out = run("study", "run", "--table", names[0], "--db", db, "--storage", url, "--sampler", "random",
                    "--budget", "3", "--name", "piped")
    assert code == 0, out
    code, out = run("study", "show", "piped", "--storage", url, "--db", db, "--json")
    shown = json.loads(out)
    assert code == 0 and shown["compiles"] == 3 and shown["settings"]["table"] == names[0]
    assert shown["settings"]["searched"]["space"] == "triton_gemm_splitk" and shown["regret"] >= 0.0
    assert shown["best_ms"] == pytest.approx(shown["table_optimum_ms"] * (1 + shown["regret"]))
    code, out = run("study", "list", "--storage", url, "--json")
    assert code == 0 and [json.loads(line) for line in out.splitlines()] == [
        {"study": "piped", "trials": shown["trials"], "best_value": shown["best_ms"]}]
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    piped = subprocess.run([sys.executable, "-m", "flysearch", "study", "show", "piped", "--storage", url,
                            "--db", db], capture_output=True, text=True, env=env, check=True).stdout
    best = next(line for line in piped.splitlines() if line.startswith("  best "))
    assert len(best) > 80 and best.endswith(f": {shown['best_key']}"), piped


def test_study_run_stores_the_study_where_its_file_says(two_tables: tuple[str, list[str]], tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A study file's ``storage`` (relative to the file) is where ``study run`` stores the study,
    from any working directory, and where the same command resumes it."""
    import optuna

    db, names = two_tables
    folder, elsewhere = tmp_path / "studies", tmp_path / "elsewhere"
    folder.mkdir()
    elsewhere.mkdir()
    study_file = folder / "s.toml"
    study_file.write_text(f'[study]\nname = "filed"\ntable = "{names[0]}"\ndb = "{db}"\nsampler = "random"\n'
                          'budget = 3\nstorage = "sqlite:///kept.db"\n')
    monkeypatch.chdir(elsewhere)
    for _ in range(2):
        code, out = run("study", "run", str(study_file))
        assert code == 0, out
    assert "resumed a finished study" in out
    study = optuna.load_study(study_name="filed", storage=f"sqlite:///{folder / 'kept.db'}")
    assert study.user_attrs["flysearch"]["budget"] == 3 and list(elsewhere.iterdir()) == []
