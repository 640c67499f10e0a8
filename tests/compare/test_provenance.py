"""The commit a result file names (flysearch.compare.code_commit): none without a .git of its own,
"+changes" when the tree is not that commit, files under the folders results are written to aside."""

from __future__ import annotations

import subprocess
from pathlib import Path

from flysearch.compare import code_commit


def test_the_commit_it_names_says_when_the_tree_is_not_that_commit(tmp_path: Path) -> None:
    assert code_commit(tmp_path) == ""  # no .git of its own: no commit named

    def git(*args: str) -> None:
        subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path,
                       check=True, capture_output=True)
    git("init", "-q")
    (tmp_path / "a.txt").write_text("a")
    git("add", "a.txt")
    git("commit", "-qm", "a")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tmp_path, capture_output=True,
                            text=True).stdout.strip()
    assert code_commit(tmp_path) == commit
    (tmp_path / "lab/benchmarks/results/new").mkdir(parents=True)
    (tmp_path / "lab/benchmarks/results/new/summary.md").write_text("x")  # a result being written
    outputs = ["lab/benchmarks/results"]
    assert code_commit(tmp_path, outputs=outputs) == commit
    assert code_commit(tmp_path, outputs=[tmp_path / "lab/benchmarks/results"]) == commit  # absolute
    assert code_commit(tmp_path) == f"{commit}+changes"  # no folder named: the new file is a change
    git("add", "lab")
    git("commit", "-qm", "b")
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=tmp_path, capture_output=True,
                            text=True).stdout.strip()
    (tmp_path / "lab/benchmarks/results/new/summary.md").write_text("y")  # a result rewritten
    assert code_commit(tmp_path, outputs=outputs) == commit
    (tmp_path / "new.toml").write_text("x")  # a file the commit does not have (a stale HEAD's copy)
    assert code_commit(tmp_path, outputs=outputs) == f"{commit}+changes"
