"""How much the aiter HGEMM constraints cut the space, per (arch, regime), over a set of shapes.

Enumerating the 353,808-config space takes about a second per (shape, arch), so this report
applies the shape-free constraints once per arch and only the shape constraints per shape. Since
every shape-free constraint comes before every shape constraint, the first constraint to reject
each config (what :meth:`flysearch.space.Space.enumerate` charges) is the same; the tests check
the two agree.

Example (``lab/tests/test_aiter_cut.py`` checks it):
    >>> from _aiter_cut import space_cuts
    >>> from flysearch.space import Shape
    >>> cut = space_cuts([Shape(1, 6144, 2048)], "gfx950")[0]
    >>> cut.regime, cut.shapes, cut.feasible
    ('decode', 1, 444)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from flysearch.kernels import aiter_hgemm_space
from flysearch.space import REGIMES, Config, Shape, Space, get_arch

__all__ = ["SHAPE_FREE_CONSTRAINTS", "RegimeCut", "format_cuts", "shape_cut", "shape_free_survivors",
           "space_cuts"]

SHAPE_FREE_CONSTRAINTS: frozenset[str] = frozenset({
    "async_copy_fixed_by_arch", "waves_per_block_le_16", "tile_m_divisible_by_m_warps",
    "tile_n_divisible_by_n_warps", "vector_loads_divide_tiles", "lds_fits"})
"""The constraints of aiter's FlyDSL HGEMM space that read only the config and the arch (all come
before the shape ones)."""


@dataclass
class RegimeCut:
    """The constraints' cut of the space summed over the shapes of one (arch, regime).

    Attributes:
        total: Cartesian configs over all shapes (``shapes * space.size``).
        feasible: Configs every constraint keeps, over all shapes.
        removed: Per constraint, the configs it was the first to reject, over all shapes.
        feasible_per_shape: The feasible count of each shape.
    """

    arch: str
    regime: str
    shapes: int = 0
    total: int = 0
    feasible: int = 0
    removed: dict[str, int] = field(default_factory=dict)
    feasible_per_shape: list[int] = field(default_factory=list)

    def summary(self) -> str:
        """``"total -> feasible: name -n, ..."``, as :meth:`Enumeration.summary` writes it."""
        cuts = ", ".join(f"{name} -{n}" for name, n in self.removed.items() if n)
        return f"{self.total} -> {self.feasible}" + (f": {cuts}" if cuts else "")


def shape_free_survivors(space: Space, arch_name: str) -> tuple[list[Config], dict[str, int]]:
    """The configs of *space* that every shape-free constraint (:data:`SHAPE_FREE_CONSTRAINTS`)
    keeps on *arch_name*, and per constraint the configs it was the first to reject (0 for the
    shape constraints, which :func:`shape_cut` then applies to the survivors at each shape)."""
    arch = get_arch(arch_name)
    free = [c for c in space.constraints if c.name in SHAPE_FREE_CONSTRAINTS]
    removed = {c.name: 0 for c in space.constraints}
    kept = []
    for config in space.configs():
        for constraint in free:
            if not constraint(config, None, arch):
                removed[constraint.name] += 1
                break
        else:
            kept.append(config)
    return kept, removed


def shape_cut(space: Space, survivors: list[Config], shape: Shape, arch_name: str) -> dict[str, int]:
    """Per shape constraint, the survivors it is the first to reject at *shape* (and ``"feasible"``)."""
    arch = get_arch(arch_name)
    checks = [c for c in space.constraints if c.name not in SHAPE_FREE_CONSTRAINTS]
    counts = {c.name: 0 for c in checks}
    counts["feasible"] = 0
    for config in survivors:
        for constraint in checks:
            if not constraint(config, shape, arch):
                counts[constraint.name] += 1
                break
        else:
            counts["feasible"] += 1
    return counts


def space_cuts(shapes: Iterable[Shape], arch_name: str) -> list[RegimeCut]:
    """Sum the cut over *shapes* per regime (in :data:`~flysearch.space.REGIMES` order)."""
    space = aiter_hgemm_space()
    survivors, free_removed = shape_free_survivors(space, arch_name)
    by_regime = {r: RegimeCut(arch_name, r, removed=dict.fromkeys(free_removed, 0)) for r in REGIMES}
    for shape in sorted(set(shapes)):
        cut = by_regime[shape.regime]
        counts = shape_cut(space, survivors, shape, arch_name)
        cut.shapes += 1
        cut.total += space.size
        cut.feasible += counts["feasible"]
        cut.feasible_per_shape.append(counts["feasible"])
        for name in cut.removed:
            cut.removed[name] += free_removed[name] + counts.get(name, 0)
    return [c for c in by_regime.values() if c.shapes]


def format_cuts(cuts: Iterable[RegimeCut]) -> str:
    """A Markdown table of the cuts, one line per (arch, regime), cuts as mean configs per shape."""
    lines = [
        "| arch | regime | shapes | cartesian / shape | feasible / shape: mean (min-max) | "
        "empty | mean cut per shape, by constraint |",
        "|---|---|---:|---:|---|---:|---|",
    ]
    for c in cuts:
        per = c.feasible_per_shape
        mean_cuts = ", ".join(f"{n} -{v / c.shapes:.0f}" for n, v in c.removed.items() if v)
        empty = sum(1 for f in per if f == 0)
        lines.append(
            f"| {c.arch} | {c.regime} | {c.shapes} | {c.total // c.shapes} | "
            f"{c.feasible / c.shapes:.0f} ({min(per)}-{max(per)}) | {empty} | {mean_cuts} |"
        )
    return "\n".join(lines)
