"""``flysearch compare STUDYFILE``: run an experiment file and write its summary and figures.

Everything goes to one folder, ``--out`` (default: ``compare-<experiment name>`` in the working
directory), never to the experiment file's own ``output`` folder unless ``--out`` names it: running a
committed file must not rewrite the committed results. Overrides make a quick run of a big file
(``--seeds``, ``--budget``, ``--samplers``, ``--tables``; parsed in :mod:`flysearch.compare`).

Progress is a bar on a terminal and a plain line every few seconds otherwise (a log, CI).
SIGINT (Ctrl-C) and SIGTERM stop the command and its worker processes at once: the runs stored by
then stay in ``results.db``, so the same command resumes; the exit code is 128 + the signal's number
(130, 143). A second signal while the first unwinds ends the command and its workers on the spot.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

import click

from flysearch.cli._errors import user_errors
from flysearch.cli._progress import Stopped, progress_display, stop_on_signals

__all__ = ["compare"]


@click.command()
@click.argument("study_file", type=click.Path(dir_okay=False))
@click.option("--out", default=None, metavar="DIR",
              help="Folder for results.db, the summaries and figures (default: compare-<experiment name> "
                   "in the working directory). A rerun into the same folder skips the finished runs. The "
                   "file's own output folder (committed results) is written only when named here.")
@click.option("--seeds", default=None, metavar="LIST",
              help="Seeds to run instead of the file's, for every sampler: a range 0-4, a list 0,1,2, or "
                   "both (0-2,7); a single number is that one seed.")
@click.option("--budget", type=int, default=None, help="Unique compiles per run instead of the file's.")
@click.option("--samplers", default=None, metavar="LIST",
              help="Comma-separated samplers to run instead of the file's: a sampler label of the file "
                   "(with its settings there) or any sampler flysearch knows (default settings).")
@click.option("--tables", default=None, metavar="LIST",
              help="Comma-separated tables to run: a number is a table's position in the file (from 1); "
                   "any other text picks every table whose label or name contains it. The other tables "
                   "still train costmodel's prior.")
@click.option("--workers", type=int, default=None, help="Worker processes (default: the file's workers).")
@click.option("--report-only", is_flag=True,
              help="Only rewrite the summary and figures from the runs stored in --out (give the same "
                   "overrides as the run).")
@click.option("--no-plots", is_flag=True, help="Write the markdown and CSV summary only.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the summary rows (as summary.csv holds them) and the files written as JSON.")
@user_errors
def compare(study_file: str, out: str | None, seeds: str | None, budget: int | None, samplers: str | None,
            tables: str | None, workers: int | None, report_only: bool, no_plots: bool,
            as_json: bool) -> None:
    """Run seeds x samplers x tables of an experiment file through the replay evaluator.

    Results go to DIR/results.db (a rerun skips finished runs), then summary.md, summary.csv and
    PNG/SVG figures to DIR (--out). Ctrl-C or SIGTERM stops the command and its workers (exit code
    130 or 143); the runs finished by then are kept, and the same command resumes.

    Examples: a quick look at a committed file; regenerating its committed results.

    \b
        flysearch compare studies/compare_hub_dedispersion_A100.toml --seeds 0 --budget 50 --samplers random
        flysearch compare lab/studies/compare_hub_gp.toml --out lab/benchmarks/results/compare/compare_hub_gp
    """
    from flysearch.compare import (
        RESULTS_DB,
        check_output_folder,
        experiment_summary,
        key_mistake,
        load_experiment,
        report_experiment,
    )

    if workers is not None and workers < 1:
        raise click.UsageError(f"--workers must be at least 1, got {workers}.")
    exp = _with_overrides(load_experiment(study_file), seeds=seeds, budget=budget, samplers=samplers,
                          tables=tables)
    out_text = out if out is not None else f"compare-{_slug(exp.name)}"
    out_dir = Path(out_text).absolute()
    check_output_folder(out_dir)
    committed, exp = exp.output, dataclasses.replace(exp, output=str(out_dir))
    command = shlex.join(["flysearch", "compare", study_file, "--out", out_text, *_flags(
        ("--seeds", seeds), ("--budget", budget), ("--samplers", samplers), ("--tables", tables))])
    if report_only and exp.kind != "key_mistake" and not (out_dir / RESULTS_DB).is_file():
        from flysearch.errors import FlysearchError

        raise FlysearchError(
            f"No results database at {out_dir / RESULTS_DB}: nothing has run into {out_text} yet; name the "
            f"folder that holds the runs with --out (this file's own output folder is {committed})."
        )
    counts: dict[str, int] = {}
    with stop_on_signals("compare"):
        try:
            if exp.kind == "key_mistake":
                paths = key_mistake(exp, plots=not no_plots, command=command)
            else:
                if not report_only:
                    _run(exp, workers, counts)
                paths = report_experiment(exp, plots=not no_plots, command=command)
        except Stopped as stop:
            click.echo(_stopped_line(exp.name, stop.signum, counts, out_dir / RESULTS_DB), err=True)
            sys.exit(128 + stop.signum)
    if as_json:
        rows = [] if exp.kind == "key_mistake" else experiment_summary(exp)
        click.echo(json.dumps({"summary": [{k: _json_value(v) for k, v in row.items()} for row in rows],
                               "files": [str(p) for p in paths]}, indent=2))
        return
    for path in paths:
        click.echo(str(path))


def _json_value(value: Any) -> Any:
    """A summary cell as JSON has it: a number that is not finite (an unreached target) is null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


