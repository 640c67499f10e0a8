"""Verify a freeze record against the repository's git history (lab/freeze/README.md states the rule).

Run from anywhere in the repository::

    python lab/freeze/check.py lab/freeze/<name>.toml

A freeze record is a TOML file committed before any of its test tables::

    [freeze]
    commit = "<40 hex digits>"   # the frozen method: a commit of this repository
    tree = "<40 hex digits>"     # that commit's tree hash (git rev-parse <commit>^{tree})
    tests = ["lab/benchmarks/data/<folder>/*.table.json.gz"]   # the test tables (paths or patterns)

It checks that the commit exists and its tree hash is the one recorded; that the record's own first
commit has the frozen commit in its history and holds the record as it reads now; and that the
record's first commit precedes (is a proper ancestor of) the commit that first added each test table
now tracked, followed through renames (``git log --follow``). A pattern that matches no tracked file
yet is reported as pending: a freeze is written before its test tables are raced. Exit status 0 when
the record holds, 1 when it does not, 2 for a record that cannot be read.
"""

from __future__ import annotations

import argparse
import fnmatch
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class FreezeError(Exception):
    """A freeze record that cannot be read (not a check that failed)."""


@dataclass
class Report:
    """What a check found: lines that hold, lines that fail, and test patterns with no table yet."""

    held: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed

    def lines(self) -> list[str]:
        return ([f"ok: {s}" for s in self.held] + [f"pending: {s}" for s in self.pending]
                + [f"FAILED: {s}" for s in self.failed])


def git(repo: Path, *args: str, check: bool = True) -> str:
    """The stripped output of ``git -C repo args`` ("" when *check* is false and git fails)."""
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise FreezeError(f"git {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout.strip() if done.returncode == 0 else ""


def first_commit(repo: Path, path: str) -> str:
    """The commit that first added *path*, following renames ("" when no commit holds it)."""
    commits = git(repo, "log", "--follow", "--format=%H", "--", path, check=False).split()
    return commits[-1] if commits else ""


def precedes(repo: Path, earlier: str, later: str) -> bool:
    """Whether *earlier* is a proper ancestor of *later*."""
    if earlier == later:
        return False
    done = subprocess.run(["git", "-C", str(repo), "merge-base", "--is-ancestor", earlier, later],
                          capture_output=True, check=False)
    return done.returncode == 0


def read_record(path: Path) -> tuple[str, str, list[str]]:
    """The frozen commit, its tree hash and the test patterns of the record at *path*."""
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise FreezeError(f"{path}: {exc}") from exc
    return read_record_data(data, str(path))


def read_record_data(data: dict[str, Any], name: str) -> tuple[str, str, list[str]]:
    """The frozen commit, its tree hash and the test patterns of a parsed record (*name* for errors)."""
    record = data.get("freeze", {})
    commit, tree, tests = record.get("commit"), record.get("tree"), record.get("tests")
    if not (isinstance(commit, str) and isinstance(tree, str) and isinstance(tests, list) and tests
            and all(isinstance(t, str) for t in tests)):
        raise FreezeError(f"{name}: [freeze] needs commit and tree (strings) and tests (a non-empty list "
                          "of paths or patterns)")
    return commit, tree, tests


def check(record: Path) -> Report:
    """Check the freeze record at *record* against the history of the repository that holds it."""
    record = record.resolve()
    repo = Path(git(record.parent, "rev-parse", "--show-toplevel"))
    rel = record.relative_to(repo).as_posix()
    commit, tree, tests = read_record(record)
    report = Report()
    found = git(repo, "rev-parse", "--verify", "--quiet", f"{commit}^{{commit}}", check=False)
    if not found:
        report.failed.append(f"the frozen commit {commit} is not in this repository")
        return report
    report.held.append(f"the frozen commit {found} exists")
    actual_tree = git(repo, "rev-parse", f"{found}^{{tree}}")
    if actual_tree == tree:
        report.held.append(f"its tree is {tree}, as recorded")
    else:
        report.failed.append(f"its tree is {actual_tree}, not {tree} as recorded")
    added = first_commit(repo, rel)
    if not added:
        report.failed.append(f"{rel} is not committed: a freeze is a committed record")
        return report
    first = tomllib.loads(git(repo, "show", f"{added}:{rel}"))
    if read_record_data(first, rel) != (commit, tree, tests):
        report.failed.append(f"{rel} was changed after its first commit {added}: a freeze is never rewritten")
    if found == added or precedes(repo, found, added):
        report.held.append(f"{rel} was first committed in {added}, which has the frozen commit in its "
                           "history")
    else:
        report.failed.append(f"{rel} was first committed in {added}, which does not have the frozen commit "
                             "in its history")
    tracked = git(repo, "ls-files").splitlines()
    for pattern in tests:
        paths = [p for p in tracked if fnmatch.fnmatch(p, pattern)]
        if not paths:
            report.pending.append(f"no tracked file matches {pattern} yet")
        for path in paths:
            table_added = first_commit(repo, path)
            if precedes(repo, added, table_added):
                report.held.append(f"{path} was first committed in {table_added}, after the record")
            else:
                report.failed.append(f"{path} was first committed in {table_added}, not after the record's "
                                     f"commit {added}")
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("records", nargs="+", type=Path, help="freeze records (TOML) to check")
    args = parser.parse_args(argv)
    status = 0
    for record in args.records:
        try:
            report = check(record)
        except FreezeError as exc:
            print(f"{record}: {exc}", file=sys.stderr)
            return 2
        print(f"{record}:")
        print("\n".join(f"  {line}" for line in report.lines()))
        status = max(status, 0 if report.ok else 1)
    return status


if __name__ == "__main__":
    sys.exit(main())
