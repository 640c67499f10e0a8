"""An opening without a prior: the first configs of a GEMM study chosen by an analytic bound.

A GEMM kernel's time is bounded below by its critical path of arithmetic (whole waves of blocks,
each doing ``2 * tile_m * tile_n * K / split`` flops) and by the bytes each CU moves; neither needs
a measurement. :func:`analytic_bound` scores every config by how far it is, in log2, from the best
value of each in the space, and takes the larger of the two gaps (a roofline without the device's
peaks, so no machine balance is assumed). The config it ranks first is on average closer to the
optimum than a uniform draw on flysearch's development races. As ``auto``'s opening
(``analytic_start``) it needed more compiles to within 1% than uniform draws on most of them
(``lab/studies/coldstart_opening.toml``), so ``auto`` does not use it by default.

:class:`AnalyticOpeningSampler` proposes, at each suggestion, the unevaluated config of lowest bound
that differs in at least *min_distance* parameters from every config taken so far (evaluated or
running), ties broken at random by its seed; when none is that far, the lowest bound among all
unevaluated configs. The bound does not see warps or stages, so configs one such step apart tie;
the distance keeps the opening from spending its compiles on them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from flysearch.samplers._forest import hamming_to_nearest
from flysearch.samplers._history import ChoosingSampler, candidate_ordinals

if TYPE_CHECKING:
    from flysearch.costmodel import Columns
    from flysearch.samplers._context import SearchContext

__all__ = ["AnalyticOpeningSampler", "analytic_bound"]

_BOUND_TERMS = ("g_log2_path_flops", "g_log2_traffic_per_cu")


def analytic_bound(columns: Columns) -> np.ndarray | None:
    """Each config's larger log2 gap to the space's best critical path and best traffic per CU
    (0 for a config best on both), or ``None`` where the features lack either term (no GEMM
    roles, no arch). A config missing a term gets ``inf``.

    Example:
        >>> analytic_bound({"g_log2_path_flops": np.array([10.0, 11.0, 12.0]),
        ...                 "g_log2_traffic_per_cu": np.array([22.0, 20.0, 20.0])}).tolist()
        [2.0, 1.0, 2.0]
    """
    if not all(name in columns for name in _BOUND_TERMS):
        return None
    gaps = [columns[name] - np.nanmin(columns[name]) for name in _BOUND_TERMS]
    return np.nan_to_num(np.maximum(*gaps), nan=np.inf)


class AnalyticOpeningSampler(ChoosingSampler):
    """Proposes the unevaluated config of lowest analytic bound, away from the configs taken.

    Args:
        context: The space, its feasible configs (the candidates) and the encoding of trial params.
        bound: Each candidate's score, lower first (:func:`analytic_bound`), in ``context.feasible``
            order.
        seed: Seed of the tie-breaking draws.
        min_distance: Parameters in which a proposal differs from every config taken, while any
            unevaluated config is that far.
    """

    def __init__(self, context: SearchContext, bound: np.ndarray, *, seed: int | None = None,
                 min_distance: int = 2) -> None:
        super().__init__(context, seed)
        if len(bound) != len(context.feasible):
            raise ValueError(f"{len(bound)} bounds for {len(context.feasible)} candidates.")
        self._bound = np.asarray(bound, dtype=float)
        self._min_distance = min_distance
        self._ordinal = candidate_ordinals(context)

    def _choose(self, free: np.ndarray) -> int:
        """The free candidate of lowest bound among those far enough from the taken ones."""
        candidates = np.flatnonzero(free)
        if not free.all():
            far = hamming_to_nearest(self._ordinal[candidates], self._ordinal[~free]) >= self._min_distance
            if far.any():
                candidates = candidates[far]
        order = np.lexsort((self._rng.random(len(candidates)), self._bound[candidates]))
        return int(candidates[order[0]])
