"""Read a committed results file of benchmarks/ as git's HEAD holds it, for tests that check it."""

from __future__ import annotations

import subprocess
from pathlib import Path


def committed_file(path: Path, copy: Path) -> Path:
    """*copy*, holding *path*'s bytes as committed (git's ``HEAD``), or *path* itself when git
    cannot tell (no git, no repository, a file git does not track).

    A test that checks committed results reads them so: a command that rewrote the working copy
    (a comparison run told to write into the committed folder) cannot fail it, and nothing the
    test does writes the committed file."""
    try:
        shown = subprocess.run(["git", "-C", str(path.parent), "show", f"HEAD:./{path.name}"],
                               capture_output=True, check=False, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return path
    if shown.returncode != 0:
        return path
    copy.write_bytes(shown.stdout)
    return copy
