"""Import Kernel Tuner cache files (``.json`` / ``.json.gz``) as ground-truth tables.

A cache holds ``tune_params_keys``, ``tune_params`` and ``cache``: a map from ``"v1,v2,..."`` to the
parameters plus ``time`` (ms), ``compile_time`` and ``benchmark_time`` (ms). A failed entry names one of
Kernel Tuner's failure names (:data:`FAILURE_OUTCOMES`): older caches (benchmark_hub's) write it as the
``time``, Kernel Tuner 1.5 as an ``__error__`` field beside no time. Failed entries are kept as
failure rows, never dropped; any other time is malformed input. An entry holds its parameter values
as fields or, in caches that keep only the measurements, only in its key. Configs absent from the
cache were removed by the tuner's restrictions; the table's space keeps that fact as its
``listed_in_table`` constraint. What a cache does not say (the GEMM shape, the kernel family, the
arch, flysearch's parameter names) is declared at import (:mod:`flysearch.tables._declare`).

A cache lists each config once, so a key that appears twice in one JSON object (which ``json.load``
would silently collapse, the last one winning) and two cache entries of one config are refused, named
with their line numbers; so is an entry whose key says other values than its fields (``"16,1,1"``
holding ``bx: 999``), which would otherwise silently stand for another config. A time that no table
can hold (NaN, infinite, zero, negative) is refused as every reader refuses it
(:func:`flysearch.tables.check_rows`).
"""

from __future__ import annotations

import datetime as _dt
import gzip
import json
import re
import sys
import zlib
from collections.abc import Generator
from pathlib import Path
from typing import Any

from flysearch.errors import InputFormatError, UnknownArchError
from flysearch.space import Config, arch_of_device
from flysearch.tables._outcome import Outcome
from flysearch.tables._store import Row, TableMeta, check_rows

__all__ = ["FAILURE_OUTCOMES", "read_kernel_tuner_cache"]

FAILURE_OUTCOMES: dict[str, Outcome] = {
    "CompilationFailedConfig": Outcome.COMPILE_FAILED,
    "RuntimeFailedConfig": Outcome.RUNTIME_FAILED,
    "InvalidConfig": Outcome.REJECTED,
}


_UNLISTED = object()


