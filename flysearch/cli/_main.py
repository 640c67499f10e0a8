"""The ``flysearch`` command: parses, calls one library function, prints.

Every user mistake (unknown sampler or arch, missing table, empty space, malformed file) is one
line on stderr and exit code 2.
"""

from __future__ import annotations

import contextlib
import json
import sys
import warnings
from collections.abc import Iterator
from dataclasses import asdict, replace
from typing import Any

import click
from rich.markup import escape
from rich.table import Table

from flysearch._atomicfile import atomic_write
from flysearch.cli._console import OutputConsole
from flysearch.cli._errors import user_errors as _user_errors
from flysearch.cli._options import db_option, gpu_list, storage_option, writable_file
from flysearch.cli._progress import Stopped, progress_display, stop_on_signals
from flysearch.evaluators import evaluator_entry, evaluator_names
from flysearch.samplers import SAMPLERS
from flysearch.space import ENCODINGS
from flysearch.study import MAX_SEED, StudySpec, StudySummary, launch, load_study_file
from flysearch.tables import DEFAULT_DB, TableStore, import_tables

__all__ = ["main"]

console = OutputConsole()


@click.group()
@click.version_option(package_name="flysearch")
def main() -> None:
    """Search GPU kernel configs with Bayesian optimization, counting compiles."""
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", message="Constraints have been set")


# -- tables ---------------------------------------------------------------------------------------


@main.group()
def tables() -> None:
    """Ground-truth tables in SQLite: import (every format) and list."""


@tables.command("import")
@click.argument("files", metavar="FILE...", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--name", default=None,
              help="Rename the table of a single one-table file (default: its own name, or <folder>/<file "
                   "stem> for a Kernel Tuner cache).")
@click.option("--replace", is_flag=True, help="Overwrite tables of the same name.")
@click.option("--aiter-profile", is_flag=True,
              help="The files are aiter tuner profiles (-o2: every candidate), not tuned CSVs.")
@click.option("--err-ratio", type=click.FloatRange(min=0), default=0.05, show_default=True,
              help="With --aiter-profile: the tuner's --errRatio; a candidate above it is a wrong result.")
@click.option("--shape", default=None, metavar="MxNxK[:dtype]",
              help="The GEMM a one-table file measured, or the order of M, N, K in its problem_size "
                   "(e.g. problem_size:NMK); gives the table its M, N, K and regime.")
@click.option("--kernel", default=None,
              help="The kernel family: a registered space (triton_gemm_splitk) brings its constraints and "
                   "lets a prior trained on it walk its order; any other name just names the kernel.")
@click.option("--arch", default=None, help="The arch profile (sm_90, gfx942, ...); default: the device's.")
@click.option("--device", default=None, help="The device's name, when the file names none or another.")
@click.option("--rename", "renames", multiple=True, metavar="OLD=NEW,...",
              help="Parameter names, the file's to flysearch's (BM=BLOCK_M,BN=BLOCK_N); repeatable.")
