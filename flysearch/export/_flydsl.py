"""``flysearch export flydsl``: the best FlyDSL config of each table, written as a FlyDSL artifact.

An artifact must hold what the target runs. A table may hold other backends' rows (an aiter table
keeps its Triton, asm, hipBLASLt... records beside the FlyDSL configs), so only FlyDSL rows are
candidates, and a table without one is skipped and named; and a config tuned on one arch is not
exported for another. Every table is checked before any file is written, so a refused export
leaves the folder as it was.

Example:
    >>> import tempfile
    >>> from flysearch.tables import Row, TableMeta
    >>> db = tempfile.mkdtemp() + "/t.db"
    >>> TableStore(db).write(TableMeta("t", "flydsl_gemm", "gfx942", "MI300X", {"M": 1}, {}), [
    ...     Row("B=16", {"BLOCK_M": 16}, "ok", 2.0),
    ...     Row("triton", {"kernel": "x"}, "ok", 1.0, extra={"libtype": "triton"})])
    >>> done = export_flydsl_artifacts(db, ["t"], tempfile.mkdtemp(), name="gemm", key=["M"],
    ...                                device_name="AMD Instinct MI300X", arch="gfx942")
    >>> [(w.table, w.row.key) for w in done.written], done.skipped
    ([('t', 'B=16')], [])
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flysearch.errors import FlysearchError, UnknownArchError
from flysearch.export._flydsl_artifacts import FlydslDevice, artifact_path, write_flydsl_artifact
from flysearch.kernels import FlydslConfigSpec, to_flydsl_config
from flysearch.space import arch_of_device, get_arch
from flysearch.tables import GroundTruth, Row, TableMeta, TableStore

__all__ = [
    "ExportedArtifact", "FlydslExport", "best_flydsl_row", "export_flydsl_artifacts", "table_arch",
    "target_device",
]

_FLYDSL = "flydsl"
_LISTED = 5  # tables named in one error line


@dataclass(frozen=True)
class ExportedArtifact:
    """One artifact written: the table it came from, the row exported and the file."""

    table: str
    row: Row
    path: Path


@dataclass(frozen=True)
class FlydslExport:
    """What an export did: the artifacts written, and ``(table, reason)`` for each table skipped."""

    written: list[ExportedArtifact]
    skipped: list[tuple[str, str]]


@dataclass(frozen=True)
class _Planned:
    table: str
    problem: dict[str, Any]
    row: Row
    key: dict[str, Any]
    config: FlydslConfigSpec


def target_device(device_name: str, arch: str, cu: int | None = None) -> FlydslDevice:
    """The device identity flydsl will see on the target: *device_name* as torch prints it, the
    arch, and the CU count (*cu*, else the arch profile's count for that device).

    Raises:
        FlysearchError: *arch* is not an AMD arch, or a profile knows the device on another arch
            (flydsl would never load an artifact whose identity no device has).
        UnknownArchError: *arch* is unknown, or *cu* is missing and no profile knows the device.
    """
    profile = get_arch(arch)
    if profile.vendor != "amd":
        raise FlysearchError(f"FlyDSL artifacts are for AMD archs; {arch!r} is {profile.vendor}.")
    try:
        known = arch_of_device(device_name).name
    except UnknownArchError as exc:
        if cu is None:  # a device no profile knows: its CU count must be given
            raise UnknownArchError(f"{exc} Give its CU count with --cu.") from None
        known = profile.name
    if known != profile.name:
        raise FlysearchError(
            f"Device {device_name!r} is a {known} device, not {profile.name}; give the arch of the "
            "device the artifact is for."
        )
    if cu is None:
        cu = profile.on_device(device_name).compute_units
    return FlydslDevice(device_name, profile.name, cu)


def table_arch(meta: TableMeta) -> str:
    """The arch a table was measured on: its arch profile's name, else the ``gfx`` an aiter table
    names (aiter ships rows for archs flysearch has no profile of, such as gfx1250); ``""`` if none."""
    return (meta.arch or str(meta.problem.get("gfx", ""))).strip().lower()


def _is_flydsl(row: Row) -> bool:
    """Whether *row* is a FlyDSL config: a row that names another backend (aiter's ``libtype``) is not."""
    return str(row.extra.get("libtype", _FLYDSL)) == _FLYDSL


def best_flydsl_row(table: GroundTruth) -> Row | None:
    """The fastest FlyDSL row that ran (ties broken by key), or ``None`` when the table has none:
    the fastest row of any backend is no FlyDSL config."""
    rows = [r for r in table.ok_rows() if _is_flydsl(r)]
    return min(rows, key=lambda r: (r.time_ms, r.key)) if rows else None


def _check_table(table: GroundTruth, key: Sequence[str], arch: str) -> None:
    """Refuse a table that holds no FlyDSL kernel, lacks a problem field of the key, or was
    measured on another arch than the target's *arch*."""
    meta = table.meta
    if _FLYDSL not in meta.kernel:
        raise FlysearchError(
            f"Table {meta.name!r} measured {meta.kernel!r}, not a FlyDSL kernel; it has no "
            "FlyDSL config to export."
        )
    missing = [f for f in key if f not in meta.problem]
    if missing:
        raise FlysearchError(f"Table {meta.name!r} has no problem field(s) {missing} for the key.")
    measured = table_arch(meta)
    if not measured:
        raise FlysearchError(
            f"Table {meta.name!r} names no arch, so it cannot be checked against the target {arch}; "
            "export a table measured on the target's arch."
        )
    if measured != arch:
        raise FlysearchError(
            f"Table {meta.name!r} was measured on {measured}, not on the target arch {arch}; a config "
            f"tuned on {measured} may not run on {arch}: export only tables measured on {arch}."
        )


def _skip_reason(table: GroundTruth) -> str:
    """Why *table* has nothing to export: the backends of its rows that ran."""
    ran = sorted({str(r.extra.get("libtype", "?")) for r in table.ok_rows()})
    return f"no FlyDSL row ran in it (rows that ran: {', '.join(ran) or 'none'})"


def _listed(names: Sequence[str]) -> str:
    """The first few *names*, and how many more: an error stays one readable line."""
    shown = ", ".join(names[:_LISTED])
    return shown + (f" and {len(names) - _LISTED} more" if len(names) > _LISTED else "")


def _check_distinct(plans: Sequence[_Planned], paths: Sequence[Path]) -> None:
    """Refuse two tables that would write one artifact (the later would silently replace the
    earlier): their key values are equal, and the key must take the fields they differ in."""
    seen: dict[Path, _Planned] = {}
    for plan, path in zip(plans, paths, strict=True):
        first = seen.setdefault(path, plan)
        if first is not plan:
            differ = sorted(f for f in {*first.problem, *plan.problem}
                            if first.problem.get(f) != plan.problem.get(f))
            raise FlysearchError(
                f"Tables {first.table!r} and {plan.table!r} would write one artifact (key {plan.key}); "
                f"add the fields they differ in ({', '.join(differ) or 'none'}) to --key, or export "
                "them separately."
            )


def export_flydsl_artifacts(
    db: str | Path, tables: Sequence[str], out: str | Path, *, name: str, key: str | Sequence[str],
    device_name: str, arch: str, cu: int | None = None,
) -> FlydslExport:
    """Write the best FlyDSL config of each table in *db* as a FlyDSL offline autotune artifact in
    *out*; a table without a FlyDSL row that ran is skipped (:attr:`FlydslExport.skipped`).

    Args:
        db: The table database.
        tables: Names of the tables to export.
        out: The ``FLYDSL_AUTOTUNE_CONFIG_DIR`` to write into.
        name: The kernel's ``artifact_name`` in ``@flydsl.autotune``.
        key: The autotune key: problem fields of each table, in order (a string: comma-separated,
            as ``"M,N,K"``).
        device_name: The target device as torch names it (``"AMD Instinct MI300X"``).
        arch: The target's gfx arch.
        cu: The target's CU count (default: the arch profile's count for the device).

    Raises:
        FlysearchError: nothing is written when the target is no AMD arch or not the device's, a
            table is no FlyDSL table, lacks a key field or was measured on another arch, no table
            has a FlyDSL row, or two tables would write one artifact.
    """
    if isinstance(key, str):
        key = key.split(",")
    key = [f.strip() for f in key if f.strip()]
    device = target_device(device_name, arch, cu)
    store = TableStore(db, create=False)
    plans: list[_Planned] = []
    skipped: list[tuple[str, str]] = []
    for table_name in dict.fromkeys(tables):  # a table named twice is exported once
        table = store.load(table_name)
        _check_table(table, key, device.arch)
        row = best_flydsl_row(table)
        if row is None:
            skipped.append((table.name, _skip_reason(table)))
            continue
        plans.append(_Planned(table.name, table.meta.problem, row,
                              {f: table.meta.problem[f] for f in key}, to_flydsl_config(row.params)))
    if not plans:
        raise FlysearchError(
            f"Nothing to export: no FlyDSL row ran in {_listed([t for t, _ in skipped])}; "
            "export tables that hold FlyDSL configs."
        )
    paths = [artifact_path(out, name, p.key, device) for p in plans]
    _check_distinct(plans, paths)
    written = [
        ExportedArtifact(p.table, p.row, write_flydsl_artifact(out, name=name, key=p.key, device=device,
                                                               config=p.config))
        for p in plans
    ]
    return FlydslExport(written, skipped)
