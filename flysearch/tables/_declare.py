"""What a user declares about a table measured elsewhere: its shape, kernel family, arch and device,
and the names its parameters go by in flysearch.

A Kernel Tuner cache knows its parameters and times but not what a cost model needs: it stores the
problem as an opaque ``problem_size`` (no M, N, K, so no shape feature and no regime), names its
parameters as its author did (``BM`` for ``BLOCK_M``) and its device as the driver did. A
:class:`Declaration` supplies those facts at import, so the table carries M, N, K, regime, kernel
and arch like one flysearch raced. Declaring a registered kernel family (``triton_gemm_splitk``)
gives replay that family's constraints, applied within the table's own rows
(:func:`flysearch.tables.space_for_table`), and lets a prior trained on the family walk its order.

Example:
    >>> from flysearch.tables import Row, TableMeta
    >>> meta = TableMeta("mine/t", "gemm", "", "GPU", {"problem_size": [64, 4096, 4096]},
    ...                  {"name": "kernel_tuner:gemm", "params": [{"name": "BM", "values": [16, 32]}]})
    >>> rows = [Row("BM=16", {"BM": 16}, "ok", 1.0), Row("BM=32", {"BM": 32}, "ok", 2.0)]
    >>> meta, rows = declare(meta, rows, Declaration(shape_from="MNK", arch="sm_90",
    ...                                              rename=parse_renames("BM=BLOCK_M")))
    >>> meta.problem["M"], meta.shape().regime, meta.arch, rows[0].key
    (64, 'small_m', 'sm_90', 'BLOCK_M=16')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flysearch.errors import InputFormatError
from flysearch.kernels import get_space, space_names, table_kernel
from flysearch.space import Config, Shape, arch_of_device, get_arch, parse_shape
from flysearch.tables._store import Row, TableMeta

__all__ = ["Declaration", "declare", "family_space_name", "parse_renames"]

_DIMS = "MNK"


@dataclass(frozen=True)
class Declaration:
    """Facts about a table that its file does not give (every field optional).

    Attributes:
        shape: The GEMM it measured, ``"MxNxK[:dtype]"`` or a :class:`~flysearch.space.Shape`.
        shape_from: Read the shape from the file's ``problem_size`` instead: the order in which it
            lists M, N and K (``"MNK"``, ``"NMK"``, ...).
        kernel: The kernel family: a registered space's name (``triton_gemm_splitk``) or kernel
            name (``triton_gemm``), whose constraints and prior then apply, or any other name.
        arch: The arch profile (``sm_90``, ``gfx942``); by default the device's, when known.
        device: The device's name, when the file names none or another.
        rename: Parameter names, file's -> flysearch's (:func:`parse_renames`).
        dtype: The element type of a shape read from ``problem_size``.
    """

    shape: str | Shape | None = None
    shape_from: str | None = None
    kernel: str | None = None
    arch: str | None = None
    device: str | None = None
    rename: Mapping[str, str] = field(default_factory=dict)
    dtype: str = "bf16"

    def __bool__(self) -> bool:
        return any(getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "dtype")


def parse_renames(text: str | Sequence[str]) -> dict[str, str]:
    """``"OLD=NEW,OLD2=NEW2"`` (or a list of such pieces) as a mapping; malformed text is an
    :class:`~flysearch.errors.InputFormatError`."""
    pieces = [text] if isinstance(text, str) else list(text)
    renames: dict[str, str] = {}
    for piece in (p.strip() for chunk in pieces for p in chunk.split(",")):
        if not piece:
            continue
        old, eq, new = (part.strip() for part in piece.partition("="))
        if not eq or not old or not new:
            raise InputFormatError(f"Rename {piece!r} is not of the form OLD=NEW (e.g. BM=BLOCK_M).")
        if renames.setdefault(old, new) != new:
            raise InputFormatError(f"Rename names parameter {old!r} twice ({renames[old]} and {new}).")
    return renames


def family_space_name(kernel: str) -> str | None:
    """The registered space a kernel name declares: the space of that name, or the one space whose
    kernel family it names; ``None`` for a kernel flysearch has no space for."""
    names = space_names()
    if kernel in names:
        return kernel
    matches = [n for n in names if table_kernel(n) == kernel]
    return matches[0] if len(matches) == 1 else None


def _shape(meta: TableMeta, d: Declaration) -> Shape | None:
    if d.shape is not None and d.shape_from:
        raise InputFormatError("Give the shape once: as MxNxK or as the order of problem_size, not both.")
    if isinstance(d.shape, Shape):
        return d.shape
    if d.shape:
        return parse_shape(d.shape)
    if not d.shape_from:
        return None
    order = d.shape_from.strip().upper()
    if sorted(order) != sorted(_DIMS):
        raise InputFormatError(
            f"Shape order {d.shape_from!r} must list M, N and K once each, in problem_size's order "
            "(e.g. MNK, NMK)."
        )
    size = meta.problem.get("problem_size")
    if not isinstance(size, list) or len(size) < 3 or not all(isinstance(v, int) for v in size[:3]):
        raise InputFormatError(
            f"Table {meta.name!r} has no problem_size of three integers to read M, N, K from "
            f"({size!r}); give the shape as MxNxK."
        )
    dims = dict(zip(order, size[:3], strict=True))
    return Shape(dims["M"], dims["N"], dims["K"], d.dtype)


def _renamed(meta: TableMeta, rows: list[Row], rename: Mapping[str, str]) -> tuple[dict[str, Any], list[Row]]:
    params = [p["name"] for p in meta.space.get("params", [])]
    unknown = [old for old in rename if old not in params]
    if unknown:
        raise InputFormatError(
            f"Table {meta.name!r} has no parameter {', '.join(map(repr, unknown))} to rename; its parameters "
            f"are {', '.join(params)}."
        )
    new_names = [rename.get(p, p) for p in params]
    if len(set(new_names)) != len(new_names):
        raise InputFormatError(f"The renames give two parameters one name: {', '.join(new_names)}.")
    space = {**meta.space, "params": [{**p, "name": rename.get(p["name"], p["name"])}
                                      for p in meta.space.get("params", [])]}
    renamed = []
    for row in rows:
        values = {rename.get(k, k): v for k, v in row.params.items()}
        renamed.append(dataclasses.replace(row, key=Config.from_dict(values).key, params=values))
    return space, renamed


def _family(space: dict[str, Any], kernel: str) -> tuple[str, dict[str, Any]]:
    """The table's kernel name and space once *kernel* is declared; a registered family's parameter
    names must be the table's, or the family's constraints and prior could not read its configs."""
    family = family_space_name(kernel)
    if family is None:
        return kernel, {**space, "name": kernel}
    registered = get_space(family)
    want = [p.name for p in registered.params]
    have = [p["name"] for p in space.get("params", [])]
    if sorted(want) != sorted(have):
        missing, extra = [n for n in want if n not in have], [n for n in have if n not in want]
        raise InputFormatError(
            f"Kernel {kernel!r} has parameters {', '.join(want)}; the table lacks "
            f"{', '.join(missing) or 'none'}"
            f" and has {', '.join(extra) or 'none'} besides: map them with --rename OLD=NEW."
        )
    constraints = [c.name for c in registered.constraints] + ["listed_in_table"]
    return table_kernel(family), {**space, "name": family, "constraints": constraints}


def declare(meta: TableMeta, rows: list[Row], declaration: Declaration) -> tuple[TableMeta, list[Row]]:
    """The table *meta*, *rows* with what *declaration* says applied (both are new objects).

    Raises:
        InputFormatError: a rename names a parameter the table lacks or gives two one name; the
            shape is malformed or cannot be read from ``problem_size``; a registered kernel family's
            parameters are not the table's.
        UnknownArchError: the arch (or, without one, a declared device) has no profile.
    """
    d = declaration
    space, rows = _renamed(meta, rows, d.rename) if d.rename else (meta.space, rows)
    kernel = meta.kernel
    if d.kernel:
        kernel, space = _family(space, d.kernel)
    shape = _shape(meta, d)
    problem = {**meta.problem, **shape.as_dict()} if shape is not None else meta.problem
    device = d.device or meta.device
    if d.arch:
        arch = get_arch(d.arch).name
    elif d.device:
        arch = arch_of_device(d.device).name
    else:
        arch = meta.arch
    declared = dataclasses.replace(meta, kernel=kernel, arch=arch, device=device, problem=problem,
                                   space=space)
    return declared, rows