@db_option
@_user_errors
def tables_import(files: tuple[str, ...], name: str | None, replace: bool, aiter_profile: bool,
                  err_ratio: float, shape: str | None, kernel: str | None, arch: str | None,
                  device: str | None, renames: tuple[str, ...], db: str) -> None:
    """Import table files, Kernel Tuner caches and aiter CSVs as tables.

    Every FILE is read before any table is written: a bad file, or a table that exists (without
    --replace), imports none of them. The format is told by the name:

    \b
      *.table.json.gz  a flysearch table file ('race dump'): one table
      *.csv            an aiter tuned CSV (or tuner profile, --aiter-profile):
                       one table per GEMM, <file stem>/<gfx>/cu<CUs>/MxNxK
      *.json[.gz]      a Kernel Tuner cache: one table, <folder>/<file stem>

    A Kernel Tuner cache does not say what the cost model needs: declare its shape, kernel, arch
    and parameter names with --shape, --kernel, --arch and --rename, and a prior trained on
    flysearch's tables ranks its configs like those of a raced table.

    Examples:

    \b
      flysearch tables import ../shared/data/benchmark_hub/convolution_milo/MI250X.json.gz
      flysearch tables import --db h200.db lab/benchmarks/data/h200/*.table.json.gz
      flysearch tables import ../shared/data/aiter/bf16_tuned_gemm.csv
      flysearch tables import my_gemm_64.json --shape 64x4096x4096 --kernel triton_gemm_splitk \\
          --arch sm_90 --rename BM=BLOCK_M,BN=BLOCK_N,BK=BLOCK_K,SK=SPLIT_K,GM=GROUP_M
    """
    from flysearch.tables import Declaration, parse_renames

    order = shape.removeprefix("problem_size:") if shape and shape.startswith("problem_size:") else None
    declaration = Declaration(shape=None if order else shape, shape_from=order, kernel=kernel, arch=arch,
                              device=device, rename=parse_renames(renames))
    imported = import_tables(files, db=db, name=name, replace=replace, aiter_profile=aiter_profile,
                             err_ratio_limit=err_ratio, declaration=declaration)
    for file in imported:  # soft wrap: a path is never broken over two lines
        if file.one_table:
            t = file.tables[0]
            console.print(f"imported [bold]{escape(t.name)}[/]: {t.rows} rows ({t.ok} ok), "
                          f"best {t.best_ms:.4g} ms, into {escape(db)}", highlight=False, soft_wrap=True)
        else:
            console.print(f"imported {len(file.tables)} tables from {file.path} ({file.format}) into {db}",
                          markup=False, highlight=False, soft_wrap=True)
    if len(imported) > 1:
        total = sum(len(f.tables) for f in imported)
        console.print(f"imported {total} tables from {len(imported)} files into {db}", markup=False,
                      highlight=False, soft_wrap=True)


@tables.command("list")
@db_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines instead of a table.")
@_user_errors
def tables_list(db: str, as_json: bool) -> None:
    """List the tables of the database with row counts and the best time.

    Example:

        flysearch tables list --db flysearch.db
    """
    from flysearch.cli._table import print_name_table

    store = TableStore(db, create=False)
    try:
        rows = list(store.summaries())
    finally:
        store.close()
    if as_json:
        for row in rows:
            click.echo(json.dumps(row))
        return
    # The names are what users type next: printed whole, the other columns left out, least useful
    # first, when the terminal is too narrow for all of them.
    cells = [
        [r["name"], r["kernel"], r["arch"], r["device"], r["problem"], r["regime"] or "",
         str(r["rows"]), str(r["ok"]), f"{r['best_ms']:.4g}" if r["best_ms"] else "-", r["date"]]
        for r in rows
    ]
    print_name_table(
        console, ["table", "kernel", "arch", "device", "problem", "regime", "rows", "ok", "best ms", "date"],
        cells, drop=["problem", "date", "device", "kernel", "regime", "arch", "ok", "rows", "best ms"],
        hint=" (--json prints every field)",
    )


# -- study ----------------------------------------------------------------------------------------


@main.group()
def study() -> None:
    """Optuna studies that count compiles."""


@study.command("run")
@click.argument("study_file", required=False, type=click.Path(dir_okay=False))
@click.option("--table", default=None,
              help="Ground-truth table to replay (live --evaluator simulated: several, comma-separated).")
@click.option("--kernel", default=None, help="Kernel family (picks the table with --arch/--shape).")
@click.option("--arch", default=None, help="Arch profile, e.g. gfx942, gfx950, sm_90 (picks the table).")
@click.option("--shape", default=None,
              help="GEMM shape MxNxK, e.g. 1x4096x4096 (picks the table). Live: several, comma-separated, "
                   "run one study each on pools started once.")