class _RepeatedMember(Exception):
    """Raised by :func:`_unique_members` inside ``json.loads`` to stop at a repeated member name."""


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` that refuses an object naming a member twice (``json`` keeps the last)."""
    result = dict(pairs)
    if len(result) != len(pairs):
        raise _RepeatedMember
    return result


_WHITESPACE = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
_Where = tuple[str | int, ...]  # the member names (and array indices) that lead to one object


def _skip(text: str, idx: int) -> int:
    return _WHITESPACE.match(text, idx).end()  # type: ignore[union-attr]  # it matches "" too


def _members(text: str, idx: int, where: _Where, depth: int) -> Generator[tuple[_Where, str, int], None, int]:
    """Yield ``(where, name, offset)`` for each object member inside the JSON value at *idx*, in
    document order, down to *depth* containers deep, and return the value's end. Only run on *text*
    that ``json.loads`` accepted, to find where a member is: ``json`` reports no positions."""
    idx = _skip(text, idx)
    opener = text[idx]
    if opener not in "{[" or len(where) >= depth:
        return _DECODER.raw_decode(text, idx)[1]
    idx = _skip(text, idx + 1)
    closer, count = ("}" if opener == "{" else "]"), 0
    while text[idx] != closer:
        inner: _Where = (*where, count)
        if opener == "{":
            name, end = json.decoder.scanstring(text, idx + 1)
            yield where, name, idx
            idx, inner = _skip(text, end) + 1, (*where, name)  # + 1: past the ':'
        idx = _skip(text, (yield from _members(text, idx, inner, depth)))
        if text[idx] == ",":
            idx = _skip(text, idx + 1)
        count += 1
    return idx + 1


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def _owner(where: _Where, name: str) -> str:
    """How an error names member *name* of the object at *where*."""
    if where == ("cache",):
        return f"cache key {name!r}"
    if len(where) == 2 and where[0] == "cache":
        return f"key {name!r} of cache entry {where[1]!r}"
    return f"key {name!r} of {'/'.join(map(str, where)) or 'the top level'}"


def _repeat_error(path: Path, text: str) -> InputFormatError:
    """Name the first member name that repeats within one object of *text*, with both its lines."""
    seen: dict[tuple[_Where, str], int] = {}
    try:
        for where, name, offset in _members(text, 0, (), sys.maxsize):
            first = seen.setdefault((where, name), offset)
            if first != offset:
                return InputFormatError(
                    f"{path}:{_line(text, offset)}: {_owner(where, name)} appears twice (first on line "
                    f"{_line(text, first)}); a cache lists each key once: keep the entry you measured."
                )
    except RecursionError:  # nested deeper than this walk can follow: name the file only
        pass
    return InputFormatError(f"{path}: a key appears twice in one object; a cache lists each key once.")


def _cache_line(text: str, cache_key: str) -> int:
    """The line of *cache_key* in the top-level ``cache`` object (the file lists it once)."""
    return next(_line(text, off) for where, name, off in _members(text, 0, (), 2)
                if where == ("cache",) and name == cache_key)


def _load_json(path: Path) -> tuple[dict[str, Any], str]:
    """The cache's top-level object and its (decompressed) text, whose lines errors name."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as fh:  # type: ignore[operator]
            text = fh.read()
        doc = json.loads(text, object_pairs_hook=_unique_members)
    except FileNotFoundError:
        raise InputFormatError(f"Kernel Tuner cache {path} does not exist.") from None
    except _RepeatedMember:
        raise _repeat_error(path, text) from None
    except (OSError, EOFError, UnicodeDecodeError, json.JSONDecodeError, zlib.error, RecursionError) as exc:
        raise InputFormatError(f"{path} is not a readable Kernel Tuner cache: {exc}.") from None
    if not isinstance(doc, dict):
        raise InputFormatError(f"{path} is not a Kernel Tuner cache: the top level is not an object.")
    return doc, text


def _default_name(path: Path) -> str:
    stem = path.name.removesuffix(".gz").removesuffix(".json")
    return f"{path.parent.name}/{stem}" if path.parent.name else stem


def _seconds(ms: Any) -> float | None:
    return float(ms) / 1000.0 if isinstance(ms, int | float) else None


def _outcome(entry: dict[str, Any]) -> tuple[Outcome, float | None, str] | None:
    """The entry's outcome, time (ms) and failure name; ``None`` when its time or error is malformed."""
    if "__error__" in entry:  # Kernel Tuner 1.5: the failure's class name, and no time
        error = entry["__error__"]
        known = isinstance(error, str) and error in FAILURE_OUTCOMES
        return (FAILURE_OUTCOMES[error], None, error) if known else None
    value = entry.get("time")
    if isinstance(value, int | float) and not isinstance(value, bool):
        return Outcome.OK, float(value), ""
    if isinstance(value, str) and value in FAILURE_OUTCOMES:  # older caches: the name as the time
        return FAILURE_OUTCOMES[value], None, value
    return None


def _malformed(path: Path, text: str, cache_key: str, entry: dict[str, Any]) -> InputFormatError:
    """The error for an entry whose ``__error__`` (or else ``time``) :func:`_outcome` refused."""
    field = "__error__" if "__error__" in entry else "time"
    held = f"{field} {entry[field]!r}" if field in entry else f"no {field}"
    expected = "a time in ms or " if field == "time" else ""
    return InputFormatError(
        f"{path}:{_cache_line(text, cache_key)}: cache entry {cache_key!r} has {held}; expected "
        f"{expected}one of Kernel Tuner's failure names ({', '.join(FAILURE_OUTCOMES)})."
    )


def _params(path: Path, text: str, cache_key: str, entry: dict[str, Any], keys: list[str],
            tune_params: dict[str, list[Any]]) -> dict[str, Any]:
    """The entry's parameter values: its own fields, or, in caches that store only the measurements
    (Schoonhoven et al.'s), the values its key lists in ``tune_params_keys`` order, each read back as
    the ``tune_params`` value it prints as."""
    parts = cache_key.split(",")
    if all(k in entry for k in keys):
        params = {k: entry[k] for k in keys}
        _check_key(path, text, cache_key, parts, params)
        return params
    if len(parts) != len(keys):
        missing = next(k for k in keys if k not in entry)
        raise InputFormatError(
            f"{path}: cache entry {cache_key!r} lacks parameter {missing!r}, and its key lists "
            f"{len(parts)} values for the {len(keys)} parameters of tune_params_keys."
        )
    params = {}
    for k, part in zip(keys, parts, strict=True):
        if k in entry:
            params[k] = entry[k]
            continue
        value = next((v for v in tune_params[k] if str(v) == part.strip()), _UNLISTED)
        if value is _UNLISTED:
            raise InputFormatError(
                f"{path}: cache entry {cache_key!r} gives {k} = {part!r} in its key, which tune_params "
                f"does not list for {k} ({', '.join(map(str, tune_params[k]))})."
            )
        params[k] = value
    _check_key(path, text, cache_key, parts, params)
    return params


def _prints_as(value: Any, part: str) -> bool:
    """Whether *value* is what the key's *part* says: Kernel Tuner writes ``str(value)``; a number
    also matches another spelling of itself (``16`` and ``16.0``)."""
    part = part.strip()
    if str(value) == part:
        return True
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            return float(part) == value
        except ValueError:
            return False
    return False


def _check_key(path: Path, text: str, cache_key: str, parts: list[str], params: dict[str, Any]) -> None:
    """Refuse an entry whose key says other values than its fields: Kernel Tuner writes the key as
    the values in ``tune_params_keys`` order, so a disagreement is an edited or corrupted entry, and
    taking either side would silently replace one config by another."""
    if len(parts) == len(params):
        wrong = next(((k, part) for (k, v), part in zip(params.items(), parts, strict=True)
                      if not _prints_as(v, part)), None)
        if wrong is None:
            return
        name, part = wrong
        held = f"{name} {params[name]!r} where its key says {part.strip()}"
    else:  # a value holds a comma (a tuple): compare the whole printed key
        printed = ",".join(str(v) for v in params.values())
        if [p.strip() for p in printed.split(",")] == [p.strip() for p in parts]:
            return
        held = f"the values {printed!r}"
    raise InputFormatError(
        f"{path}:{_cache_line(text, cache_key)}: cache entry {cache_key!r} holds {held}; a key lists its "
        "entry's values in tune_params_keys order: correct the key or the value."
    )


def _rows(path: Path, text: str, cache: dict[str, Any], keys: list[str],
          tune_params: dict[str, list[Any]]) -> list[Row]:
    """One row per cache entry, refusing a malformed entry and a config that two entries list."""
    rows: list[Row] = []
    listed: dict[str, str] = {}  # row key -> the cache key that listed it first
    for cache_key, entry in cache.items():
        if not isinstance(entry, dict):
            raise InputFormatError(f"{path}: cache entry {cache_key!r} is not an object.")
        params = _params(path, text, cache_key, entry, keys, tune_params)
        outcome = _outcome(entry)
        if outcome is None:
            raise _malformed(path, text, cache_key, entry)
        key = Config.from_dict(params).key
        first = listed.setdefault(key, cache_key)
        if first != cache_key:
            raise InputFormatError(
                f"{path}:{_cache_line(text, cache_key)}: cache entry {cache_key!r} holds the config of "
                f"entry {first!r} (line {_cache_line(text, first)}); a cache lists each config once."
            )
        kind, time_ms, detail = outcome
        compile_s, bench_s = _seconds(entry.get("compile_time")), _seconds(entry.get("benchmark_time"))
        rows.append(Row(key, params, kind.value, time_ms, compile_s, bench_s, detail=detail))
    return rows


def read_kernel_tuner_cache(path: str | Path, *, name: str | None = None) -> tuple[TableMeta, list[Row]]:
    """Read a Kernel Tuner cache file into table metadata and rows (nothing is written).

    Args:
        path: The ``.json`` or ``.json.gz`` cache.
        name: Table name; defaults to ``"<folder>/<file stem>"`` (``"convolution_milo/MI250X"``).

    Raises:
        InputFormatError: the file is missing, not JSON, or lacks the cache fields; a key appears
            twice in one object or two entries list one config; an entry's key disagrees with its
            values; an entry's time is neither a number nor one of Kernel Tuner's failure names, or
            is a number no table can hold (not finite and > 0).
    """
    path = Path(path)
    doc, text = _load_json(path)
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
    if not all(isinstance(tune_params[k], list) for k in keys):
        raise InputFormatError(f"{path}: tune_params must map each parameter to a list of its values.")
    rows = _rows(path, text, doc["cache"], keys, tune_params)
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
    check_rows(meta.name, rows, source=path)
    return meta, rows
