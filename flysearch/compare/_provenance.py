"""Which code and which machine wrote a result file: the git commit of the checkout that ran it,
and the machine it ran on.

A result file that names its commit can be traced back to the code that made it; one whose tree
differed from that commit must say so, and a copy of the code without a repository of its own (a
snapshot unpacked inside another checkout) must name none rather than the outer checkout's.
"""

from __future__ import annotations

import os
import platform
import subprocess
from collections.abc import Sequence
from pathlib import Path

__all__ = ["code_commit", "host_description"]


def code_commit(root: Path, outputs: Sequence[str | Path] = ()) -> str:
    """The commit of the checkout at *root* that ran this, ``"<commit>+changes"`` when its files
    differ from that commit (a copy whose git HEAD is older than its tree), files under an *outputs*
    folder aside (where results are written: the result being written is not code); ``""`` without a
    .git of its own (a snapshot must not name an outer checkout's commit).

    Example:
        ``code_commit(repo, outputs=["results"])`` names HEAD, with ``+changes`` only when something
        outside ``results/`` differs from it.
    """
    if not (root / ".git").exists():
        return ""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=root).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD")
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], capture_output=True,
                            text=True, cwd=root).stdout  # not stripped: each line starts "XY path"
    skip = tuple(r for r in (_relative(root, Path(o)) for o in outputs) if r)
    changed = [line for line in status.splitlines() if line and not line[3:].startswith(skip)]
    return f"{commit}+changes" if commit and changed else commit


def _relative(root: Path, folder: Path) -> str:
    """*folder* as git status names paths under *root* (relative, with a trailing slash); ``""`` for
    a folder outside *root*, which no status line names."""
    if folder.is_absolute():
        try:
            folder = folder.resolve().relative_to(root.resolve())
        except ValueError:
            return ""
    return folder.as_posix().rstrip("/") + "/"


def host_description() -> str:
    """This machine as a provenance line names it: architecture, cores and, where the system says,
    the CPU model (``"x86_64, 2 cores, AMD EPYC 7B13"``)."""
    cpu = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                    if line.startswith("model name")), "")
    cpu = cpu or platform.processor()
    return f"{platform.machine()}, {os.cpu_count()} cores" + (f", {cpu}" if cpu else "")
