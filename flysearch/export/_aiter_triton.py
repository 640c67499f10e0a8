"""``flysearch export aiter-triton``: the best config of each table of aiter's Triton GEMM
(``_gemm_a16_w16_kernel``, space ``aiter_triton_gemm``), written as aiter's own tuned config JSON.

aiter's loader, ``_get_config(M, N, K)`` in ``aiter/ops/triton/_triton_kernels/gemm_a16w16.py``,
reads ``{AITER_TRITON_CONFIGS_PATH}/gemm/{dev}-GEMM-A16W16-N={N}-K={K}.json`` when it exists (else
the default ``{dev}-GEMM-A16W16.json``), ``dev`` being aiter's name of the arch (``MI300X`` for
gfx942, ``MI350X`` for gfx950), and takes the first ``M_LEQ_{b}`` key with ``M <= b`` (b in 4, 8,
16, ..., 8192), else ``"any"``. So one file is written per (arch, N, K), from tables of one M each.

Folder layout: *out* plays ``AITER_TRITON_CONFIGS_PATH``, so the files go to ``<out>/gemm/``;
aiter's own folder (``aiter/ops/triton/configs``) may be given to add files beside the shipped
ones, which are never replaced.

Buckets:

* a table of M=m fills the smallest bound b >= m (``M_LEQ_{b}``); an M above 8192 fills ``"any"``
  only;
* when several measured M fall in one bucket, the largest M's best wins: the bucket serves every M
  up to its bound, and the largest measured M is the nearest to it;
* buckets without a measured M are left out, so aiter falls through to the next larger bucket that
  is present: an unmeasured M gets the best config of the nearest measured M above it (above the
  largest, ``"any"``), and no bucket claims a config that nobody measured for it;
* ``"any"`` is the largest measured M's best.

Each bucket holds aiter's keys, in the order of its shipped files, with its value types (ints;
``cache_modifier`` a string or ``null``): the nine every shipped file has, then ``NUM_KSPLIT`` and
``kpack`` where the config has them (aiter takes a missing ``NUM_KSPLIT`` as 1).

Example:
    >>> base = dict(BLOCK_SIZE_M=16, BLOCK_SIZE_N=64, BLOCK_SIZE_K=256, GROUP_SIZE_M=1,
    ...             waves_per_eu=2, matrix_instr_nonkdim=16, cache_modifier="", num_warps=4,
    ...             num_stages=2)
    >>> doc = aiter_triton_buckets({1: base, 3: base, 100: {**base, "BLOCK_SIZE_M": 64}})
    >>> [(bucket, c["BLOCK_SIZE_M"], c["cache_modifier"]) for bucket, c in doc.items()]
    [('M_LEQ_4', 16, None), ('M_LEQ_128', 64, None), ('any', 64, None)]
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flysearch._atomicfile import write_text_atomic
from flysearch.errors import FlysearchError, MissingTableError
from flysearch.export._flydsl import table_arch
from flysearch.kernels import AITER_DISTRIBUTION as DISTRIBUTION
from flysearch.kernels import AITER_TRITON_SPACE, aiter_root, import_aiter_module
from flysearch.tables import GroundTruth, TableMeta, TableStore

__all__ = [
    "BOUNDS",
    "KERNEL",
    "AiterTritonExport",
    "AiterTritonFile",
    "aiter_triton_buckets",
    "aiter_triton_config",
    "export_aiter_triton",
    "write_aiter_triton",
]

KERNEL = AITER_TRITON_SPACE
_ARCH_INFO = "ops.triton.utils._triton.arch_info"
# NOTE: the bounds of aiter's ``_get_config`` (gemm_a16w16.py, amd-aiter 0.1.7); the round-trip
# test checks every one of them through aiter's own loader.
BOUNDS = (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
# aiter's keys in the order of its shipped files: the nine every file has, then the optional two.
_REQUIRED = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "waves_per_eu",
             "matrix_instr_nonkdim", "cache_modifier", "num_warps", "num_stages")
_OPTIONAL = ("NUM_KSPLIT", "kpack")
_AT_LEAST_ONE = {"BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "num_warps", "NUM_KSPLIT"}
_NULL_MODIFIERS = (None, "", "none", "None")  # how a space without None may spell "no modifier"


@dataclass(frozen=True)
class AiterTritonFile:
    """One file written: its path, aiter's device name, N and K, and the table behind each bucket."""

    path: Path
    device: str
    N: int
    K: int
    tables: dict[str, str]