@click.option("--sampler", default=None, help=f"One of: {', '.join(SAMPLERS)} (default auto).")
@click.option("--budget", type=int, default=None, help="Unique compiles (default 200).")
@click.option("--seed", type=click.IntRange(0, MAX_SEED), default=None, help="Sampler seed (default 0).")
@click.option("--encoding", default=None, help=f"One of: {', '.join(ENCODINGS)} (default ordinal).")
@click.option("--name", default=None, help="Study name (default <table>:<sampler>:seed<seed>).")
@click.option("--db", default=None, help=f"Ground-truth table database (default {DEFAULT_DB}).")
@click.option("--prior", default=None, help="Model file for --sampler costmodel ('flysearch model train').")
@storage_option
@click.option("--evaluator", default="replay", show_default=True,
              help=f"One of: {', '.join(evaluator_names())} (live: {', '.join(evaluator_names(live=True))}).")
@click.option("--gpus", default=None,
              help="Live: GPUs to time on (e.g. 0,1): one worker each, sharing the study; with several "
                   "shapes, the shapes are dealt to them.")
@click.option("--compile-workers", type=click.IntRange(min=1), default=None,
              help="Live: compile processes per worker.")
@click.option("--depth", type=click.IntRange(min=1), default=None, help="Live: trials in flight per worker.")
@click.option("--finalists", type=click.IntRange(min=0), default=5, show_default=True,
              help="Live: configs re-timed last.")
@click.option("--rounds", type=click.IntRange(min=1), default=5, show_default=True,
              help="Live: re-timing rounds.")
@click.option("--scale", type=click.FloatRange(min=0), default=1.0, show_default=True,
              help="Simulated: time scale.")
@click.option("--noise", type=click.FloatRange(min=0), default=0.0, show_default=True,
              help="Simulated: log-normal sigma.")
@click.option("--compile-log", default=None, callback=writable_file,
              help="Simulated: append each finished compile's key here.")
@click.option("--json", "json_out", default=None, callback=writable_file,
              help="Live: write the worker reports to this JSON file.")
@click.option("--server", is_flag=False, flag_value="", default=None,
              help="Live: take warm workers from a worker server ('flysearch serve'), at this socket or, "
                   "given alone, at its default one.")
@_user_errors
def study_run(study_file: str | None, table: str | None, kernel: str | None, arch: str | None,
              shape: str | None, sampler: str | None, budget: int | None, seed: int | None,
              encoding: str | None, name: str | None, db: str | None, prior: str | None, storage: str | None,
              evaluator: str, gpus: str | None, compile_workers: int | None, depth: int | None,
              finalists: int, rounds: int, scale: float, noise: float, compile_log: str | None,
              json_out: str | None, server: str | None) -> None:
    """Run (or resume) a study from a study file or from flags.

    Example:

        flysearch study run studies/quickstart.toml

        flysearch study run --table convolution_milo/MI250X --sampler gp --budget 100

        flysearch study run --kernel convolution_kernel --arch gfx90a --sampler random

        flysearch study run --evaluator triton --shape 1x6144x4096,4096x4096x4096 --sampler tpe-unseen
    """
    if study_file is None and evaluator_entry(evaluator).target == "table" and not any(
            (table, kernel, arch, shape)):
        raise click.UsageError("Give a study file, --table, or --kernel/--arch/--shape.")
    base = load_study_file(study_file) if study_file is not None else StudySpec()
    # Flags given on the command line override the study file's values ([study] and [live]).
    ctx = click.get_current_context()
    spec = base.with_overrides(table=table, kernel=kernel, arch=arch, shape=shape, sampler=sampler,
                               budget=budget, seed=seed, encoding=encoding, name=name, db=db, prior=prior,
                               storage=storage, **_given(ctx, evaluator=evaluator))
    live = _given(ctx, gpus=tuple(gpu_list(gpus, "--gpus")), compile_workers=compile_workers, depth=depth,
                  finalists=finalists, rounds=rounds, scale=scale, noise=noise, compile_log=compile_log,
                  server=server)
    spec = replace(spec, live=replace(spec.live, **live))
    if evaluator_entry(spec.evaluator).live:
        _run_live(spec, json_out)
        return
    spec.validate()
    with _stoppable(spec):
        with progress_display(spec.study_name, unit="compiles") as progress:
            summary, optimum = launch(spec, progress=progress)
    _print_summary(summary, optimum)


