"""Read aiter's bf16 GEMM CSVs: tuned files (one winner per GEMM) and tuner profiles (every candidate).

Both have one header, :data:`TUNED_HEADER`. The first ten columns are aiter's lookup key
(:data:`KEY_COLUMNS`); aiter's runtime (``aiter/tuned_gemm.py``, ``get_GEMM_A16W16_config_``) reads
the file named by ``AITER_CONFIG_GEMM_BF16`` with ``pandas.read_csv``, indexes it by that key
(``dtype``/``outdtype`` as ``str(torch dtype)``, e.g. ``torch.bfloat16``; ``bias``, ``scaleAB`` and
``bpreshuffle`` as ``True``/``False``) and, for ``libtype == "flydsl"``, rebuilds the kernel from
``kernelName`` alone. The tuner's ``-o2`` profile (``aiter/utility/base_tuner.py``,
``post_process``) holds every candidate with ``us = -1`` for an unsupported or failed one and
``us = inf`` for a timeout.

Importing gives one ground-truth table per ``(gfx, cu_num, M, N, K)`` (and per bias/dtype/scale
variant, which is part of aiter's key). FlyDSL rows are configs of the ``aiter_flydsl_hgemm``
space; rows of other backends are kept as those backends' records (``Row.extra["libtype"]``),
keyed ``libtype=...,kernel=...,solidx=...,splitK=...``. Two rows that are one config of one table
(the same table name and row key) are refused, naming both lines, never merged.

Writing a tuned CSV for aiter (a table's fastest FlyDSL config per aiter key) is
:mod:`flysearch.export`'s part; ``flysearch tables import FILE.csv`` imports these files.

Example:
    >>> import tempfile, pathlib
    >>> from flysearch.tables import read_aiter_csv
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "tuned.csv"
    >>> name = ("flydsl_gemm5_abf16_wbf16_bf16_t16x64x128_split_k2_block_m_warp1_block_n_warp2"
    ...         "_block_k_warp1_async_copyTrue_b_to_ldsTrue_b_preshuffleFalse_c_to_ldsFalse_gfx950")
    >>> _ = path.write_text(",".join(TUNED_HEADER) + "\\ngfx950,256,1,6144,2048,False,torch.bfloat16,"
    ...     "torch.bfloat16,False,False,flydsl,3161,2,10.8611," + name + ",0.0438,2.32,2318.57\\n")
    >>> [(r.libtype, r.splitK, r.us) for r in read_aiter_csv(path)]
    [('flydsl', 2, 10.8611)]
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flysearch.errors import InputFormatError, UnknownArchError
from flysearch.kernels import SPACE_NAME, aiter_hgemm_space, parse_kernel_name
from flysearch.space import Config, Shape, get_arch
from flysearch.tables._outcome import Outcome
from flysearch.tables._store import Row, TableMeta, check_rows

__all__ = [
    "KEY_COLUMNS",
    "TORCH_DTYPES",
    "TUNED_HEADER",
    "AiterRecord",
    "check_flydsl_records",
    "read_aiter_csv",
    "read_profile_csv",
    "read_tuned_csv",
    "records_to_tables",
]

TUNED_HEADER: tuple[str, ...] = (
    "gfx", "cu_num", "M", "N", "K", "bias", "dtype", "outdtype", "scaleAB", "bpreshuffle",
    "libtype", "solidx", "splitK", "us", "kernelName", "err_ratio", "tflops", "bw",
)
KEY_COLUMNS: tuple[str, ...] = TUNED_HEADER[:10]

TORCH_DTYPES: dict[str, str] = {
    "torch.bfloat16": "bf16", "torch.float16": "fp16", "torch.float32": "fp32",
    "torch.float8_e4m3fnuz": "fp8", "torch.float8_e4m3fn": "fp8",
}
"""aiter's dtype spellings (``str(torch.dtype)``) and flysearch's names for them."""

_INT_COLUMNS = ("cu_num", "M", "N", "K", "solidx", "splitK")
_FLOAT_COLUMNS = ("us", "err_ratio", "tflops", "bw")
_POSITIVE_COLUMNS = ("cu_num", "M", "N", "K")
_BOOL_COLUMNS = ("bias", "scaleAB", "bpreshuffle")
_NULLS = ("", "Null", "nan", "NaN", "None")


@dataclass(frozen=True)
class AiterRecord:
    """One row of an aiter tuned or profile CSV, typed (see :data:`TUNED_HEADER`).

    ``err_ratio``, ``tflops`` and ``bw`` are ``None`` where the profile wrote ``Null``.
    """

    gfx: str
    cu_num: int
    M: int
    N: int
    K: int
    bias: bool
    dtype: str
    outdtype: str
    scaleAB: bool
    bpreshuffle: bool
    libtype: str
    solidx: int
    splitK: int
    us: float
    kernelName: str
    err_ratio: float | None
    tflops: float | None
    bw: float | None

    @property
    def key(self) -> tuple[Any, ...]:
        """aiter's lookup key: the first ten columns."""
        return tuple(getattr(self, name) for name in KEY_COLUMNS)

    def cells(self) -> list[str]:
        """The row's text cells in :data:`TUNED_HEADER` order, as aiter's tuner writes them."""
        return [_cell(getattr(self, name)) for name in TUNED_HEADER]


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    return str(value)


