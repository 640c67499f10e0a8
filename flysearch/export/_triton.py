"""Export the best configs of ground-truth tables: a Triton autotune config list and JSON.

Example:
    >>> from flysearch.export import triton_configs_source
    >>> src = triton_configs_source([{"table": "t", "shape": "1x8x8", "time_ms": 0.01,
    ...     "params": {"BLOCK_M": 16, "BLOCK_N": 32, "num_warps": 4, "num_stages": 3}}])
    >>> print(src.split("CONFIGS = [")[1])
    <BLANKLINE>
        # t: 0.01 ms
        triton.Config(
            {'BLOCK_M': 16, 'BLOCK_N': 32},
            num_warps=4, num_stages=3,
        ),
    ]
    <BLANKLINE>
"""

from __future__ import annotations

import ast
import datetime as _dt
import json
import keyword
import reprlib
from pathlib import Path
from typing import Any

from flysearch._atomicfile import write_text_atomic
from flysearch.errors import InputFormatError, MissingTableError
from flysearch.tables import TableStore

__all__ = ["best_configs", "export_json", "export_triton", "triton_configs_source", "with_backends"]

_LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")


def best_configs(store: TableStore, prefix: str = "", top: int = 1, *,
                 kernel: str = "") -> list[dict[str, Any]]:
    """The *top* fastest correct configs of every table whose name starts with *prefix* (and whose
    kernel's name holds *kernel*), by the table's best measurement
    (:meth:`~flysearch.tables.GroundTruth.ranked`: re-timed medians where its top was re-timed;
    ``time_ms`` is then the median and ``race_ms`` the race's single time).

    Raises:
        MissingTableError: no table matches, or none of those matching has a config that ran.
    """
    names = [n for n in store.names() if n.startswith(prefix) and kernel in store.meta(n).kernel]
    if not names:
        what = f"{kernel} table" if kernel else "table"
        raise MissingTableError(
            f"No {what} in {store.path} starts with {prefix!r}; list them with 'flysearch tables list'."
        )
    out = []
    for name in names:
        table = store.load(name)
        shape = table.meta.shape()
        retimed = table.retimed_ms()
        for rank, row in enumerate(table.ranked()[:top]):
            entry = {
                "table": name, "kernel": table.meta.kernel, "rank": rank + 1, "device": table.meta.device,
                "date": table.meta.date,
                "shape": f"{shape.M}x{shape.N}x{shape.K}" if shape else "",
                "problem": table.meta.problem, "key": row.key, "params": dict(row.params),
                "time_ms": retimed.get(row.key, row.time_ms),
            }
            if row.key in retimed:
                entry["race_ms"] = row.time_ms
            out.append(entry)
    if not out:
        raise MissingTableError(
            f"None of the {len(names)} tables starting with {prefix!r} has a config that ran."
        )
    return out


