"""Write a report computed from committed ``flysearch compare`` summaries (used by
``anchor_seeds.py`` and ``variant_rule.py``): its provenance header, its text, to ``--out`` and
stdout."""

from __future__ import annotations

import datetime as dt
import platform
import shlex
import sys
from importlib.metadata import version
from pathlib import Path

from flysearch.compare import code_commit

__all__ = ["summary_names", "write_report"]


def summary_names(root: Path, paths: list[Path]) -> str:
    """The summaries a report reads, as code spans, relative to *root* where they lie under it."""
    where = [p.resolve() for p in paths]
    return ", ".join(f"`{w.relative_to(root) if w.is_relative_to(root) else w}`" for w in where)


def write_report(root: Path, title: str, intro: str, lines: list[str], out: Path | None) -> None:
    """Print *title*, the provenance (command, commit, hardware, versions, date), *intro* and
    *lines* as one markdown report, and write it to *out* when given."""
    text = "\n".join([
        f"# {title}", "",
        f"- command: `{shlex.join(['python', *sys.argv])}`",
        f"- commit: {code_commit(root)}",
        f"- hardware: {platform.machine()} CPU (reads committed summaries; the runs' own hardware is in "
        "their summary.md)",
        f"- versions: Python {platform.python_version()}, scipy {version('scipy')}",
        f"- date: {dt.date.today().isoformat()}", "",
        intro, "", *lines, ""])
    if out is not None:
        out.write_text(text)
    print(text)
