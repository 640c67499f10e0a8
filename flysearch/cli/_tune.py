"""``flysearch tune``: pre-tune a user's kernels offline, list what a store holds, export it.

Each sub-command is a thin caller of :mod:`flysearch.tune` or :mod:`flysearch.export`.
"""

from __future__ import annotations

import json

import click
from rich.markup import escape
from rich.table import Table

from flysearch.cli._console import OutputConsole
from flysearch.cli._errors import user_errors
from flysearch.cli._options import writable_file
from flysearch.cli._progress import Stopped, progress_display, stop_on_signals

__all__ = ["tune"]

console = OutputConsole()

store_option = click.option(
    "--store", default=None, metavar="PATH|URL",
    help="The autotune store (default: $FLYSEARCH_AUTOTUNE_DB or ~/.cache/flysearch/autotune.db).")


@click.group()
def tune() -> None:
    """Your own kernels under @flysearch.autotune: pre-tune keys, list and export the winners."""


@tune.command("run")
@click.argument("workload", metavar="FILE.py:FUNCTION")
@click.option("--keys", "keys_path", required=True, type=click.Path(dir_okay=False),
              help="A TOML file of [[key]] tables: the key values to tune, one table each.")
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print the tuned keys as JSON (as 'tune show --json').")
@user_errors
def tune_run(workload: str, keys_path: str, store: str | None, as_json: bool) -> None:
    """Call FUNCTION(**key) for each key of the keys file, so that every decorated kernel it calls
    tunes that key now (a key tuned before is dispatched from the store: nothing compiles).

    Example:

    \b
      flysearch tune run examples/softmax.py:workload --keys examples/softmax_keys.toml
    """
    from flysearch.tune import load_keys, load_workload, run_workload, store_env

    keys = load_keys(keys_path)
    with store_env(store):
        fn = load_workload(workload)
        try:
            with stop_on_signals("flysearch tune run"), progress_display("tune", unit="keys") as update:
                run_workload(fn, keys, lambda done, total, key: update(done, total, json.dumps(key)))
        except Stopped as stop:
            console.print(f"Stopped by {stop.name}; the tuned keys are stored, and the key in progress "
                          "resumes where it stopped on the next run.")
            raise SystemExit(128 + stop.signum) from None
    _show(store, None, as_json=as_json)


@tune.command("race")
@click.argument("workload", metavar="FILE.py:FUNCTION")
@click.option("--keys", "keys_path", required=True, type=click.Path(dir_okay=False),
              help="A TOML file of [[key]] tables: the key values to race, one table each.")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="The folder the race tables are written to (<kernel>__<key>.table.json.gz).")
@user_errors
def tune_race(workload: str, keys_path: str, out: str) -> None:
    """Race every feasible config of each key of the decorated kernels FUNCTION calls (the ground
    truth a search is judged against): one table file per (kernel, key), for 'flysearch tables
    import' and 'flysearch compare'. Nothing is stored in the autotune store.

    Example:

    \b
      flysearch tune race examples/softmax.py:workload --keys examples/softmax_keys.toml --out races/
    """
    from flysearch.tune import load_keys, load_workload, racing, run_workload

    keys = load_keys(keys_path)
    fn = load_workload(workload)
    try:
        with stop_on_signals("flysearch tune race"), progress_display("race", unit="keys") as update, \
                racing(out):
            run_workload(fn, keys, lambda done, total, key: update(done, total, json.dumps(key)))
    except Stopped as stop:
        console.print(f"Stopped by {stop.name}; the keys raced so far are written to {out}.")
        raise SystemExit(128 + stop.signum) from None
    console.print(f"Race tables in {out}.")


@tune.command("check")
@click.argument("workload", metavar="FILE.py:FUNCTION")
@click.option("--keys", "keys_path", required=True, type=click.Path(dir_okay=False),
              help="A TOML file of [[key]] tables: the key values to check, one table each.")
@click.option("--arch", required=True, help="The AMD arch to compile for: gfx942 or gfx950.")
@click.option("--out", required=True, type=click.Path(file_okay=False),
              help="The folder the check tables are written to (<kernel>__<key>.table.json.gz).")