@dataclass(frozen=True)
class AiterTritonExport:
    """What an export did: the files written, and ``(table, reason)`` for each table skipped."""

    written: list[AiterTritonFile]
    skipped: list[tuple[str, str]] = field(default_factory=list)


def _aiter(name: str) -> Any:
    try:
        return import_aiter_module(name)
    except ImportError as exc:
        raise FlysearchError(
            f"aiter's Triton code cannot be imported ({exc}); pip install 'flysearch[amd]'."
        ) from None


def _devices() -> dict[str, str]:
    """aiter's device name of each arch it has Triton configs for, read from aiter itself."""
    return dict(_aiter(_ARCH_INFO)._ARCH_TO_DEVICE)


def _archs(devices: Mapping[str, str]) -> str:
    return ", ".join(f"{a} ({d})" for a, d in devices.items())



def aiter_triton_config(params: Mapping[str, Any], where: str = "config") -> dict[str, Any]:
    """*params* as one bucket of aiter's file: its keys in aiter's order, ints, and
    ``cache_modifier`` a string or ``None`` (``""`` and ``"none"`` mean ``None``).

    Raises:
        FlysearchError: a key aiter needs is missing, a key is not aiter's, or a value has the wrong type.
    """
    missing = [k for k in _REQUIRED if k not in params]
    unknown = sorted(set(params) - {*_REQUIRED, *_OPTIONAL})
    if missing or unknown:
        what = (f"lacks {', '.join(missing)}" if missing
                else f"has keys aiter does not take: {', '.join(unknown)}")
        raise FlysearchError(f"The {where} {what}; export configs of the {KERNEL} space.")
    out: dict[str, Any] = {}
    for key in (*_REQUIRED, *(k for k in _OPTIONAL if k in params)):
        value = params[key]
        if key == "cache_modifier":
            if value not in _NULL_MODIFIERS and not isinstance(value, str):
                raise FlysearchError(f"The {where} has cache_modifier={value!r}; give a string or null.")
            out[key] = None if value in _NULL_MODIFIERS else value
            continue
        low = 1 if key in _AT_LEAST_ONE else 0
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise FlysearchError(f"The {where} has {key}={value!r}; aiter takes an integer >= {low}.")
        out[key] = value
    return out


def _bucket(m: int) -> str:
    return next((f"M_LEQ_{b}" for b in BOUNDS if m <= b), "any")


