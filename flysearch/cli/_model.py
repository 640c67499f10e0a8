"""``flysearch model train | eval | rank``: the cost model from the command line."""

from __future__ import annotations

import contextlib
import glob
import json
import math
import sys
from collections.abc import Iterator
from dataclasses import asdict
from typing import Any

import click
from rich.table import Table

from flysearch.cli._console import OutputConsole
from flysearch.cli._errors import user_errors
from flysearch.cli._options import writable_file
from flysearch.cli._progress import Stopped, progress_display, stop_on_signals
from flysearch.errors import FlysearchError

__all__ = ["model"]

console = OutputConsole()


def _load_tables(db: str, names: tuple[str, ...], files: tuple[str, ...],
                 progress: Any = None) -> list[Any]:
    """The tables named by --table (in *db*) and --file; *progress* hears ``(read, None)``."""
    from flysearch.tables import TableStore, read_any_table

    tables = []
    if names:
        store = TableStore(db, create=False)
        for name in names:
            prefix = name.endswith("*")
            matched = [n for n in store.names() if n == name or (prefix and n.startswith(name[:-1]))]
            if not matched:
                raise FlysearchError(f"No table in {db} matches {name!r}; see 'flysearch tables list'.")
            for n in matched:
                tables.append(store.load(n))
                if progress is not None:
                    progress(len(tables), None)
    scratch = TableStore(":memory:")
    for pattern in files:
        paths = sorted(glob.glob(pattern))
        if not paths and glob.has_magic(pattern):
            raise FlysearchError(f"--file {pattern!r} matches no file.")
        paths = paths or [pattern]
        for path in paths:
            meta, rows = read_any_table(path)
            scratch.write(meta, rows, replace=True)
            tables.append(scratch.load(meta.name))
            if progress is not None:
                progress(len(tables), None)
    if not tables:
        raise FlysearchError("Name tables with --table (in --db) or --file (table files or globs).")
    return tables


def _table_options(func: Any) -> Any:
    func = click.option("--file", "files", multiple=True, help="Table files (*.table.json.gz, Kernel Tuner "
                        "caches) or globs.")(func)
    func = click.option("--table", "names", multiple=True, help="Tables of --db (trailing *: prefix).")(func)
    return click.option("--db", default="flysearch.db", show_default=True, help="Table database.")(func)


@click.group()
def model() -> None:
    """Train, evaluate and apply the cost model that ranks configs before compiling."""


@model.command("train")
@_table_options
@click.option("--objective", type=click.Choice(["rank", "log_ratio"]), default="rank", show_default=True)
@click.option("--top-boost", type=click.FloatRange(min=0), default=15.0, show_default=True,
              help="Extra weight of each table's fastest configs in a second, top-weighted model, used on "
                   "the kernels and archs the prior was trained on (0: the plain model only).")
@click.option("--exclude-feature", "exclude_features", multiple=True,
              help="A feature the prior never sees (repeatable), e.g. g_split_fixed for a prior trained on "
                   "split-K tables that will rank a family without split-K.")
@click.option("--out", required=True, callback=writable_file, help="Model file to write (joblib).")
@user_errors
def model_train(db: str, names: tuple[str, ...], files: tuple[str, ...], objective: str, top_boost: float,
                exclude_features: tuple[str, ...], out: str) -> None:
    """Train a prior on ground-truth tables and save it with its schema and provenance.

    Example:

        flysearch model train --file 'lab/benchmarks/data/h200/*.table.json.gz' --out h200.prior
    """
    from flysearch.costmodel import fit_prior

    try:
        # The bar counts the tables read; while the model fits, plain lines keep a heartbeat.
        with _stoppable("model train"), progress_display("model train", unit="tables") as progress:
            prior = fit_prior(_load_tables(db, names, files, progress), objective=objective,
                              top_boost=top_boost, exclude_features=exclude_features)
    except FlysearchError as exc:
        raise click.UsageError(str(exc)) from None
    prior.save(out)
    per_device = f", and one model per device for {len(prior.sources)} devices" if prior.sources else ""
    console.print(f"trained on {len(prior.provenance['tables'])} tables, {prior.provenance['rows']} rows, "
                  f"{len(prior.schema)} features{per_device} -> {out}")


@model.command("eval")
@_table_options
@click.option("--sampler", type=click.Choice(["costmodel", "none"]), default="costmodel", show_default=True)
@click.option("--seeds", type=click.IntRange(min=1), default=5, show_default=True,
              help="Sampler seeds per table.")
@click.option("--budget", type=click.IntRange(min=1), default=64, show_default=True,
              help="Compiles per sampler run.")
@click.option("--objective", type=click.Choice(["rank", "log_ratio"]), default="rank", show_default=True)
@click.option("--top-boost", type=click.FloatRange(min=0), default=15.0, show_default=True,
              help="Extra weight of each table's fastest configs in a second, top-weighted model, used on "
                   "the kernels and archs the prior was trained on (0: the plain model only).")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Held-out tables evaluated in this many processes (same results).")
