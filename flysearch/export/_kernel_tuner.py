"""Write a table as a Kernel Tuner cache, which Kernel Tuner's simulation mode replays.

A cache holds the parameter names in order (``tune_params_keys``), their values (``tune_params``)
and one entry per config, keyed by its values joined with commas, with the time in ms; a failed
config has its failure name (``CompilationFailedConfig``, ``RuntimeFailedConfig``) as its time, as
Kernel Tuner's own caches write it. Only the configs the table holds are listed: a config the
table lacks is one Kernel Tuner's restrictions removed. :func:`flysearch.tables.read_kernel_tuner_cache`
reads the file back.

Example:
    >>> from flysearch.tables import GroundTruth, Row, TableMeta
    >>> meta = TableMeta("t", "gemm", "sm_90", "NVIDIA H200", {"M": 1, "N": 64, "K": 64},
    ...                  {"name": "s", "params": [{"name": "BLOCK_M", "values": [16, 32]}]})
    >>> table = GroundTruth(meta, {"BLOCK_M=16": Row("BLOCK_M=16", {"BLOCK_M": 16}, "ok", 1.5),
    ...                            "BLOCK_M=32": Row("BLOCK_M=32", {"BLOCK_M": 32}, "compile_failed", None)})
    >>> cache = kernel_tuner_cache(table, rename={"BLOCK_M": "BM"})
    >>> cache["tune_params_keys"], cache["cache"]["16"]["time"], cache["cache"]["32"]["time"]
    (['BM'], 1.5, 'CompilationFailedConfig')
"""

from __future__ import annotations

import gzip
import json
import reprlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flysearch._atomicfile import atomic_write
from flysearch.errors import InputFormatError
from flysearch.tables import FAILURE_OUTCOMES, GroundTruth

__all__ = ["kernel_tuner_cache", "write_kernel_tuner_cache"]

_FAILURE_NAMES = {outcome.value: name for name, outcome in FAILURE_OUTCOMES.items()}


def kernel_tuner_cache(table: GroundTruth, *, rename: Mapping[str, str] | None = None,
                       problem_size: list[int] | None = None) -> dict[str, Any]:
    """The Kernel Tuner cache of *table*, as a JSON-ready dict.

    Args:
        table: The table; its parameters are those of its space, in order.
        rename: Parameter names, flysearch's -> the cache's (``{"BLOCK_M": "BM"}``).
        problem_size: The cache's ``problem_size``; default: the table's ``[M, N, K]``.

    Raises:
        InputFormatError: *rename* names a parameter the table lacks, or gives two one name.
    """
    rename = dict(rename or {})
    names = [p["name"] for p in table.meta.space.get("params", [])]
    unknown = sorted(set(rename) - set(names))
    if unknown:
        raise InputFormatError(f"Table {table.name!r} has no parameter {', '.join(unknown)} to rename.")
    keys = [rename.get(n, n) for n in names]
    if len(set(keys)) != len(keys):
        raise InputFormatError(f"The renames give two parameters one name: {', '.join(keys)}.")
    shape = table.meta.shape()
    cache: dict[str, Any] = {}
    for row in sorted(table.rows.values(), key=lambda r: [str(r.params[n]) for n in names]):
        entry: dict[str, Any] = {k: row.params[n] for k, n in zip(keys, names, strict=True)}
        if row.ok:
            entry["time"] = row.time_ms
        else:
            entry["time"] = _FAILURE_NAMES.get(row.outcome, "RuntimeFailedConfig")
        if row.compile_s is not None:
            entry["compile_time"] = row.compile_s * 1000.0
        if row.bench_s is not None:
            entry["benchmark_time"] = row.bench_s * 1000.0
        cache[",".join(str(row.params[n]) for n in names)] = entry  # as Kernel Tuner keys it
    used = {n: sorted({r.params[n] for r in table.rows.values()}, key=str) for n in names}
    values = {rename.get(p["name"], p["name"]): [v for v in p["values"] if v in used[p["name"]]]
              or used[p["name"]] for p in table.meta.space.get("params", [])}
    return {
        "device_name": table.meta.device,
        "kernel_name": table.meta.kernel,
        "problem_size": problem_size if problem_size is not None else (
            [shape.M, shape.N, shape.K] if shape is not None else table.meta.problem.get("problem_size", [])),
        "tune_params_keys": keys,
        "tune_params": values,
        "objective": "time",
        "cache": cache,
    }


def write_kernel_tuner_cache(table: GroundTruth, path: str | Path, *, rename: Mapping[str, str] | None = None,
                             problem_size: list[int] | None = None) -> Path:
    """Write :func:`kernel_tuner_cache` of *table* to *path* (gzip when it ends in ``.gz``), whole or
    not at all, as strict JSON with every string escaped to ASCII; return the path.

    Raises:
        InputFormatError: as :func:`kernel_tuner_cache`, or a value is a NaN or an infinity (JSON has
            no number for it).
    """
    path = Path(path)
    try:
        text = json.dumps(kernel_tuner_cache(table, rename=rename, problem_size=problem_size), indent=1,
                          allow_nan=False)
    except ValueError:
        raise InputFormatError(f"Table {reprlib.repr(table.name)} holds a NaN or infinite value, which JSON "
                               "cannot hold; export a table whose values are finite.") from None
    if path.name.endswith(".gz"):
        with atomic_write(path, "wb") as fh:
            fh.write(gzip.compress(text.encode(), mtime=0))
    else:
        with atomic_write(path) as fh:
            fh.write(text)
    return path

