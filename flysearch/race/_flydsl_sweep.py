"""Compile a FlyDSL space for an AMD arch on the CPU and tabulate resources and occupancy.

Example::

    flysearch flydsl compile --space flydsl_gemm --arch gfx950 --shape 256x256x256 --limit 8
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flysearch._atomicfile import atomic_write
from flysearch.evaluators import FlydslCompileEvaluator
from flysearch.tables import Outcome

if TYPE_CHECKING:
    from flysearch.space import Config, Shape

__all__ = ["SWEEP_COLUMNS", "compile_sweep", "write_sweep_csv"]

SWEEP_COLUMNS = ("key", "outcome", "detail", "compile_s", "vgpr", "agpr", "sgpr", "lds_bytes",
                 "scratch_bytes", "vgpr_spills", "sgpr_spills", "max_threads", "occupancy")


def compile_sweep(
    evaluator: FlydslCompileEvaluator, configs: Iterable[Config], shape: Shape,
    progress: Callable[[int], None] | None = None,
) -> list[dict[str, Any]]:
    """Compile each config; one row per config with its outcome, compile time and resources."""
    rows = []
    for i, config in enumerate(configs, 1):
        compiled = evaluator.compile(config, shape)
        row: dict[str, Any] = {"key": config.key, "outcome": compiled.outcome.value,
                               "detail": compiled.detail, "compile_s": compiled.compile_s}
        if compiled.outcome is not Outcome.COMPILE_FAILED:
            row.update({k: v for k, v in evaluator.resources(compiled).items() if k in SWEEP_COLUMNS})
        rows.append(row)
        if progress is not None:
            progress(i)
    return rows


def write_sweep_csv(rows: list[dict[str, Any]], path: str | Path) -> None:
    """Write *rows* as CSV atomically (:func:`~flysearch._atomicfile.atomic_write`)."""
    path = Path(path)
    with atomic_write(path, newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=SWEEP_COLUMNS, extrasaction="ignore")
        writer.writeheader()
        writer.writerows(rows)