@click.option("--extra-file", "extra_files", multiple=True,
              help="Training-only table files or globs: in every prior, never held out.")
@click.option("--json", "as_json", is_flag=True,
              help="Print one JSON line per held-out table (every rank and seed) instead of a table.")
@user_errors
def model_eval_cmd(db: str, names: tuple[str, ...], files: tuple[str, ...], sampler: str, seeds: int,
                   budget: int, objective: str, top_boost: float, workers: int,
                   extra_files: tuple[str, ...], as_json: bool) -> None:
    """Leave-one-table-out: rank each table with a prior trained on the others of its kernel.

    Example:

        flysearch model eval --file 'lab/benchmarks/data/h200/*.table.json.gz' --seeds 5 \
            --extra-file 'lab/benchmarks/data/h200_extra/*.table.json.gz'
    """
    from flysearch.compare import leave_one_out

    try:
        tables = _load_tables(db, names, files)
        extra = _load_tables(db, (), extra_files) if extra_files else []
        held_out: list[str] = []
        with _stoppable("model eval"), progress_display("model eval", unit="tables held out") as show:
            show(0, len(tables))

            def progress(name: str) -> None:
                held_out.append(name)
                show(len(held_out), len(tables), name)

            results = leave_one_out(tables, seeds=range(seeds), budget=budget,
                                    sampler=None if sampler == "none" else sampler, objective=objective,
                                    workers=workers, extra=extra, top_boost=top_boost, progress=progress)
    except FlysearchError as exc:
        raise click.UsageError(str(exc)) from None
    if as_json:
        for r in results:
            medians = {eps: _finite(r.sampler_median(eps)) for eps in r.sampler}
            doc = {**asdict(r), "hit16": r.hit16, "sampler_median": medians, "budget": budget}
            click.echo(json.dumps(doc, sort_keys=True))  # a float key (0.01) becomes "0.01"
        return
    out = Table("held-out table", "configs", "prior rank 1%", "prior rank 5%", "hit@16",
                "sampler 1% (median)", "sampler 5% (median)", "per seed 1%")
    for r in results:
        out.add_row(r.table, str(r.configs), str(r.prior_rank[0.01]), str(r.prior_rank[0.05]),
                    "yes" if r.hit16 else "no", _fmt(r.sampler_median(0.01), budget),
                    _fmt(r.sampler_median(0.05), budget), str(r.sampler.get(0.01, "")))
    console.print(out)


@contextlib.contextmanager
def _stoppable(command: str) -> Iterator[None]:
    """Stop on SIGINT or SIGTERM with one line (nothing is written before the end)."""
    with stop_on_signals(command):
        try:
            yield
        except Stopped as stop:
            click.echo(f"flysearch {command}: stopped by {stop.name}; nothing was written.", err=True)
            sys.exit(128 + stop.signum)


def _finite(value: float | None) -> float | None:
    """*value*, ``None`` for infinity (a median over seeds most of which never got there)."""
    return None if value is None or math.isinf(value) else value


def _fmt(value: float | None, budget: int) -> str:
    if value is None:
        return "-"
    return f">{budget}" if value == float("inf") else f"{value:g}"


@model.command("rank")
@click.option("--model", "model_path", required=True, help="Model file from 'flysearch model train'.")
@_table_options
@click.option("--top", type=click.IntRange(min=1), default=16, show_default=True,
              help="Configs shown per table.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON line per config instead of tables.")
@user_errors
def model_rank(model_path: str, db: str, names: tuple[str, ...], files: tuple[str, ...], top: int,
               as_json: bool) -> None:
    """Show a table's configs in the model's order, with their measured times when known.

    Example:

        flysearch model rank --model h200.prior --table triton_gemm/H200/1x6144x4096
    """
    from flysearch.compare import prior_order
    from flysearch.costmodel import check_prior_fits, load_prior, table_arch

    try:
        prior = load_prior(model_path)
        tables = _load_tables(db, names, files)
        for table in tables:
            params = {name for row in table.rows.values() for name in row.params}
            check_prior_fits(prior, sorted(params), f"table {table.name}", problem=table.meta.problem,
                             arch=table_arch(table))
    except FlysearchError as exc:
        raise click.UsageError(str(exc)) from None
    for table in tables:
        best = table.best().time_ms
        out = Table("rank", "config", "measured ms", "vs optimum", title=table.name)
        for i, row in enumerate(prior_order(prior, table)[:top], 1):
            if as_json:
                click.echo(json.dumps({"table": table.name, "rank": i, "config": row.key,
                                       "outcome": row.outcome, "time_ms": row.time_ms if row.ok else None,
                                       "vs_optimum": row.time_ms / best if row.ok and best else None}))
                continue
            ratio = f"{row.time_ms / best:.3f}x" if row.ok and best else row.outcome
            out.add_row(str(i), row.key, f"{row.time_ms:.4g}" if row.ok else "-", ratio)
        if not as_json:
            console.print(out)
