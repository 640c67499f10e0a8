"""CLI commands for FlyDSL: ``flysearch doctor``, ``flysearch flydsl compile|race``.

FlyDSL artifacts are written by ``flysearch export flydsl`` (:mod:`flysearch.cli._export`).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict
from typing import Any

import click
from rich.table import Table

from flysearch.cli._console import OutputConsole
from flysearch.cli._errors import user_errors
from flysearch.cli._options import writable_file
from flysearch.cli._progress import progress_display
from flysearch.errors import FlysearchError
from flysearch.study import MAX_SEED

__all__ = ["doctor", "flydsl"]

console = OutputConsole()


def _usage(exc: Exception) -> click.UsageError:
    return click.UsageError(str(exc))


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print one JSON line per check.")
def doctor(as_json: bool) -> None:
    """Report flydsl, ld.lld, torch and which evaluators can run on this machine.

    Example:

        flysearch doctor
    """
    from flysearch.cli._doctor import run_checks

    for check in run_checks():
        if as_json:
            click.echo(json.dumps(asdict(check)))
            continue
        mark = "[green]ok[/]" if check.ok else "[red]--[/]"
        console.print(f"{mark} {check.name}: {check.detail}")


@click.group()
def flydsl() -> None:
    """FlyDSL kernels: compile-only sweeps and races for AMD targets.

    Their best configs become offline autotune artifacts with 'flysearch export flydsl'.
    """


@flydsl.command("compile")
@click.option("--space", "space_name", required=True, help="Registered space (flysearch.kernels).")
@click.option("--factory", default=None, help="Kernel factory module:function (default: the space's).")
@click.option("--arch", required=True, help="AMD arch: gfx942 or gfx950.")
@click.option("--shape", required=True, help="GEMM shape MxNxK, e.g. 256x256x256.")
@click.option("--limit", type=click.IntRange(min=0), default=8, show_default=True,
              help="Feasible configs to compile (0: all).")
@click.option("--seed", type=click.IntRange(0, MAX_SEED), default=0, show_default=True,
              help="Order of the feasible configs.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=120.0, show_default=True,
              help="Seconds per compile.")
@click.option("--out", default=None, callback=writable_file, help="Write the rows to this CSV file.")
@user_errors
def flydsl_compile(space_name: str, factory: str | None, arch: str, shape: str, limit: int, seed: int,
                   timeout: float, out: str | None) -> None:
    """Compile feasible configs of a FlyDSL space on this CPU and show their resources.

    Example:

        flysearch flydsl compile --space flydsl_gemm --arch gfx942 --shape 256x256x256 --limit 4
    """
    from flysearch.evaluators import FlydslCompileEvaluator
    from flysearch.kernels import get_space
    from flysearch.race import compile_sweep, write_sweep_csv
    from flysearch.space import get_arch, parse_shape

    try:
        target, gemm = get_arch(arch), parse_shape(shape)
        space = get_space(space_name)
        enumeration = space.enumerate(gemm, target)
        configs = enumeration.shuffled(seed)[: limit or None]
        kernel = factory or space.kernel
        if kernel is None:
            raise FlysearchError(
                f"Space {space.name!r} names no kernel factory; pass --factory module:function."
            )
        evaluator = FlydslCompileEvaluator(kernel, target.name,
                                           space_params=[p.name for p in space.params], timeout_s=timeout)
        console.print(f"{space.name} on {target.name} at {gemm.key}: {enumeration.summary()}")
        with progress_display(f"compiling for {target.name}", unit="compiles") as progress:
            rows = compile_sweep(evaluator, configs, gemm, lambda i: progress(i, len(configs)))
    except (FlysearchError, RuntimeError) as exc:
        raise _usage(exc) from None
    print_compile_rows(rows)
    if out:
        write_sweep_csv(rows, out)
        console.print(f"wrote {len(rows)} rows to {out}")


def print_compile_rows(rows: list[dict[str, Any]]) -> None:
    """One line per compiled config (outcome, seconds, resources), then the outcome counts."""
    table = Table("config", "outcome", "compile s", "VGPR", "AGPR", "SGPR", "LDS", "scratch", "spills", "occ")
    for r in rows:
        table.add_row(r["key"], r["outcome"] + (f" ({r['detail']})" if r["detail"] else ""),
                      f"{r['compile_s']:.2f}", *(str(r.get(k, "")) for k in (
                          "vgpr", "agpr", "sgpr", "lds_bytes", "scratch_bytes")),
                      str(r.get("vgpr_spills", 0) + r.get("sgpr_spills", 0)) if "vgpr" in r else "",
                      str(r.get("occupancy", "")))
    console.print(table)
    console.print(", ".join(f"{n} {k}" for k, n in Counter(r["outcome"] for r in rows).items()))


@flydsl.command("race")
@click.option("--space", "space_name", default="flydsl_gemm", show_default=True, help="Registered space.")
@click.option("--factory", default=None, help="Kernel factory module:function (default: the space's).")
@click.option("--shape", "shapes", multiple=True, required=True, help="GEMM shape MxNxK (repeatable).")
@click.option("--db", default="flysearch.db", show_default=True, help="Table database to write.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=120.0, show_default=True,
              help="Seconds per compile.")
@user_errors
def flydsl_race(space_name: str, factory: str | None, shapes: tuple[str, ...], db: str,
                timeout: float) -> None:
    """Race a FlyDSL space on this machine's AMD GPU into ground-truth tables (resumable).

    Not yet run on AMD hardware. Example:

        flysearch flydsl race --space flydsl_gemm --shape 4096x4096x4096 --db amd.db
    """
    import datetime as dt

    from flysearch.evaluators import FlydslLiveEvaluator, flydsl_version
    from flysearch.kernels import get_space
    from flysearch.race import sweep_to_table
    from flysearch.space import arch_of_device, parse_shape
    from flysearch.tables import TableMeta, TableStore

    try:
        device = _amd_device()
        arch = arch_of_device(device)
        space = get_space(space_name)
        kernel = factory or space.kernel
        if kernel is None:
            raise FlysearchError(f"Space {space.name!r} names no kernel factory; pass --factory.")
        evaluator = FlydslLiveEvaluator(kernel, arch.name, space_params=[p.name for p in space.params],
                                        timeout_s=timeout)
        store = TableStore(db)
        for text in shapes:
            gemm = parse_shape(text)
            configs = space.enumerate(gemm, arch).feasible
            meta = TableMeta(
                name=f"{space.name}/{device.split()[-1]}/{gemm.M}x{gemm.N}x{gemm.K}", kernel=space.name,
                arch=arch.name, device=device, problem=gemm.as_dict(), space=space.to_json(),
                source="flysearch flydsl race", date=dt.date.today().isoformat(),
                versions={"flydsl": flydsl_version() or "", "torch": _torch_version()},
            )
            n = sweep_to_table(evaluator, configs, gemm, meta, store)
            console.print(f"{meta.name}: measured {n} configs ({len(configs)} feasible)")
    except FlysearchError as exc:
        raise _usage(exc) from None


def _torch_version() -> str:
    import torch

    return str(torch.__version__)


def _amd_device() -> str:
    """The name torch gives the first AMD GPU; a clear error where there is none."""
    try:
        import torch
    except ImportError:
        raise FlysearchError("flysearch flydsl race needs torch with ROCm on an AMD GPU.") from None
    if not torch.cuda.is_available() or not getattr(torch.version, "hip", None):
        raise FlysearchError(
            "flysearch flydsl race needs an AMD GPU (torch with ROCm sees none here); use "
            "'flysearch flydsl compile' for compile-only checks on a CPU."
        )
    return str(torch.cuda.get_device_name(0))
