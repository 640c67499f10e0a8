"""``flysearch aiter check|compile``: check the FlyDSL rows of aiter's CSVs against the aiter HGEMM
space; compile aiter's Triton GEMM for an AMD arch on this CPU and show its resources.

aiter's CSVs are imported with ``flysearch tables import`` and written with ``flysearch export aiter``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from flysearch.cli._console import OutputConsole
from flysearch.cli._errors import user_errors as _user_errors
from flysearch.cli._flydsl import print_compile_rows
from flysearch.cli._options import writable_file
from flysearch.cli._progress import progress_display
from flysearch.errors import FlysearchError
from flysearch.evaluators import AMD_COMPILE_TIMEOUT_S
from flysearch.study import MAX_SEED
from flysearch.tables import Outcome, check_flydsl_records, read_aiter_csv

if TYPE_CHECKING:
    from flysearch.evaluators import Compiled

__all__ = ["aiter"]

console = OutputConsole()


@click.group()
def aiter() -> None:
    """aiter's kernels: check its bf16 GEMM CSVs, compile its Triton GEMM for AMD on this CPU.

    Import the CSVs as tables with 'flysearch tables import FILE.csv'; write one with
    'flysearch export aiter'.
    """


@aiter.command("check")
@click.argument("paths", nargs=-1, required=True, type=click.Path(dir_okay=False))
@_user_errors
def aiter_check(paths: tuple[str, ...]) -> None:
    """Check that every FlyDSL row parses and passes the space's constraints at its own shape.

    Example:

        flysearch aiter check ../shared/data/aiter/bf16_tuned_gemm.csv
    """
    records = [r for path in paths for r in read_aiter_csv(path)]
    count, failures = check_flydsl_records(records)
    for line in failures:
        console.print(line, markup=False)
    console.print(f"{count} FlyDSL rows checked, {len(failures)} failed")
    if failures:
        raise FlysearchError(f"{len(failures)} FlyDSL rows fail the aiter HGEMM space; see above.")


@aiter.command("compile")
@click.option("--arch", required=True, help="AMD arch: gfx942 or gfx950.")
@click.option("--shape", required=True, help="GEMM shape MxNxK, e.g. 16x4096x4096.")
@click.option("--limit", type=click.IntRange(min=0), default=8, show_default=True,
              help="Feasible configs to compile (0: all).")
@click.option("--seed", type=click.IntRange(0, MAX_SEED), default=0, show_default=True,
              help="Order of the feasible configs.")
@click.option("--workers", type=click.IntRange(min=1), default=1, show_default=True,
              help="Compile worker processes.")
@click.option("--timeout", type=click.FloatRange(min=0, min_open=True), default=AMD_COMPILE_TIMEOUT_S,
              show_default=True, help="Seconds per compile.")
@click.option("--out", default=None, callback=writable_file, help="Write the rows to this CSV file.")
@_user_errors
def aiter_compile(arch: str, shape: str, limit: int, seed: int, workers: int, timeout: float,
                  out: str | None) -> None:
    """Compile feasible configs of aiter's Triton GEMM (space aiter_triton_gemm) for an AMD arch
    on this CPU and show their resources; a config that spills or overflows LDS is rejected.

    Example:

        flysearch aiter compile --arch gfx950 --shape 16x4096x4096 --limit 4 --workers 2
    """
    from flysearch.evaluators import TritonAmdCompileEvaluator
    from flysearch.kernels import aiter_triton_space
    from flysearch.race import write_sweep_csv
    from flysearch.space import get_arch, parse_shape

    target, gemm = get_arch(arch), parse_shape(shape)
    with TritonAmdCompileEvaluator(target.name, timeout_s=timeout, workers=workers) as evaluator:
        space = aiter_triton_space()
        enumeration = space.enumerate(gemm, target)
        configs = enumeration.shuffled(seed)[: limit or None]
        console.print(f"{space.name} on {target.name} at {gemm.key}: {enumeration.summary()}")
        done: list[Compiled] = []
        with progress_display(f"compiling for {target.name}", unit="compiles") as progress:

            def advance(compiled: Compiled) -> None:
                done.append(compiled)
                progress(len(done), len(configs))

            results = evaluator.compile_many(configs, gemm, advance)
        rows = [_row(c, evaluator.resources(c)) for c in results]
    print_compile_rows(rows)
    if out:
        write_sweep_csv(rows, out)
        console.print(f"wrote {len(rows)} rows to {out}")


def _row(compiled: Compiled, resources: dict[str, Any]) -> dict[str, Any]:
    """One config's row, in ``flysearch flydsl compile``'s columns (resources unless it failed)."""
    row: dict[str, Any] = {"key": compiled.config.key, "outcome": compiled.outcome.value,
                           "detail": compiled.detail, "compile_s": compiled.compile_s}
    if compiled.outcome is not Outcome.COMPILE_FAILED:
        row.update(resources)
    return row