# -- overrides ------------------------------------------------------------------------------------


def _with_overrides(exp: Any, *, seeds: str | None, budget: int | None, samplers: str | None,
                    tables: str | None) -> Any:
    """*exp* with the command line's overrides applied (and validated); ``None`` leaves a setting."""
    from flysearch.compare import parse_seeds, select_samplers, select_tables, table_names
    from flysearch.errors import InputFormatError

    given = [flag for flag, value in (("--seeds", seeds), ("--budget", budget), ("--samplers", samplers))
             if value is not None]
    if exp.kind == "key_mistake" and given:
        raise InputFormatError(
            f"{', '.join(given)}: experiment {exp.name!r} is a key_mistake matrix, which runs no search; "
            "drop them (--tables applies)."
        )
    changes: dict[str, Any] = {}
    if budget is not None:
        if budget < 1:
            raise InputFormatError(f"--budget must be a positive number of compiles, got {budget}.")
        changes["budget"] = budget
    picked = exp.samplers if samplers is None else select_samplers(exp, samplers)
    if seeds is not None:  # every sampler runs them, one that runs fewer seeds in the file too
        changes["seeds"] = parse_seeds(seeds)
        picked = tuple(dataclasses.replace(s, seeds=None) for s in picked)
    changes["samplers"] = picked
    if tables is not None:
        positions = select_tables(tables, table_names(exp))
        if exp.kind == "key_mistake":  # no prior to train: the matrix is over the picked tables
            changes["tables"] = tuple(exp.tables[i] for i in positions)
        else:
            changes["only_tables"] = positions
    exp = dataclasses.replace(exp, **changes)
    exp.validate()
    return exp


def _slug(name: str) -> str:
    """*name* as one folder name."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "experiment"


def _flags(*pairs: tuple[str, object]) -> list[str]:
    """The given options as command-line words, for the summary's provenance."""
    return [word for flag, value in pairs if value is not None for word in (flag, str(value))]


# -- running, with progress -----------------------------------------------------------------------


def _run(exp: Any, workers: int | None, counts: dict[str, int]) -> None:
    """Run (or resume) *exp*, keeping the latest ``done``/``total`` in *counts* for a stop message."""
    from rich.console import Console

    from flysearch.compare import run_experiment

    console = Console(stderr=True, soft_wrap=True)
    with progress_display(exp.name, unit="runs", console=console) as show:

        def progress(done: int, total: int, run_id: str) -> None:
            counts.update(done=done, total=total)
            show(done, total, run_id)

        result = run_experiment(exp, workers=workers, progress=progress)
    for line in result.skipped:
        console.print(f"[yellow]skipped[/] {line}")
    console.print(
        f"{exp.name}: {result.done} runs done in {result.wall_s:.1f} s, {result.skipped_done} already "
        f"stored, of {result.total}; results in {result.results_db}"
    )


def _stopped_line(name: str, signum: int, counts: dict[str, int], results_db: Path) -> str:
    """The one line a stopped command ends with: what is stored and how to go on."""
    why = f"{name}: stopped by {signal.Signals(signum).name}"
    if "total" not in counts:
        return f"{why} before any run was stored."
    return (f"{why}; {counts['done']} of {counts['total']} runs are stored in {results_db}; the same "
            "command resumes from there.")
