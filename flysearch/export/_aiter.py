"""``flysearch export aiter``: each table's fastest FlyDSL config, written as an aiter tuned CSV.

aiter's runtime reads the file named by ``AITER_CONFIG_GEMM_BF16`` and indexes it by its first ten
columns (aiter's key: gfx, CUs, M, N, K, bias, dtypes, scaling, preshuffle), so a tuned CSV holds one
winner per aiter key: when two tables map to one key the faster record is written. Reading aiter's
CSVs (tuned files and tuner profiles) is :mod:`flysearch.tables`' part; this module only writes them.

Example:
    >>> import tempfile, pathlib
    >>> from flysearch.tables import TUNED_HEADER, import_tables
    >>> name = ("flydsl_gemm5_abf16_wbf16_bf16_t16x64x128_split_k2_block_m_warp1_block_n_warp2"
    ...         "_block_k_warp1_async_copyTrue_b_to_ldsTrue_b_preshuffleFalse_c_to_ldsFalse_gfx950")
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "tuned.csv").write_text(",".join(TUNED_HEADER) + "\\ngfx950,256,1,6144,2048,False,"
    ...     "torch.bfloat16,torch.bfloat16,False,False,flydsl,3161,2,10.8611," + name + ",0.04,2,2\\n")
    >>> _ = import_tables([folder / "tuned.csv"], db=folder / "t.db")
    >>> done = export_aiter_csv(folder / "t.db", folder / "out.csv")
    >>> [(r.libtype, r.splitK, r.us) for r in done.records], done.tables
    ([('flydsl', 2, 10.8611)], ['tuned/gfx950/cu256/1x6144x2048'])
"""

from __future__ import annotations

import csv
import reprlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flysearch._atomicfile import atomic_write
from flysearch.errors import InputFormatError, MissingTableError, UnknownArchError
from flysearch.kernels import SPACE_NAME, aiter_hgemm_space, build_kernel_name
from flysearch.space import Config, get_arch
from flysearch.tables import TUNED_HEADER, AiterRecord, GroundTruth, Row, TableStore

__all__ = [
    "AiterExport",
    "best_flydsl_record",
    "export_aiter_csv",
    "export_tuned_csv",
    "unique_records",
    "write_aiter_csv",
]


@dataclass(frozen=True)
class AiterExport:
    """What :func:`export_aiter_csv` did: the records written and the tables they were chosen from."""

    records: list[AiterRecord]
    tables: list[str]


def write_aiter_csv(path: str | Path, records: Sequence[AiterRecord], *, unique: bool = True) -> None:
    """Write *records* under :data:`~flysearch.tables.TUNED_HEADER`, atomically
    (:func:`~flysearch._atomicfile.atomic_write`: a refused or failed write leaves *path* as it was).

    Args:
        path: The CSV to write (replaced if it exists).
        records: The rows, written in the order given.
        unique: Refuse two rows with one aiter key (a tuned file must have unique keys: aiter's
            runtime indexes it by key); profiles pass ``False``.

    Every cell is printable text (the :mod:`csv` module quotes a comma or a quote in it), so each
    record is one line.

    Raises:
        InputFormatError: *unique* and two records share a key, or a cell holds a line break, a
            control or invisible character.
    """
    path = Path(path)
    for record in records:
        bad = next((c for c in record.cells() if not c.isprintable()), None)
        if bad is not None:
            raise InputFormatError(
                f"The aiter record of {record.M}x{record.N}x{record.K} has the cell {reprlib.repr(bad)}, "
                "which holds a line break, control or invisible character; fix the table's gfx and dtypes."
            )
    if unique:
        seen: set[tuple[Any, ...]] = set()
        for record in records:
            if record.key in seen:
                raise InputFormatError(
                    f"Two rows share aiter key {record.key}; keep one winner per key in a tuned CSV."
                )
            seen.add(record.key)
    with atomic_write(path, newline="") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(TUNED_HEADER)
        writer.writerows(record.cells() for record in records)