def _parse_cell(path: Path, line: int, column: str, text: str) -> Any:
    text = text.strip()
    try:
        if column in _INT_COLUMNS:
            if text in ("", "None"):
                return 0
            number = float(text)
            low = 1 if column in _POSITIVE_COLUMNS else 0
            if not number.is_integer() or not low <= number < 2**53:
                raise ValueError(text)
            return int(number)
        if column in _FLOAT_COLUMNS:
            if text in _NULLS:
                if column == "us":
                    raise ValueError(text)
                return None
            return float(text)
        if column in _BOOL_COLUMNS:
            if text not in ("True", "False"):
                raise ValueError(text)
            return text == "True"
    except ValueError:
        if column in _BOOL_COLUMNS:
            kind = "True/False value"
        elif column in _INT_COLUMNS:
            kind = f"whole number >= {1 if column in _POSITIVE_COLUMNS else 0}"
        else:
            kind = "number"
        raise InputFormatError(
            f"{path}:{line}: column {column!r} holds {text!r}, not a {kind}; fix or drop that row."
        ) from None
    return "" if text == "Null" else text


def read_aiter_csv(path: str | Path) -> list[AiterRecord]:
    """Read an aiter tuned or profile CSV (extra columns are ignored, as aiter ignores them).

    Raises:
        InputFormatError: the file is missing, lacks a column of :data:`TUNED_HEADER`, or holds
            a cell that is not a number (or True/False) where aiter writes one.
    """
    return [record for _line, record in _numbered_records(Path(path))]