@click.option("--budget", type=click.IntRange(min=1), default=None,
              help="Compile this many configs of each key (drawn at random) instead of every feasible one.")
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print each key's summary and table file as JSON.")
@user_errors
def tune_check(workload: str, keys_path: str, arch: str, out: str, budget: int | None,
               store: str | None, as_json: bool) -> None:
    """Compile every feasible config of each key of the decorated Triton or FlyDSL kernels FUNCTION
    calls for an AMD arch, on this machine (no GPU needed, nothing launched), and read each one's
    registers, LDS, spills and occupancy. Configs that spill, overflow LDS or fit no wave are
    stored as rejected, so a tune on that arch never compiles them. One table per (kernel, key),
    for 'flysearch tables import', and one line per key.

    Example:

    \b
      flysearch tune check my_kernels.py:workload --keys keys.toml --arch gfx942 --out checks/
    """
    from flysearch.tune import checking, load_keys, load_workload, run_workload, store_env

    keys = load_keys(keys_path)
    with store_env(store), checking(out, arch, budget=budget) as run:
        fn = load_workload(workload)
        try:
            with stop_on_signals("flysearch tune check"):
                run_workload(fn, keys)
        except Stopped as stop:
            console.print(f"Stopped by {stop.name}; the keys checked so far are written to {out}.")
            raise SystemExit(128 + stop.signum) from None
    if as_json:
        click.echo(json.dumps([{"summary": line, "table": str(path)} for line, path in run.checked],
                              indent=2))
        return
    for line, _path in run.checked:
        console.print(escape(line))
    console.print(f"Check tables in {out}." if run.checked else
                  f"{workload} called no decorated kernel; nothing was checked.")


@tune.command("show")
@store_option
@click.option("--kernel", default=None, help="Only this kernel (its function's name).")
@click.option("--json", "as_json", is_flag=True, help="Print the tuned keys as JSON.")
@user_errors
def tune_show(store: str | None, kernel: str | None, as_json: bool) -> None:
    """List the tuned keys of a store: each kernel's winner per key, and what tuning it cost."""
    _show(store, kernel, as_json=as_json)


def _show(store: str | None, kernel: str | None, *, as_json: bool) -> None:
    from flysearch.tune import TuneStore, store_url

    tuned = TuneStore(store_url(store)).tuned(name=kernel)
    if as_json:
        click.echo(json.dumps([{"kernel": t.name, "identity": t.kernel, "key": t.key, "state": t.state,
                                "config": t.config, "report": t.report} for t in tuned], indent=1))
        return
    if not tuned:
        console.print(f"No tuned key in {store_url(store)}.")
        return
    table = Table("kernel", "key", "winner", "ms", "compiles", "of", "sampler", "s")
    for t in tuned:
        r = t.report
        table.add_row(escape(t.name), escape(t.key), escape(json.dumps(t.config) if t.config else t.state),
                      f"{r['winner_ms']:.4f}" if "winner_ms" in r else "", str(r.get("compiles", "")),
                      str(r.get("n_feasible", "")), escape(str(r.get("sampler", ""))),
                      str(r.get("seconds", "")))
    console.print(table)


@tune.command("export")
@store_option
@click.option("--kernel", default=None, help="Only this kernel (its function's name).")
@click.option("--format", "fmt", type=click.Choice(["triton", "json"]), default="triton", show_default=True,
              help="A triton.autotune config list (Python) or JSON.")
@click.option("--out", default=None, callback=writable_file, help="Write here (else stdout).")
@user_errors
def tune_export(store: str | None, kernel: str | None, fmt: str, out: str | None) -> None:
    """Export each tuned key's winner: a triton.autotune config list, or JSON with keys and times."""
    from flysearch._atomicfile import write_text_atomic
    from flysearch.export import export_json, triton_configs_source, tuned_entries

    entries = tuned_entries(store, kernel=kernel)
    text = triton_configs_source(entries) if fmt == "triton" else export_json(entries)
    if out:
        write_text_atomic(out, text)
    else:
        click.echo(text, nl=False)