def _given(ctx: click.Context, **values: Any) -> dict[str, Any]:
    """The *values* whose options the command line gave (not left at their defaults)."""
    from click.core import ParameterSource

    return {k: v for k, v in values.items() if ctx.get_parameter_source(k) is not ParameterSource.DEFAULT}


@contextlib.contextmanager
def _stoppable(spec: StudySpec) -> Iterator[None]:
    """Stop the study on SIGINT or SIGTERM with one line that says how to resume (every finished
    trial is stored; exit code 128 + the signal's number)."""
    with stop_on_signals("study run"):
        try:
            yield
        except Stopped as stop:
            click.echo(f"study {spec.study_name}: stopped by {stop.name}; its finished trials are stored "
                       f"in {spec.storage}; the same command resumes.", err=True)
            sys.exit(128 + stop.signum)


def _run_live(spec: StudySpec, json_out: str | None) -> None:
    """Run *spec* live: one study per listed shape (or played-back table), on its GPUs."""
    from flysearch.study import run_live

    studies = spec.live_studies()
    # With several shapes the progress follows the first GPU's current study.
    name = studies[0].study_name if len(studies) == 1 else f"{len(studies)} studies"
    with _stoppable(spec), progress_display(name, unit="compiles") as progress:
        reports = run_live(spec, progress=progress)
    _print_live(reports, len(studies), spec.live.server is not None, json_out)


def _print_live(reports: list[Any], n_jobs: int, served: bool, json_out: str | None) -> None:
    # One study: the worker that stopped last saw all of it. Several: each report is its study's.
    shown = reports if n_jobs > 1 else [max(reports, key=lambda rep: rep.ended_at)]
    for r in shown:
        _print_summary(r.summary, None)
    for r in reports:
        ask = r.loop_parts.get("ask", 0.0)
        console.print(
            f"  worker {r.worker}: {r.compiled} compiled, {r.timed} timed in {r.wall_s:.1f} s; "
            f"compile or timing running {r.busy_s:.1f} s, overhead {r.overhead:.1%} (the GPU was ready "
            f"after {r.timer_ready_s:.1f} s; {r.overhead_after_ready:.1%} from then on); "
            f"asking the sampler {ask:.1f} s; rows in {r.table}"
            + (f"; {r.served_workers} processes taken warm from the worker server" if served else "")
        )
        if r.wall_s > 0 and ask > 0.25 * r.wall_s:
            per_compile = r.summary.trials / max(r.summary.compiles, 1)
            console.print(
                f"  [yellow]note[/]: asking the sampler took {ask / r.wall_s:.0%} of this worker's time "
                f"({per_compile:.1f} suggestions per compile): the sampler, not the compile pool or the "
                "GPU, set the pace (tpe-unseen, costmodel, surrogate and spreadforest make about one "
                "suggestion per compile)"
            )
    if json_out:
        with atomic_write(json_out) as fh:
            json.dump([r.as_dict() for r in reports], fh, indent=2, default=str)


@study.command("show")
@click.argument("name")
@storage_option
@click.option("--db", default=DEFAULT_DB, show_default=True, help="Table database, for the regret.")
@click.option("--json", "as_json", is_flag=True,
              help="Print the summary as one JSON object (every count, the settings, the regret).")
