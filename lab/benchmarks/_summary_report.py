"""Reports computed from committed ``flysearch compare`` summaries (``anchor_seeds.py``,
``variant_rule.py``, ``coldstart_leads.py``): their rows read, the anchors told apart, and the
report written with its provenance header to ``--out`` and stdout."""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import platform
import shlex
import sys
from importlib.metadata import version
from pathlib import Path

from flysearch.compare import code_commit

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

__all__ = ["is_anchor", "parse_summaries", "require_files", "summary_names", "table_rows", "write_report"]


def require_files(paths: list[Path]) -> None:
    """One clear line and exit 2 for the first of *paths* that is not a file."""
    for path in paths:
        if not path.is_file():
            print(f"{path} does not exist; run flysearch compare first", file=sys.stderr)
            raise SystemExit(2)


def parse_summaries(description: str, summary_help: str, base_help: str,
                    gemm_help: str) -> argparse.Namespace:
    """The command line of a report over one or more runs' ``summary.csv``: the summaries (checked
    with :func:`require_files`), ``--base``, ``--gemm`` (repeatable) and ``--out``."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("summary", type=Path, nargs="+", help=summary_help)
    ap.add_argument("--base", default="auto", help=base_help)
    ap.add_argument("--gemm", action="append", default=[], help=gemm_help)
    ap.add_argument("--out", type=Path, default=None, help="markdown file to write")
    args = ap.parse_args()
    require_files(args.summary)
    return args


def table_rows(*paths: Path) -> dict[str, dict[str, dict[str, str]]]:
    """sampler -> table -> its row of the ``summary.csv`` files *paths* (table-level rows of samplers
    that ran: the analytic random reference has none); a table in two of them is one clear line."""
    out: dict[str, dict[str, dict[str, str]]] = {}
    for path in paths:
        with path.open(newline="") as f:
            for row in csv.DictReader(f):
                if row["level"] == "table" and row.get("runs") != "0":
                    runs = out.setdefault(row["sampler"], {})
                    if row["where"] in runs:
                        raise SystemExit(f"table {row['where']} is in more than one summary")
                    runs[row["where"]] = row
    return out


def is_anchor(sampler: str) -> bool:
    """Whether *sampler* is one of the field's anchors: Kernel Tuner's strategies, Optuna's CMA-ES."""
    return sampler.startswith("kt:") or sampler == "cmaes-margin"


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
        f"- commit: {code_commit(root, outputs=[RESULTS])}",
        f"- hardware: {platform.machine()} CPU (reads committed summaries; the runs' own hardware is in "
        "their summary.md)",
        f"- versions: Python {platform.python_version()}, scipy {version('scipy')}",
        f"- date: {dt.date.today().isoformat()}", "",
        intro, "", *lines, ""])
    if out is not None:
        out.write_text(text)
    print(text)