def _split(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    kwargs = {k: v for k, v in params.items() if k not in _LAUNCH_OPTIONS}
    options = {k: params[k] for k in _LAUNCH_OPTIONS if k in params}
    return kwargs, options


def triton_configs_source(entries: list[dict[str, Any]], name: str = "CONFIGS") -> str:
    """Python source of ``triton.autotune`` config lists, one ``triton.Config`` per distinct config.

    Tile sizes go in the kwargs dict; ``num_warps``/``num_stages`` are keyword arguments. Comments
    above each config name the tables (shapes) where it won and its time there. A config list tunes
    one kernel, so entries of several kernels (their ``"kernel"``: the split-K and the fused split-K
    GEMM, say) give one list each, ``{name}_{KERNEL}``; entries of one kernel give the list *name*.

    The file holds data only, whatever the tables hold: every value is a Python literal that reads
    back as itself (:func:`_literal`), a comment that is not printable text is written as a string
    literal (:func:`_comment`), and each list's name is an identifier of ASCII letters, digits and
    underscores.

    Raises:
        InputFormatError: *name* is no Python identifier, or a value has no literal (NaN, infinity).
    """
    if not name.isidentifier() or keyword.iskeyword(name):
        raise InputFormatError(f"Config list name {reprlib.repr(name)} is no Python identifier; give a name "
                               "of letters, digits and underscores that starts with a letter.")
    by_kernel: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        by_kernel.setdefault(str(e.get("kernel", "")), []).append(e)
    lines = [
        f'"""Best configs exported by flysearch on {_dt.date.today().isoformat()}."""',
        "",
        "import triton",
    ]
    several = len(by_kernel) > 1
    list_names = _list_names(name, list(by_kernel)) if several else dict.fromkeys(by_kernel, name)
    for kernel, group in by_kernel.items():
        lines += ["", *([_comment(kernel)] if several else []), f"{list_names[kernel]} = ["]
        lines += _config_lines(group)
        lines.append("]")
    return "\n".join(lines) + "\n"


def _list_names(name: str, kernels: list[str]) -> dict[str, str]:
    """The list name of each kernel, ``{name}_{KERNEL}``: its ASCII letters and digits, upper-cased,
    anything else ``_``; a kernel whose name another's already took gets ``_2``, ``_3``..."""
    out: dict[str, str] = {}
    for kernel in kernels:
        base = f"{name}_" + ("".join(ch if ch.isascii() and ch.isalnum() else "_" for ch in kernel).upper()
                             or "UNNAMED")
        taken = set(out.values())
        out[kernel] = next(n for n in (base, *(f"{base}_{i}" for i in range(2, len(kernels) + 2)))
                           if n not in taken)
    return out


def _literal(value: Any) -> str:
    """*value* as Python source that :func:`ast.literal_eval` reads back as *value*.

    Raises:
        InputFormatError: it has none (a NaN or infinity: ``repr`` gives a bare name).
    """
    text = repr(value)
    try:
        same = ast.literal_eval(text) == value
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        same = False
    if not same:
        raise InputFormatError(f"Config value {reprlib.repr(value)} has no Python literal; export configs "
                               "whose values are numbers, strings, booleans or None.")
    return text


def _comment(text: str) -> str:
    """A one-line comment saying *text*: as it is when printable, else as a string literal (so no line
    break, control or bidi character of a table's name reaches the file)."""
    return "# " + (text if text.isprintable() else repr(text))


def _config_lines(entries: list[dict[str, Any]]) -> list[str]:
    by_key: dict[str, list[dict[str, Any]]] = {}
    for e in entries:
        by_key.setdefault(json.dumps(e["params"], sort_keys=True), []).append(e)
    lines = []
    for key, group in by_key.items():
        kwargs, options = _split(json.loads(key))
        for e in group:
            lines.append("    " + _comment(f"{e['table']}: {e['time_ms']:.4g} ms{_backend_note(e)}"))
        lines.append("    triton.Config(")
        lines.append(f"        {_literal(kwargs)},")
        if options:
            lines.append("        " + ", ".join(f"{k}={_literal(v)}" for k, v in options.items()) + ",")
        lines.append("    ),")
    return lines


def _backend_note(entry: dict[str, Any]) -> str:
    fastest = entry.get("fastest_backend")
    if not fastest:
        return ""
    ratios = ", ".join(f"{k} {v:.3f}" for k, v in sorted(entry.get("backend_ratios", {}).items()))
    return f"; fastest backend here: {fastest} (x cuBLAS: {ratios})"


def with_backends(store: TableStore, entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """*entries* with, per (device, shape), the backend to run there as aiter's ``libtype`` names it
    (:func:`flysearch.race.fastest_backends` over every race table in *store*: each kernel family
    and cuBLAS, each family by its ratio to its own session's cuBLAS time): ``fastest_backend`` and
    ``backend_ratios``. Entries of a shape no race table with a cuBLAS time covers stay as they are."""
    from flysearch.race import fastest_backends, race_summary

    backends = {(b["device"], b["shape"]): b for b in fastest_backends(race_summary(store))}
    out = []
    for entry in entries:
        b = backends.get((entry.get("device"), entry.get("shape")))
        out.append({**entry, "fastest_backend": b["fastest"], "backend_ratios": b["ratios"]} if b else entry)
    return out


def export_json(entries: list[dict[str, Any]]) -> str:
    """The entries as a JSON document (``{"format": "flysearch-best/1", "configs": [...]}``): strict
    JSON, every string escaped to ASCII.

    Raises:
        InputFormatError: a value is a NaN or an infinity, which JSON has no number for.
    """
    try:
        text = json.dumps({"format": "flysearch-best/1", "configs": entries}, indent=1, sort_keys=True,
                          allow_nan=False)
    except ValueError:
        raise InputFormatError("A config value or time is NaN or infinite, which JSON cannot hold; export "
                               "configs whose values and times are finite.") from None
    return text + "\n"


def export_triton(
    db: str | Path, *, prefix: str = "", top: int = 1, out: str | Path | None = None,
    json_out: str | Path | None = None,
) -> str:
    """The *top* best configs of every Triton table in *db* whose name starts with *prefix*
    (:func:`best_configs`) as a ``triton.autotune`` config list (:func:`triton_configs_source`),
    written to *out* when given, and as JSON (:func:`export_json`) to *json_out* when given. Each
    entry names the fastest backend of its shape among the families and cuBLAS raced into *db*
    (:func:`with_backends`).

    Both files are written atomically, and only once every table has been read and both files'
    texts made, so a refused export leaves them as they were. They hold data only, whatever the
    tables' names and values (:func:`triton_configs_source`).

    Returns:
        The Python source (what *out* holds).

    Raises:
        MissingTableError: *db* holds no Triton table starting with *prefix*, or none that ran.
        InputFormatError: a config value has no Python literal or JSON number (NaN, infinity).
    """
    store = TableStore(db, create=False)
    try:
        entries = with_backends(store, best_configs(store, prefix, top, kernel="triton"))
    finally:
        store.close()
    source = triton_configs_source(entries)
    text = export_json(entries) if json_out is not None else ""
    if out is not None:
        write_text_atomic(out, source)
    if json_out is not None:
        write_text_atomic(json_out, text)
    return source
