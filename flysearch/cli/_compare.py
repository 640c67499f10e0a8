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

import contextlib
import dataclasses
import os
import re
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import click

from flysearch.cli._errors import user_errors

__all__ = ["PROGRESS_INTERVAL_S", "PlainProgress", "compare"]

# Seconds between two progress lines when stderr is not a terminal.
PROGRESS_INTERVAL_S = 5.0

Progress = Callable[[int, int, str], None]


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
@user_errors
def compare(study_file: str, out: str | None, seeds: str | None, budget: int | None, samplers: str | None,
            tables: str | None, workers: int | None, report_only: bool, no_plots: bool) -> None:
    """Run seeds x samplers x tables of an experiment file through the replay evaluator.

    Results go to DIR/results.db (a rerun skips finished runs), then summary.md, summary.csv and
    PNG/SVG figures to DIR (--out). Ctrl-C or SIGTERM stops the command and its workers (exit code
    130 or 143); the runs finished by then are kept, and the same command resumes.

    Examples: a quick look at a committed file; regenerating its committed results.

    \b
        flysearch compare studies/compare_hub_gp.toml --seeds 0 --budget 50 --samplers random
        flysearch compare studies/compare_hub_gp.toml --out benchmarks/results/compare/compare_hub_gp
    """
    from flysearch.compare import (
        RESULTS_DB,
        check_output_folder,
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
    with _stop_on_signals():
        try:
            if exp.kind == "key_mistake":
                paths = key_mistake(exp, plots=not no_plots, command=command)
            else:
                if not report_only:
                    _run(exp, workers, counts)
                paths = report_experiment(exp, plots=not no_plots, command=command)
        except _Stopped as stop:
            click.echo(_stopped_line(exp.name, stop.signum, counts, out_dir / RESULTS_DB), err=True)
            sys.exit(128 + stop.signum)
    for path in paths:
        click.echo(str(path))


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
    with _progress_display(exp.name, console) as show:

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


@contextlib.contextmanager
def _progress_display(name: str, console: Any) -> Iterator[Progress]:
    """A rich bar when stderr is a terminal; else :class:`PlainProgress` lines, with a heartbeat
    thread so that a log hears from a long run every :data:`PROGRESS_INTERVAL_S`."""
    if _is_terminal(sys.stderr):
        from rich.progress import BarColumn, MofNCompleteColumn, TextColumn, TimeElapsedColumn
        from rich.progress import Progress as Bar

        columns = (TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("runs"), TimeElapsedColumn())
        with Bar(*columns, console=console, transient=True) as bar:
            task = bar.add_task(name, total=None)
            yield lambda done, total, _run_id: bar.update(task, completed=done, total=total)
        return
    plain = PlainProgress(name)
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(plain, stop), name="compare-progress", daemon=True)
    beat.start()
    try:
        yield plain
    finally:
        stop.set()
        beat.join()
        plain.finish()


def _is_terminal(stream: Any) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _heartbeat(progress: PlainProgress, stop: threading.Event) -> None:
    while not stop.wait(1.0):
        progress.tick()


class PlainProgress:
    """Progress as plain lines, ``name: 12/240 runs, 35 s`` (elapsed since it was made), for a log.

    The first state is written at once; after that at most one line per *interval_s*, when a run
    is stored or when :meth:`tick` finds the log silent that long (a long run); :meth:`finish`
    writes the last state. Calls may come from two threads (the runs' and a heartbeat's).
    """

    def __init__(self, name: str, *, interval_s: float = PROGRESS_INTERVAL_S,
                 clock: Callable[[], float] = time.monotonic,
                 echo: Callable[[str], None] | None = None) -> None:
        self.name, self.interval_s, self._clock = name, interval_s, clock
        self._echo = echo or (lambda line: click.echo(line, err=True))
        self._start = clock()
        self._state: tuple[int, int] | None = None
        self._written_at: float | None = None
        self._written = ""
        self._lock = threading.Lock()

    def __call__(self, done: int, total: int, run_id: str = "") -> None:
        with self._lock:
            self._state = (done, total)
            self._write_if_due()

    def tick(self) -> None:
        with self._lock:
            self._write_if_due()

    def finish(self) -> None:
        with self._lock:
            line = self._line()
            if line and line != self._written:
                self._write(line)

    def _write_if_due(self) -> None:
        if self._state is None:
            return
        if self._written_at is None or self._clock() - self._written_at >= self.interval_s:
            self._write(self._line())

    def _line(self) -> str:
        if self._state is None:
            return ""
        done, total = self._state
        return f"{self.name}: {done}/{total} runs, {self._clock() - self._start:.0f} s"

    def _write(self, line: str) -> None:
        self._written_at, self._written = self._clock(), line
        self._echo(line)


# -- stopping -------------------------------------------------------------------------------------


class _Stopped(BaseException):
    """SIGINT or SIGTERM, raised in the main thread: unwinds the command (a ``BaseException``, so
    that no ``except Exception`` on the way swallows it), which ends the worker pool on its way out
    (:func:`flysearch.compare._run._stop_pool`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[None]:
    """Turn the first SIGINT or SIGTERM into :class:`_Stopped`; a second one while the first
    unwinds ends the command at once (:func:`_exit_now`). Only the main thread can take signals:
    elsewhere (a command called from a thread) nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def handler(signum: int, _frame: object) -> None:
        if received:
            _exit_now(signum)
        received.append(signum)
        raise _Stopped(signum)

    previous = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, old in previous.items():
            signal.signal(s, old)


def _exit_now(signum: int) -> None:
    """Kill this process's worker processes and exit without unwinding. ``results.db`` stays
    consistent: each run is stored in one SQLite transaction, which a kill cannot leave half done."""
    import multiprocessing

    for child in multiprocessing.active_children():
        child.kill()
    sys.stderr.write(f"flysearch compare: {signal.Signals(signum).name} again: stopped at once\n")
    sys.stderr.flush()
    os._exit(128 + signum)


def _stopped_line(name: str, signum: int, counts: dict[str, int], results_db: Path) -> str:
    """The one line a stopped command ends with: what is stored and how to go on."""
    why = f"{name}: stopped by {signal.Signals(signum).name}"
    if "total" not in counts:
        return f"{why} before any run was stored."
    return (f"{why}; {counts['done']} of {counts['total']} runs are stored in {results_db}; the same "
            "command resumes from there.")