def _numbered_records(path: Path) -> list[tuple[int, AiterRecord]]:
    """:func:`read_aiter_csv`'s records, each with its line in the file (for errors that name it)."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:  # a spreadsheet's BOM is no column
            reader = csv.reader(fh)
            header = [h.strip() for h in next(reader, [])]
            missing = [c for c in TUNED_HEADER if c not in header]
            if missing:
                raise InputFormatError(
                    f"{path} is not an aiter tuned/profile CSV: it lacks column(s) {missing}; the "
                    f"header must hold {','.join(TUNED_HEADER)}."
                )
            index = {c: header.index(c) for c in TUNED_HEADER}
            records: list[tuple[int, AiterRecord]] = []
            for line, cells in enumerate(reader, start=2):
                if not any(cell.strip() for cell in cells):
                    continue
                if len(cells) < len(header):
                    raise InputFormatError(
                        f"{path}:{line}: the row has {len(cells)} cells, the header {len(header)}; "
                        "fix the row or drop it."
                    )
                values = {c: _parse_cell(path, line, c, cells[i]) for c, i in index.items()}
                records.append((line, AiterRecord(**values)))
    except FileNotFoundError:
        raise InputFormatError(f"aiter CSV {path} does not exist; pass an existing file.") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputFormatError(f"{path} is not a readable CSV ({exc}); pass an aiter tuned CSV.") from None
    return records


# -- import as ground-truth tables -----------------------------------------------------------------


def _arch_and_device(gfx: str, cu_num: int) -> tuple[str, str]:
    try:
        arch = get_arch(gfx)
    except UnknownArchError:
        return "", f"{gfx} ({cu_num} CUs)"
    for device in arch.devices:
        if device.compute_units == cu_num:
            return arch.name, device.name
    return arch.name, f"{gfx} ({cu_num} CUs)"


def _variant(r: AiterRecord) -> str:
    tags = []
    if r.dtype != "torch.bfloat16":
        tags.append(f"in_{TORCH_DTYPES.get(r.dtype, r.dtype)}")
    if r.outdtype != r.dtype:
        tags.append(f"out_{TORCH_DTYPES.get(r.outdtype, r.outdtype)}")
    tags += [flag for flag in _BOOL_COLUMNS if getattr(r, flag)]
    return "".join(f"+{t}" for t in tags)


def table_name(prefix: str, r: AiterRecord) -> str:
    """``"<prefix>/<gfx>/cu<cu_num>/<M>x<N>x<K>"`` plus ``+bias``-style tags for non-default keys.

    Example:
        >>> r = AiterRecord("gfx950", 256, 1, 6144, 2048, True, "torch.bfloat16", "torch.float32",
        ...                 False, False, "asm", 0, 1, 9.5, "k", 0.0, 1.0, 1.0)
        >>> table_name("bf16_tuned_gemm", r)
        'bf16_tuned_gemm/gfx950/cu256/1x6144x2048+out_fp32+bias'
    """
    return f"{prefix}/{r.gfx}/cu{r.cu_num}/{r.M}x{r.N}x{r.K}{_variant(r)}"


def _outcome(r: AiterRecord, err_ratio_limit: float | None) -> tuple[str, float | None, str]:
    if r.us == -1 or r.us < 0:
        return Outcome.RUNTIME_FAILED.value, None, "aiter: unsupported or failed (us=-1)"
    if math.isinf(r.us) or math.isnan(r.us):
        return Outcome.RUNTIME_FAILED.value, None, f"aiter: timed out or crashed (us={r.us})"
    if r.us == 0:
        return Outcome.RUNTIME_FAILED.value, None, "aiter: no timing recorded (us=0)"
    if err_ratio_limit is not None and (r.err_ratio is None or r.err_ratio > err_ratio_limit):
        # NOTE(aiter base_tuner.py, post_process): a candidate counts only if err <= errRatio; a
        # missing (NaN, written "Null") ratio fails that test too.
        shown = "unknown" if r.err_ratio is None else r.err_ratio
        detail = f"aiter: err_ratio {shown} is not <= {err_ratio_limit}"
        return Outcome.WRONG_RESULT.value, r.us / 1000.0, detail
    return Outcome.OK.value, r.us / 1000.0, ""


def _clean(text: str) -> str:
    return text.replace(",", "_").replace("=", "_")


def record_row(r: AiterRecord, err_ratio_limit: float | None = None) -> Row:
    """One record as a table row: a config of the FlyDSL space, or another backend's record.

    Raises:
        InputFormatError: a FlyDSL row whose kernel name does not parse for the row's gfx.
    """
    outcome, time_ms, detail = _outcome(r, err_ratio_limit)
    extra: dict[str, Any] = {
        "libtype": r.libtype, "kernelName": r.kernelName, "solidx": r.solidx, "splitK": r.splitK,
        "us": r.us if math.isfinite(r.us) else str(r.us), "err_ratio": r.err_ratio,
        "tflops": r.tflops, "bw": r.bw,
    }
    if r.libtype == "flydsl":
        parsed = parse_kernel_name(r.kernelName, arch=r.gfx)
        extra["kernel_dtype"], extra["kernel_out_dtype"] = parsed.dtype, parsed.out_dtype
        config = parsed.config
    else:
        config = Config.from_dict({
            "libtype": _clean(r.libtype), "kernel": _clean(r.kernelName),
            "solidx": r.solidx, "splitK": r.splitK,
        })
    return Row(config.key, config.as_dict(), outcome, time_ms, detail=detail, extra=extra)


def records_to_tables(
    records: Iterable[AiterRecord], *, prefix: str, source: str, err_ratio_limit: float | None = None,
) -> list[tuple[TableMeta, list[Row]]]:
    """Group records into one table per aiter key (``gfx, cu_num, M, N, K`` and its variant).

    Raises:
        InputFormatError: two records are one config of one table (see :func:`_grouped`); the
            error names them by their 1-based position in *records*.
    """
    return _grouped(enumerate(records, start=1), None, prefix, source, err_ratio_limit)


def _repeat(origin: Path | None, at: int, first: int, name: str, key: str) -> InputFormatError:
    where, unit = (f"{origin}:{at}", "line") if origin is not None else (f"Record {at}", "record")
    return InputFormatError(
        f"{where}: config {key!r} of table {name!r} repeats {unit} {first}; keep one row per config."
    )


def _grouped(
    numbered: Iterable[tuple[int, AiterRecord]], origin: Path | None, prefix: str, source: str,
    err_ratio_limit: float | None,
) -> list[tuple[TableMeta, list[Row]]]:
    """:func:`records_to_tables` over records numbered by their line in *origin* (or, without
    one, their position). A table holds one row per config, so a second record of a table's
    config is refused, not let replace the first: a copied or planted row would otherwise
    silently become the measurement (or the table's optimum)."""
    groups: dict[str, tuple[AiterRecord, dict[str, Row]]] = {}
    seen: dict[tuple[str, str], int] = {}  # (table, row key) -> the number that listed it first
    for at, r in numbered:
        name = table_name(prefix, r)
        _first, rows = groups.setdefault(name, (r, {}))
        row = record_row(r, err_ratio_limit)
        first = seen.setdefault((name, row.key), at)
        if first != at:
            raise _repeat(origin, at, first, name, row.key)
        rows[row.key] = row
    space = aiter_hgemm_space().to_json()
    out = []
    for name, (r, rows) in groups.items():
        arch, device = _arch_and_device(r.gfx, r.cu_num)
        problem = {
            "M": r.M, "N": r.N, "K": r.K, "dtype": TORCH_DTYPES.get(r.dtype, "bf16"),
            "gfx": r.gfx, "cu_num": r.cu_num, "bias": r.bias, "aiter_dtype": r.dtype,
            "aiter_outdtype": r.outdtype, "scaleAB": r.scaleAB, "bpreshuffle": r.bpreshuffle,
        }
        libs = sorted({str(row.extra["libtype"]) for row in rows.values()})
        notes = f"aiter backends: {', '.join(libs)}"
        meta = TableMeta(
            name=name, kernel=SPACE_NAME, arch=arch, device=device, problem=problem, space=space,
            source=source, versions={"format": "aiter bf16 gemm csv"}, notes=notes,
        )
        check_rows(name, rows.values(), source=origin)
        out.append((meta, list(rows.values())))
    return out


def read_tuned_csv(path: str | Path, *, prefix: str | None = None) -> list[tuple[TableMeta, list[Row]]]:
    """Import an aiter tuned CSV: per aiter key, a table holding that key's winner.

    Args:
        path: ``bf16_tuned_gemm.csv`` or a ``model_configs/*_bf16_tuned_gemm.csv``.
        prefix: Table-name prefix; defaults to the file's stem.

    Raises:
        InputFormatError: the CSV is malformed (:func:`read_aiter_csv`), or two of its rows are
            one config of one table (named with both lines).
    """
    path = Path(path)
    return _grouped(_numbered_records(path), path, prefix or path.stem, f"aiter tuned CSV {path.name}", None)


def read_profile_csv(
    path: str | Path, *, prefix: str | None = None, err_ratio_limit: float = 0.05
) -> list[tuple[TableMeta, list[Row]]]:
    """Import an aiter tuner profile (``-o2``): per aiter key, a table of every candidate.

    ``us = -1`` and ``us = inf`` rows become ``runtime_failed`` (aiter does not tell a compile
    failure from a launch failure), and a candidate whose ``err_ratio`` exceeds
    *err_ratio_limit* (the tuner's ``--errRatio``, 0.05 by default) becomes ``wrong_result``.
    A config listed twice for one table is refused, as in :func:`read_tuned_csv`.
    """
    path = Path(path)
    source = f"aiter tuner profile {path.name}"
    return _grouped(_numbered_records(path), path, prefix or path.stem, source, err_ratio_limit)


# -- check -----------------------------------------------------------------------------------------


def check_flydsl_records(records: Iterable[AiterRecord]) -> tuple[int, list[str]]:
    """Parse every FlyDSL record and check it against the space's constraints at its own shape.

    Returns the number of FlyDSL records and one line per record that fails (empty when all
    pass); rows for archs flysearch has no profile of are checked by name only.
    """
    space = aiter_hgemm_space()
    count, failures = 0, []
    for r in records:
        if r.libtype != "flydsl":
            continue
        count += 1
        where = f"{r.gfx}/{r.cu_num} {r.M}x{r.N}x{r.K} {r.kernelName}"
        try:
            config = parse_kernel_name(r.kernelName, arch=r.gfx).config
            arch = get_arch(r.gfx)
        except UnknownArchError:
            continue
        except InputFormatError as exc:
            failures.append(f"{where}: {exc}")
            continue
        reason = space.reject_reason(config, Shape(r.M, r.N, r.K), arch)
        if reason is not None:
            failures.append(f"{where}: rejected by {reason}")
        elif config["split_k"] != r.splitK:
            failures.append(f"{where}: splitK column {r.splitK} differs from the name's split_k")
    return count, failures