def aiter_triton_buckets(best: Mapping[int, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The content of one aiter file from the best config of each measured M (see the module's
    bucket rules): ``M_LEQ_{b}`` buckets in increasing order, then ``"any"``.

    Raises:
        FlysearchError: *best* is empty, an M is not positive, or a config is not aiter's
            (:func:`aiter_triton_config`).
    """
    if not best or min(best) < 1:
        raise FlysearchError(f"Measured M {sorted(best)} must be positive and at least one; "
                             "give the best config of each measured M.")
    doc: dict[str, dict[str, Any]] = {}
    for m in sorted(best):  # a larger M of one bucket comes later and wins
        config = aiter_triton_config(best[m], f"config of M={m}")
        if m <= BOUNDS[-1]:
            doc[_bucket(m)] = config
    doc["any"] = aiter_triton_config(best[max(best)], f"config of M={max(best)}")
    return doc


def _file_name(device: str, n: int, k: int) -> str:
    return f"{device}-GEMM-A16W16-N={n}-K={k}.json"


def _shipped(paths: Sequence[Path]) -> list[Path]:
    """Those of *paths* that are files of the installed aiter: listed in its wheel's record, or,
    where the record lists none of its configs (a source checkout, an editable install), any file
    that exists inside the package."""
    import importlib.metadata

    root = aiter_root()
    if root is None:
        return []
    root = root.resolve()
    inside = [p for p in paths if p.resolve().is_relative_to(root) and p.exists()]
    try:
        record = importlib.metadata.files(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        record = []
    listed = {path for f in record if str(f).endswith(".json")
              and (path := Path(str(f.locate())).resolve()).is_relative_to(root)}
    return [p for p in inside if p.resolve() in listed] if listed else inside


@dataclass
class _Plan:
    device: str
    n: int
    k: int
    best: dict[int, dict[str, Any]] = field(default_factory=dict)
    tables: dict[int, str] = field(default_factory=dict)


def _table_device(meta: TableMeta) -> str:
    arch, devices = table_arch(meta), _devices()
    if arch not in devices:
        measured = f"was measured on {arch}" if arch else "names no arch"
        raise FlysearchError(f"Table {meta.name!r} {measured}; aiter's Triton GEMM has configs for "
                             f"{_archs(devices)} only: export tables measured on one of those.")
    return devices[arch]


def _plan(tables: Iterable[GroundTruth]) -> tuple[dict[tuple[str, int, int], _Plan], list[tuple[str, str]]]:
    """Check every table and group their best configs by (device, N, K); nothing is written."""
    plans: dict[tuple[str, int, int], _Plan] = {}
    skipped: list[tuple[str, str]] = []
    for table in tables:
        meta = table.meta
        if meta.kernel != KERNEL:
            raise FlysearchError(f"Table {meta.name!r} measured {meta.kernel!r}, not aiter's Triton GEMM "
                                 f"({KERNEL}); export only {KERNEL} tables.")
        shape = meta.shape()
        if shape is None:
            raise FlysearchError(f"Table {meta.name!r} names no M, N, K; aiter's files are per shape.")
        device = _table_device(meta)
        ranked = table.ranked()  # re-timed medians first where the top was re-timed
        if not ranked:
            skipped.append((meta.name, "no config ran in it"))
            continue
        plan = plans.setdefault((device, shape.N, shape.K), _Plan(device, shape.N, shape.K))
        if shape.M in plan.tables:
            raise FlysearchError(
                f"Tables {plan.tables[shape.M]!r} and {meta.name!r} both measured M={shape.M}, "
                f"N={shape.N}, K={shape.K} on {device}; export one of them."
            )
        plan.best[shape.M] = aiter_triton_config(ranked[0].params, f"best config of table {meta.name!r}")
        plan.tables[shape.M] = meta.name
    return plans, skipped


def _bucket_tables(plan: _Plan) -> dict[str, str]:
    tables = {_bucket(m): plan.tables[m] for m in sorted(plan.tables) if m <= BOUNDS[-1]}
    return {**tables, "any": plan.tables[max(plan.tables)]}


def write_aiter_triton(tables: Iterable[GroundTruth], out: str | Path) -> AiterTritonExport:
    """Write aiter's tuned files for the best config of each table into ``<out>/gemm/``.

    Every table is checked before any file is written, and each file is written atomically; a
    table without a config that ran is skipped (:attr:`AiterTritonExport.skipped`).

    Args:
        tables: ``aiter_triton_gemm`` tables measured on gfx942 or gfx950, one shape each.
        out: The folder that plays ``AITER_TRITON_CONFIGS_PATH`` (aiter reads ``<out>/gemm/``).

    Raises:
        FlysearchError: a table is of another kernel or arch, names no shape, or shares its
            (arch, M, N, K) with another; a best config lacks a key aiter needs; no table has a
            config that ran; or a file would replace one that aiter ships.
    """
    plans, skipped = _plan(tables)
    if not plans:
        names = ", ".join(name for name, _ in skipped) or "none given"
        raise FlysearchError(f"Nothing to export: no config ran in the tables ({names}).")
    folder = Path(out) / "gemm"
    targets = {key: folder / _file_name(p.device, p.n, p.k) for key, p in plans.items()}
    shipped = _shipped(list(targets.values()))
    if shipped:
        raise FlysearchError(f"{shipped[0]} is a file aiter ships; it is never replaced: export to "
                             "another folder and compare, or remove the tables of that shape.")
    docs = {key: aiter_triton_buckets(p.best) for key, p in plans.items()}
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for key, plan in sorted(plans.items()):
        write_text_atomic(targets[key], json.dumps(docs[key], indent=2) + "\n")
        written.append(AiterTritonFile(targets[key], plan.device, plan.n, plan.k, _bucket_tables(plan)))
    return AiterTritonExport(written, skipped)


def export_aiter_triton(db: str | Path, out: str | Path, *, prefix: str = "",
                        tables: Sequence[str] = ()) -> AiterTritonExport:
    """Write aiter's tuned files (:func:`write_aiter_triton`) from the tables in *db* named in
    *tables*, or else from every ``aiter_triton_gemm`` table whose name starts with *prefix*.

    Raises:
        MissingTableError: a named table is absent, or no ``aiter_triton_gemm`` table matches.
        FlysearchError: as :func:`write_aiter_triton`.
    """
    store = TableStore(db, create=False)
    try:
        names = list(dict.fromkeys(tables)) or [
            n for n in store.names() if n.startswith(prefix) and store.meta(n).kernel == KERNEL]
        if not names:
            raise MissingTableError(f"No {KERNEL} table in {db} starts with {prefix!r}; list them with "
                                    "'flysearch tables list'.")
        loaded = [store.load(n) for n in names]
    finally:
        store.close()
    return write_aiter_triton(loaded, out)