def unique_records(records: Iterable[AiterRecord]) -> list[AiterRecord]:
    """Keep, per aiter key, the fastest record with a real time (ties: the first seen)."""
    best: dict[tuple[Any, ...], AiterRecord] = {}
    for record in records:
        held = best.get(record.key)
        if held is None or (0 < record.us < held.us) or held.us <= 0 < record.us:
            best[record.key] = record
    return list(best.values())


def _flydsl_config(row: Row) -> Config | None:
    try:
        return aiter_hgemm_space().config_from_dict(row.params)
    except InputFormatError:
        return None


def best_flydsl_record(table: GroundTruth) -> AiterRecord | None:
    """The aiter record of *table*'s fastest FlyDSL config (``None`` when it has none).

    Raises:
        InputFormatError: the table names no gfx/cu_num (neither in its problem nor its arch).
    """
    candidates = [(r, c) for r in table.ok_rows() if (c := _flydsl_config(r)) is not None]
    if not candidates:
        return None
    row, config = min(candidates, key=lambda rc: (rc[0].time_ms, rc[0].key))
    meta, p = table.meta, table.meta.problem
    gfx = str(p.get("gfx") or meta.arch)
    try:
        cu_num = int(p.get("cu_num") or get_arch(gfx).device(meta.device or None).compute_units)
    except UnknownArchError as exc:
        raise InputFormatError(f"Table {meta.name!r} names no usable gfx/device: {exc}") from None
    dtype = str(p.get("aiter_dtype", "torch.bfloat16"))
    kernel_dtype = {"torch.bfloat16": "bf16", "torch.float16": "f16"}.get(dtype, "bf16")
    us = float(row.time_ms) * 1000.0  # type: ignore[arg-type]
    M, N, K = int(p["M"]), int(p["N"]), int(p["K"])
    err = row.extra.get("err_ratio")
    return AiterRecord(
        gfx=gfx, cu_num=cu_num, M=M, N=N, K=K, bias=bool(p.get("bias", False)), dtype=dtype,
        outdtype=str(p.get("aiter_outdtype", dtype)), scaleAB=bool(p.get("scaleAB", False)),
        bpreshuffle=bool(p.get("bpreshuffle", False)), libtype="flydsl",
        solidx=int(row.extra.get("solidx", 0)), splitK=int(config["split_k"]), us=round(us, 4),
        kernelName=build_kernel_name(config, gfx, kernel_dtype, kernel_dtype),
        err_ratio=float(err) if err is not None else 0.0,
        tflops=round(2 * M * N * K / (us * 1e6), 2),
        bw=round((M * K + N * K + M * N) * 2 / (us * 1e-6) / 1e9, 2),
    )


def export_tuned_csv(tables: Iterable[GroundTruth], path: str | Path) -> list[AiterRecord]:
    """Write each table's fastest FlyDSL config as an aiter tuned CSV at *path* (atomically).

    Tables without a successful FlyDSL row are skipped; when two tables map to one aiter key
    the faster record is kept, so the file's keys are unique. Returns the records written.
    """
    records = [r for t in tables if (r := best_flydsl_record(t)) is not None]
    records = unique_records(records)
    records.sort(key=lambda r: (r.gfx, r.cu_num, r.M, r.N, r.K, str(r.key)))
    write_aiter_csv(path, records)
    return records


def export_aiter_csv(db: str | Path, out: str | Path, *, prefix: str = "") -> AiterExport:
    """Write the fastest FlyDSL config of every aiter FlyDSL table in *db* whose name starts with
    *prefix* as an aiter tuned CSV at *out* (what ``AITER_CONFIG_GEMM_BF16`` names).

    Raises:
        MissingTableError: no aiter FlyDSL table matches; *out* is then left as it was (an existing
            CSV is not replaced by a header alone).
    """
    store = TableStore(db, create=False)
    try:
        names = [n for n in store.names() if n.startswith(prefix) and store.meta(n).kernel == SPACE_NAME]
        if not names:
            raise MissingTableError(
                f"No aiter FlyDSL table in {db} starts with {prefix!r}; nothing to export (import aiter "
                "CSVs with 'flysearch tables import FILE.csv')."
            )
        records = export_tuned_csv([store.load(n) for n in names], out)
    finally:
        store.close()
    return AiterExport(records, names)
