"""lab/freeze/check.py on small git repositories built here: a freeze committed before its test tables
holds; a table committed first, a wrong tree hash, a rewritten record or an unknown commit fail."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CHECK = Path(__file__).resolve().parents[1] / "freeze" / "check.py"
ENV = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@t"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True,
                          env=ENV).stdout.strip()


def commit(repo: Path, files: dict[str, str], message: str) -> str:
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    git(repo, "add", *files)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def record(method: str, tree: str, tests: str = "data/test/*.table") -> str:
    return f'[freeze]\ncommit = "{method}"\ntree = "{tree}"\ntests = ["{tests}"]\n'


def run(repo: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(CHECK), str(repo / "freeze.toml")], capture_output=True,
                          text=True, check=False)


@pytest.fixture
def repo(tmp_path: Path) -> tuple[Path, str, str]:
    """A repository with a method commit; its hash and tree."""
    git(tmp_path, "init", "-q")
    method = commit(tmp_path, {"method.py": "x = 1\n"}, "method")
    return tmp_path, method, git(tmp_path, "rev-parse", "HEAD^{tree}")


def test_a_freeze_before_its_tables_holds_and_a_renamed_table_keeps_its_first_commit(repo):
    path, method, tree = repo
    commit(path, {"freeze.toml": record(method, tree)}, "freeze")
    assert run(path).returncode == 0  # no table yet: pending
    assert "pending" in run(path).stdout
    commit(path, {"old/a.table": "1\n"}, "race")
    (path / "data" / "test").mkdir(parents=True)
    git(path, "mv", "old/a.table", "data/test/a.table")  # the table moves; its first commit stays the race
    git(path, "commit", "-q", "-m", "move")
    done = run(path)
    assert done.returncode == 0, done.stdout
    assert "data/test/a.table was first committed" in done.stdout


def test_a_table_committed_before_the_freeze_fails(repo):
    path, method, tree = repo
    commit(path, {"data/test/a.table": "1\n"}, "race")
    commit(path, {"freeze.toml": record(method, tree)}, "freeze")
    done = run(path)
    assert done.returncode == 1
    assert "FAILED: data/test/a.table was first committed" in done.stdout


def test_a_wrong_tree_an_unknown_commit_and_a_rewritten_record_fail(repo):
    path, method, tree = repo
    commit(path, {"freeze.toml": record(method, "0" * 40)}, "freeze")
    assert "FAILED: its tree is" in run(path).stdout
    commit(path, {"freeze.toml": record(method, tree)}, "the record rewritten to pass")
    done = run(path)
    assert done.returncode == 1 and "changed after its first commit" in done.stdout
    (path / "freeze.toml").write_text(record("1" * 40, tree))
    done = run(path)
    assert done.returncode == 1 and "is not in this repository" in done.stdout


def test_an_unreadable_record_is_exit_2(repo):
    path, _method, _tree = repo
    (path / "freeze.toml").write_text("[freeze]\ncommit = 1\n")
    done = run(path)
    assert done.returncode == 2 and "needs commit and tree" in done.stderr