@_user_errors
def study_show(name: str, storage: str | None, db: str, as_json: bool) -> None:
    """Show a study: best config, compiles used, regret against the table's optimum.

    Example:

        flysearch study show quickstart-h200-256x1536x7168-tpe
    """
    from flysearch.study import load_summary

    if click.get_current_context().get_parameter_source("db") is click.core.ParameterSource.COMMANDLINE:
        TableStore(db, create=False).close()  # a --db named on purpose must be a table database
    summary, optimum = load_summary(name, storage=storage, db=db)
    if as_json:
        regret = summary.best_ms / optimum - 1.0 if optimum and summary.best_ms is not None else None
        doc = {**asdict(summary), "table_optimum_ms": optimum, "regret": regret}
        click.echo(json.dumps(doc, sort_keys=True, default=str))
        return
    _print_summary(summary, optimum)


@study.command("list")
@storage_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines instead of a table.")
@_user_errors
def study_list(storage: str | None, as_json: bool) -> None:
    """List the studies of a storage.

    Example:

        flysearch study list --storage sqlite:///flysearch-studies.db
    """
    from rich.cells import cell_len

    from flysearch.study import list_studies

    studies = list_studies(storage)
    if as_json:
        for name, n_trials, best in studies:
            click.echo(json.dumps({"study": name, "trials": n_trials, "best_value": best}))
        return
    # The names are what 'study show' takes: never cut. rich narrows the other columns first; on a
    # terminal narrower than that, the lines run past its edge (the terminal wraps them), not cropped.
    out = Table()
    out.add_column("study", no_wrap=True, min_width=max([cell_len(n) for n, _t, _b in studies], default=5))
    out.add_column("trials")
    out.add_column("best value")
    for name, n_trials, best in studies:
        out.add_row(name, str(n_trials), f"{best:.4g}" if best is not None else "-")
    console.print(out, crop=False)


def _print_summary(summary: StudySummary, optimum: float | None) -> None:
    s = summary
    console.print(f"[bold]{s.study_name}[/] ({s.settings.get('sampler')}, seed {s.settings.get('seed')})")
    console.print(
        f"  trials {s.trials}: {s.compiles} compiled, {s.duplicates} duplicate suggestions, "
        f"{s.rejected} rejected by constraints, {s.failed} failed"
    )
    if s.n_feasible is not None:
        console.print(f"  feasible configs {s.n_feasible}; stopped: {s.stopped}")
    if s.new_trials == 0:
        console.print("  resumed a finished study: nothing left to do (a larger --budget runs more)")
    console.print(f"  simulated cost {s.cost_s:.1f} s")
    if s.best_key is None:
        console.print("  no successful config yet")
        return
    console.print(f"  best {s.best_ms:.5g} ms at compile {s.best_compile_index}: {s.best_key}")
    if optimum is not None and s.best_ms is not None:
        regret = s.best_ms / optimum - 1.0
        console.print(f"  table optimum {optimum:.5g} ms; regret {regret:+.2%}")
    final = s.finalists
    if final:
        console.print(
            f"  finalists re-timed ({len(final['finalists'])} configs): winner {final['winner_ms']:.5g} ms "
            f"(spread {final['spread']:.2%}, noise {final['noise']:.2%}) {final['winner']}"
        )
        if len(final["tie_set"]) > 1:
            console.print(f"  tied within the noise: {len(final['tie_set'])} configs")


from flysearch.cli._race import race  # noqa: E402

main.add_command(race)

from flysearch.cli._export import export  # noqa: E402

main.add_command(export)

from flysearch.cli._flydsl import doctor, flydsl  # noqa: E402

main.add_command(doctor)
main.add_command(flydsl)

from flysearch.cli._aiter import aiter  # noqa: E402

main.add_command(aiter)

from flysearch.cli._compare import compare  # noqa: E402

main.add_command(compare)

from flysearch.cli._model import model  # noqa: E402

main.add_command(model)

from flysearch.cli._serve import serve  # noqa: E402

main.add_command(serve)

from flysearch.cli._tune import tune  # noqa: E402

main.add_command(tune)

if __name__ == "__main__":  # pragma: no cover
    main()
