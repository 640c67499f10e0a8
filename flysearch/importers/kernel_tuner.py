"""Import Kernel Tuner cache files (``.json`` / ``.json.gz``) as ground-truth tables.

A cache holds ``tune_params_keys``, ``tune_params`` and ``cache``: a map from ``"v1,v2,..."`` to the
parameters plus ``time`` (ms) or a failure string (``CompilationFailedConfig``,
``RuntimeFailedConfig``, ...), ``compile_time`` and ``benchmark_time`` (ms). Failed entries are kept as
failure rows, never dropped. Configs absent from the cache were removed by the tuner's restrictions;
the table's space keeps that fact as its ``listed_in_table`` constraint.
"""

from __future__ import annotations

import datetime as _dt
import gzip
import json
import zlib
from pathlib import Path
from typing import Any

from flysearch.arch import arch_of_device
from flysearch.errors import InputFormatError, UnknownArchError
from flysearch.evaluators.base import Outcome
from flysearch.space import Config
from flysearch.tables import Row, TableMeta

__all__ = ["FAILURE_OUTCOMES", "read_kernel_tuner_cache"]

FAILURE_OUTCOMES: dict[str, Outcome] = {
    "CompilationFailedConfig": Outcome.COMPILE_FAILED,
    "RuntimeFailedConfig": Outcome.RUNTIME_FAILED,
    "InvalidConfig": Outcome.REJECTED,
}


def _load_json(path: Path) -> dict[str, Any]:
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
            doc = json.load(fh)
    except FileNotFoundError:
        raise InputFormatError(f"Kernel Tuner cache {path} does not exist.") from None
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError, zlib.error, RecursionError) as exc:
        raise InputFormatError(f"{path} is not a readable Kernel Tuner cache: {exc}.") from None
    if not isinstance(doc, dict):
        raise InputFormatError(f"{path} is not a Kernel Tuner cache: the top level is not an object.")
    return doc


def _default_name(path: Path) -> str:
    stem = path.name.removesuffix(".gz").removesuffix(".json")
    return f"{path.parent.name}/{stem}" if path.parent.name else stem


def _seconds(ms: Any) -> float | None:
    return float(ms) / 1000.0 if isinstance(ms, int | float) else None


def _row(params: dict[str, Any], entry: dict[str, Any]) -> Row:
    key = Config.from_dict(params).key
    value = entry.get("time")
    compile_s = _seconds(entry.get("compile_time"))
    bench_s = _seconds(entry.get("benchmark_time"))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Row(key, params, Outcome.OK.value, float(value), compile_s, bench_s)
    if isinstance(value, str):
        outcome = FAILURE_OUTCOMES.get(value, Outcome.RUNTIME_FAILED)
        return Row(key, params, outcome.value, None, compile_s, bench_s, detail=value)
    raise InputFormatError(f"Cache entry {key!r} has time {value!r}; expected a number or a failure name.")


def read_kernel_tuner_cache(path: str | Path, *, name: str | None = None) -> tuple[TableMeta, list[Row]]:
    """Read a Kernel Tuner cache file into table metadata and rows (nothing is written).

    Args:
        path: The ``.json`` or ``.json.gz`` cache.
        name: Table name; defaults to ``"<folder>/<file stem>"`` (``"convolution_milo/MI250X"``).

    Raises:
        InputFormatError: the file is missing, not JSON, or lacks the cache fields.
    """
    path = Path(path)
    doc = _load_json(path)
    for required in ("tune_params_keys", "tune_params", "cache"):
        if required not in doc:
            raise InputFormatError(f"{path} is not a Kernel Tuner cache: it has no {required!r} field.")
    if not isinstance(doc["cache"], dict) or not isinstance(doc["tune_params_keys"], list):
        raise InputFormatError(
            f"{path} is not a Kernel Tuner cache: 'cache' must be an object and 'tune_params_keys' a list."
        )
    keys = list(doc["tune_params_keys"])
    tune_params = doc["tune_params"]
    if not isinstance(tune_params, dict) or set(keys) - set(tune_params):
        raise InputFormatError(f"{path}: tune_params does not list every key of tune_params_keys.")
    rows = []
    for cache_key, entry in doc["cache"].items():
        if not isinstance(entry, dict):
            raise InputFormatError(f"{path}: cache entry {cache_key!r} is not an object.")
        try:
            params = {k: entry[k] for k in keys}
        except KeyError as exc:
            raise InputFormatError(f"{path}: cache entry {cache_key!r} lacks parameter {exc}.") from None
        rows.append(_row(params, entry))
    if not rows:
        raise InputFormatError(f"{path}: the cache holds no entries.")

    device = str(doc.get("device_name") or "") or path.name.split(".")[0]
    try:
        arch = arch_of_device(device).name
    except UnknownArchError:
        arch = ""
    stamps = [e.get("timestamp") for e in doc["cache"].values() if isinstance(e.get("timestamp"), str)]
    date = min(stamps)[:10] if stamps else _dt.date.fromtimestamp(path.stat().st_mtime).isoformat()
    problem = doc.get("problem_size")
    meta = TableMeta(
        name=name or _default_name(path),
        kernel=str(doc.get("kernel_name") or path.parent.name),
        arch=arch,
        device=device,
        problem={"problem_size": problem} if problem is not None else {},
        space={
            "name": f"kernel_tuner:{doc.get('kernel_name', '')}",
            "params": [{"name": k, "values": list(tune_params[k])} for k in keys],
            "constraints": ["listed_in_table"],
        },
        source=f"Kernel Tuner cache {path.parent.name}/{path.name}",
        date=date,
        versions={"objective": str(doc.get("objective", "time"))},
    )
    return meta, rows
