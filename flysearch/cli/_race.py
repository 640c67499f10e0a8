"""CLI commands of the live path: ``flysearch race run|dump|summary``.

A dumped table goes back into a database with ``flysearch tables import``; its best configs go out
with ``flysearch export``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from flysearch._atomicfile import write_text_atomic
from flysearch.cli._errors import user_errors
from flysearch.cli._options import writable_dir, writable_file
from flysearch.cli._progress import Stopped, stop_on_signals
from flysearch.errors import InputFormatError
from flysearch.tables import DEFAULT_DB, TableStore, opened_store

__all__ = ["race"]


def _echo(line: str) -> None:
    click.echo(line, err=True)


def _shapes(shape_file: str | None, shape_texts: tuple[str, ...], only: tuple[str, ...]) -> list[Any]:
    from flysearch.race import RaceShape
    from flysearch.space import load_corpus, parse_shape

    out = []
    if shape_file:
        corpus = load_corpus(shape_file)
        unknown = sorted(set(only) - {e.name for e in corpus})
        if unknown:
            raise InputFormatError(f"--only names {unknown}, which {shape_file} does not hold.")
        out.extend(RaceShape(e.shape, e.name, e.model, e.layer) for e in corpus if not only or e.name in only)
    out.extend(RaceShape(parse_shape(t)) for t in shape_texts)
    if not out:
        raise InputFormatError("No shapes to race; give --shapes FILE or --shape MxNxK (e.g. 1x4096x4096).")
    return out


@click.group()
def race() -> None:
    """Exhaustive races on the GPU: ground-truth tables and the race against cuBLAS."""


@race.command("run")
@click.option("--shapes", "shape_file", type=click.Path(dir_okay=False), help="Shape corpus (TOML).")
@click.option("--shape", "shape_texts", multiple=True, help="A shape MxNxK[:dtype]; repeatable.")
@click.option("--only", multiple=True, help="Race only these corpus entries (by name); repeatable.")
@click.option("--space", "space_name", default="triton_gemm_splitk", show_default=True,
              help="The Triton family to race: triton_gemm_splitk (split-K), triton_gemm_splitk_fused "
                   "(split-K with its reduction in the same launch), triton_gemm_tma (persistent, TMA; "
                   "H100/H200) or aiter_triton_gemm_cuda (aiter's Triton GEMM; pip install amd-aiter).")
@click.option("--db", default=DEFAULT_DB, show_default=True, help="Ground-truth table database.")
@click.option("--workers", type=click.IntRange(min=1), default=None,
              help="Compile processes (default: CPUs - 2).")
@click.option("--cache-dir", default=None, help="Triton cache dir shared by workers and timer.")
@click.option("--deadline", type=click.FloatRange(min=0, min_open=True), default=None,
              help="Stop starting work after this many s.")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="Race only the first N feasible configs.")
@click.option("--dump", "dump_dir", default=None, callback=writable_dir,
              help="Write each table as DIR/*.table.json.gz after.")
@click.option("--report", "report_path", default=None, callback=writable_file,
              help="Write the race report as JSON here.")
@click.option("--retime-rounds", type=click.IntRange(min=0), default=10, show_default=True,
              help="Confirm each shape's top: time it again this many interleaved rounds (0: off).")
@click.option("--retime-within", type=click.FloatRange(min=0, max=1, max_open=True), default=0.05,
              show_default=True, help="Re-time the configs within this fraction of the race's best...")
@click.option("--retime-max", type=click.IntRange(min=1), default=32, show_default=True,
              help="...but at most this many (and at least 8, or this many if fewer).")
@user_errors
def race_run(shape_file: str | None, shape_texts: tuple[str, ...], only: tuple[str, ...],
             space_name: str, db: str, workers: int | None, cache_dir: str | None,
             deadline: float | None, limit: int | None, dump_dir: str | None,
             report_path: str | None, retime_rounds: int, retime_within: float, retime_max: int) -> None:
    """Race every feasible config over the shapes; resumable (a rerun skips measured configs).

    Then each shape's fastest configs and cuBLAS are timed again in interleaved rounds and their
    medians kept beside the race's times (--retime-rounds 0 turns that off); summaries and exports
    use the confirmed order. A rerun re-times finished tables raced without it, or whose rounds
    lack cuBLAS.

    Example:

        flysearch race run --shapes studies/shapes_h200.toml --db h200.db --dump lab/benchmarks/data/h200
    """
    from flysearch.evaluators import RetimeSettings
    from flysearch.kernels import get_space, triton_families
    from flysearch.race import RaceSettings, run_race

    if space_name not in triton_families():
        raise InputFormatError(f"--space {space_name} is no Triton family that flysearch races; give one of "
                               f"{', '.join(triton_families())}.")
    shapes = _shapes(shape_file, shape_texts, only)
    if retime_rounds == 1:
        raise InputFormatError("--retime-rounds 1 confirms nothing; give 2 or more rounds, or 0 for none.")
    retime = RetimeSettings(rounds=retime_rounds, within=retime_within, min_k=min(8, retime_max),
                            max_k=retime_max) if retime_rounds else None
    settings = RaceSettings(family=space_name, workers=workers, cache_dir=cache_dir, deadline_s=deadline,
                            limit=limit, retime=retime)
    with opened_store(db) as store:
        with stop_on_signals("race run"):
            try:
                report = run_race(get_space(space_name), shapes, store, settings, progress=_echo)
            except Stopped as stop:
                click.echo(f"race stopped by {stop.name}; the configs measured so far are stored in {db}; "
                           "the same command resumes.", err=True)
                sys.exit(128 + stop.signum)
        click.echo(f"race {report.stopped}: {report.measured} configs in {report.wall_s:.1f} s "
                   f"({report.configs_per_s:.1f} configs/s), {report.compiles} compiles, "
                   f"{report.compile_failures} compile failures, on {report.device}")
        if dump_dir:
            _dump(store, [s.table for s in report.shapes if s.table in store], dump_dir)
    if report_path:
        write_text_atomic(report_path, json.dumps(_report_json(report), indent=1) + "\n")


def _report_json(report: Any) -> dict[str, Any]:
    return {
        "device": report.device, "arch": report.arch, "versions": report.versions,
        "stopped": report.stopped, "measured": report.measured, "wall_s": report.wall_s,
        "configs_per_s": report.configs_per_s, "compiles": report.compiles,
        "compile_failures": report.compile_failures,
        "shapes": [
            {"table": s.table, "shape": s.shape.as_dict(), "feasible": s.feasible,
             "already_done": s.already_done, "counts": s.counts, "best_key": s.best_key,
             "best_ms": s.best_ms, "vendor_ms": s.vendor_ms, "wall_s": s.wall_s,
             "retimed": s.retimed, "confirmed_key": s.confirmed_key, "confirmed_ms": s.confirmed_ms,
             "retime_s": s.retime_s}
            for s in report.shapes
        ],
    }


def _file_name(table: str) -> str:
    return table.replace("/", "__").replace(":", "_") + ".table.json.gz"


def _dump(store: TableStore, names: list[str], out_dir: str) -> None:
    from flysearch.tables import dump_table_file

    files: dict[str, str] = {}
    for name in names:
        other = files.setdefault(_file_name(name), name)
        if other != name:
            raise InputFormatError(
                f"Tables {other!r} and {name!r} would both be written to {_file_name(name)}; dump them apart "
                "(--prefix)."
            )
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    written, skipped = 0, []
    for name in names:
        table = store.load(name)
        if not table.ok_rows():
            skipped.append(name)  # tables import refuses a table with nothing to train or replay on
            continue
        dump_table_file(table, Path(out_dir) / _file_name(name))
        written += 1
    _echo(f"wrote {written} table files to {out_dir}")
    if skipped:
        _echo(f"skipped {len(skipped)} with no successful config: {', '.join(skipped)}")


@race.command("dump")
@click.option("--db", default=DEFAULT_DB, show_default=True)
@click.option("--prefix", default="", help="Only tables whose name starts with this.")
@click.argument("out_dir", callback=writable_dir)
@user_errors
def race_dump(db: str, prefix: str, out_dir: str) -> None:
    """Write race tables as OUT_DIR/*.table.json.gz (the committed format; 'tables import' reads them).

    Example:

        flysearch race dump --db h200.db --prefix triton_gemm/H200 lab/benchmarks/data/h200
    """
    store = TableStore(db, create=False)
    names = [n for n in store.names() if n.startswith(prefix)]
    if not names:
        raise InputFormatError(f"No table in {db} starts with {prefix!r}; nothing to dump.")
    _dump(store, names, out_dir)


@race.command("summary")
@click.option("--db", default=DEFAULT_DB, show_default=True)
@click.option("--prefix", default="", help="Only tables whose name starts with this.")
@click.option("--json", "as_json", is_flag=True, help="Print JSON lines.")
@user_errors
def race_summary_cmd(db: str, prefix: str, as_json: bool) -> None:
    """Best Triton config per race table against cuBLAS: times, ratio and winner (libtype).

    Where several kernel families were raced on one shape (split-K and TMA tables imported into one
    database, say), a second block names the fastest backend per shape, each family by its ratio to
    the cuBLAS time of its own session.

    Example:

        flysearch race summary --db h200.db
    """
    from flysearch.race import fastest_backends, race_summary

    rows = race_summary(TableStore(db, create=False), prefix)
    if as_json:
        for r in rows:
            click.echo(json.dumps(r, sort_keys=True))
        return
    click.echo(f"{'table':<36} {'regime':<8} {'rows':>5} {'ok':>5} {'triton ms':>10} {'cublas ms':>10} "
               f"{'ratio':>6}  winner")
    for r in rows:
        tm = f"{r['triton_ms']:.4g}" if r["triton_ms"] else "-"
        cm = f"{r['cublas_ms']:.4g}" if r["cublas_ms"] else "-"
        ratio = f"{r['ratio']:.3f}" if r["ratio"] else "-"
        with_cublas = ", cuBLAS too" if r["cublas_in_rounds"] else ""
        confirmed = f" (re-timed {r['retimed']}{with_cublas})" if r["retimed"] else ""
        click.echo(f"{r['table']:<36} {r['regime']:<8} {r['rows']:>5} {r['counts'].get('ok', 0):>5} "
                   f"{tm:>10} {cm:>10} {ratio:>6}  {r['winner'] or '-'}{confirmed}")
    shared = [b for b in fastest_backends(rows) if len(b["ratios"]) > 1]
    if shared:
        click.echo("\nfastest backend per shape (each family's best / its session's cuBLAS):")
        for b in shared:
            ratios = ", ".join(f"{k} {v:.3f}" for k, v in sorted(b["ratios"].items()))
            click.echo(f"{b['shape']:<20} {b['regime']:<8} {b['fastest']:<18} {ratios}")
