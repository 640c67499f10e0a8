"""The lab/benchmarks/ folder for tests: a committed results file as git's HEAD holds it, and a
benchmark script imported as a module."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def benchmark_script(name: str) -> ModuleType:
    """``lab/benchmarks/<name>.py`` imported as a module (the scripts are not a package), with
    ``lab/benchmarks/`` on ``sys.path`` as when Python runs a script there, so that it finds the helper
    modules beside it (``_summary_report``, ``_race_helpers``), and registered in ``sys.modules``."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.append(str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as an import does: a dataclass of the script looks its module up there
    spec.loader.exec_module(module)
    return module


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
