"""Model-based samplers: the cost-model sampler (with a prior) and its cold-start twin.

:class:`CostModelSampler` scores every feasible config the study has not evaluated yet and proposes
the best-scored one; it never proposes an infeasible or already-evaluated config.

* **Prior**: a :class:`~flysearch.costmodel.Prior` trained on other tables ranks the candidates
  before anything is compiled; with no measurement yet, the first suggestion is the prior's best.
* **Diverse start**: the first *n_diverse* suggestions walk down the prior's order but skip any
  config within Hamming distance *diverse_distance* of one already taken, so the first compiles
  spread over distinct tile shapes instead of near-duplicates; when the prior is wrong (a kernel
  on another GPU) the forest then has contrasting measurements to learn from. A prior trained on
  the ``"rank"`` objective says how sure it is of a shape: the rank its best score implies
  (:func:`implied_rank`) is how many configs it expects to beat its own top pick; the diverse start
  is no longer than that (at least one pick), so a sharp prior is followed down its order instead
  of being spread away from a top region it ranks well.
* **Online correction**: after the first measurements a small random forest (extremely randomized
  trees) fits the study's own log times against the features and the prior's score, and ranks the
  candidates by a lower confidence bound ``mean - kappa * std`` over its trees. The suggestion
  follows a blend of the two rankings in which the prior's weight decays as
  ``prior_weight / (n + prior_weight)`` after n measurements, scaled down further as the rank
  correlation between the prior and the measured times drops, so a prior the measurements
  contradict stops deciding within a few measurements; every second suggestion refines locally,
  among the unevaluated configs one parameter step from the best measured one. While the prior
  still agrees with the measurements, the other suggestions stay among its top
  ``top_region * (n + 1)`` configs (the forest reorders them, it does not wander).
* **Walk** (a prior trained on tables of the study's own space and arch): such a prior transfers
  across shapes well, so it scores with its top-weighted model (:meth:`flysearch.costmodel.Prior.at`;
  leave-one-shape-out on the 27 H200 tables that model puts a config within 1% of the optimum at
  rank 1-8 on every shape) and its first *walk_first* suggestions come from its top configs, with
  no diverse start and no random draw (a first batch of the model's best, as cost-model-guided
  tuners such as TVM's measure first). They alternate between the prior's best unevaluated config
  and a *covering* pick: among the prior's *walk_cover* best unevaluated configs, the best that
  takes a value of some parameter no earlier suggestion took. A prior's top is a cluster of
  near-twins (one tile shape with 3 or 4 stages, 4 or 8 warps); when the prior is wrong about one
  parameter, the covering picks try that parameter's other plausible values within the first
  batch instead of after it. After them every second suggestion is the prior's best
  unevaluated config, for as long as the measurements do not contradict its order (rank
  correlation > -0.2). The others, instead of a local step chosen by the forest, are the
  best under :func:`prior_kriging` among the configs at most *radius* value steps from the best
  measured one: the prior's score calibrated to the measured log times, corrected by a Gaussian
  process on the residuals over the parameters' ordinal distance, so the neighbours of a config
  that ran faster than the prior predicted move up its order (and those of a slower one down). A
  prior from other archs (another GPU) or other kernels is only a guide, scored by its plain model;
  the forest reorders its top region.
* **Stall**: a prior can order the bulk of the space right and still miss the optimum's region:
  the measurements agree with its order, and the search stays on a plateau of its top ranks. After
  *patience* measurements without a better time, every suggestion is the unevaluated config of
  lowest forest bound in the whole space, with no local, random or top-region step, until a
  measurement improves again.
* **Exploration**: with probability *epsilon* a suggestion is a uniformly random unevaluated config.
* **Sources** (a prior trained on one kernel's tables from several devices,
  :attr:`flysearch.costmodel.Prior.sources`): the pooled prior and each device's prior are weighed
  by how well each orders the study's own measurements: a prior's weight is its share of bootstrap
  resamples of the measurements in which it misorders the fewest pairs (:func:`source_weights`, in
  the spirit of Feurer et al.'s ranking-weighted ensembles). From *min_source_obs* measurements
  on, the prior's score is the weighted blend of their rank-scaled scores, so a GPU that behaves
  like one of the training GPUs follows that GPU's model rather than the average of all.
  Before that, the first *source_rounds* rounds of suggestions are a portfolio: the pooled prior
  and each device's prior in turn propose their best unevaluated config. When one of them
  proposed a config more than *source_margin* faster than any other's proposals, the search
  follows that prior alone from then on (a device whose top configs run fast here is the one
  this GPU resembles; its ordering of slower configs matters less); otherwise the sources are
  weighed as above.

Without a prior (``"surrogate"``, cold start, in the spirit of SMAC) the first *n_startup*
suggestions are random, then the forest on the features alone takes over.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from flysearch.costmodel import check_prior_fits, fit_extra_trees, target_key, tree_predictions, walks
from flysearch.samplers._history import (
    CandidateHistory,
    CandidateSampler,
    candidate_feature_columns,
    candidate_features,
    candidate_ordinals,
    steps_from,
)

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.study import Study
    from optuna.trial import FrozenTrial

    from flysearch.costmodel import Prior
    from flysearch.samplers._context import SearchContext

__all__ = ["CostModelOptions", "CostModelSampler", "implied_rank", "prior_kriging", "source_weights"]



@dataclass(frozen=True)
class CostModelOptions:
    """The knobs of :class:`CostModelSampler`; the defaults are the sampler flysearch ships.

    Attributes:
        epsilon: Share of suggestions drawn uniformly at random among unevaluated configs.
        kappa: Weight of the forest's spread in the lower confidence bound.
        n_startup: Random suggestions before the forest is used (cold start only).
        n_trees: Trees of the correcting forest.
        prior_weight: The prior's rank weighs ``prior_weight / (n + prior_weight)`` against the
            forest's after n measurements.
        patience: After this many measurements without a better time, the prior's region is
            taken as exhausted: the prior is set aside, and each suggestion is the unevaluated
            config of lowest forest bound in the whole space, with no local, random or top-region
            step, until a measurement improves again.
        local: Every second suggestion (counted over this sampler's own suggestions) is
            restricted to the unevaluated configs one parameter step from the best measured one (a
            local refinement), when any is left; a walked prior takes :func:`prior_kriging`'s best
            instead.
        n_diverse: With a prior, the first this many suggestions follow the prior's order while
            skipping configs within *diverse_distance* of those already taken; with a
            ``"rank"`` prior, at most the rank its best score implies (:func:`implied_rank`).
        diverse_distance: Parameters in which a diverse-start pick must differ from every taken
            config (relaxed one at a time when no candidate is that far).
        top_region: While the prior is trusted (rank correlation with the measurements >= 0.15),
            the non-local suggestions stay among its top ``top_region * (n + 1)`` configs after n
            measurements; 0 turns this off.
        min_source_obs: Measurements before the prior's sources (one per training device) are
            weighed against the pooled prior; until then the pooled prior decides alone.
        source_rounds: With sources (and a prior that is not walked), the first
            ``source_rounds * (1 + devices)`` suggestions let the pooled prior and each device's
            prior propose their best unevaluated config in turn; 0 turns the portfolio start off.
        source_margin: After the portfolio start, a source whose best proposal ran faster than
            every other source's best by more than this fraction is followed alone.
        walk: With a prior trained on the study's kernel family, arch and parameters
            (:func:`flysearch.costmodel.walks`), every second suggestion walks down the prior's order while
            the measurements do not contradict it, and the others follow :func:`prior_kriging`
            near the best measured config;
            ``False`` lets the forest reorder its top region as for a prior from other archs.
        walk_first: A walked prior's first this many suggestions come from its top configs,
            with no diverse start and no random draw (a first batch, as cost-model-guided tuners
            measure their model's top batch first).
        walk_cover: Every second of those first suggestions (the 2nd, 4th, ...) is the best of the
            prior's top this many unevaluated configs that takes a parameter value no earlier
            suggestion took (the prior's best when none does); 0 walks the top in plain order.
        length_scale: Ordinal distance over which :func:`prior_kriging` spreads a measured
            config's residual to its neighbours (walk only).
        radius: A walked prior's kriging steps choose among the unevaluated configs within this
            L1 distance (in value indices) of the best measured config, when any is left; 0 lets
            them choose in the whole space.
    """

    epsilon: float = 0.05
    kappa: float = 1.0
    n_startup: int = 8
    n_trees: int = 32
    prior_weight: float = 32.0
    local: bool = True
    patience: int = 16
    n_diverse: int = 6
    diverse_distance: int = 3
    top_region: float = 4.0
    min_source_obs: int = 3
    source_rounds: int = 2
    source_margin: float = 0.01
    walk: bool = True
    walk_first: int = 8
    walk_cover: int = 16
    length_scale: float = 1.5
    radius: int = 2


class CostModelSampler(CandidateSampler):
    """Proposes the unevaluated feasible config with the best corrected score.

    Args:
        context: The space, its feasible configs, shape and arch.
        prior: A trained prior, or ``None`` for a cold start.
        seed: Seed of the exploration draws and of the forest.
        options: The sampler's knobs (:class:`CostModelOptions`; its defaults when ``None``).
    """

    def __init__(self, context: SearchContext, prior: Prior | None = None, *, seed: int | None = None,
                 options: CostModelOptions | None = None) -> None:
        o = options or CostModelOptions()
        super().__init__(context, seed)
        if prior is not None:  # another kernel's prior would score every config alike
            check_prior_fits(prior, [p.name for p in context.space.params], f"space {context.space.name!r}",
                             problem=context.problem, arch=context.arch)
        self._prior = prior
        self._epsilon, self._kappa = o.epsilon, o.kappa
        self._n_startup = o.n_startup if prior is None else 0
        self._n_trees = o.n_trees
        self._prior_weight = o.prior_weight
        self._local = o.local
        self._turns = 0  # suggestions made so far: what "every second suggestion" counts
        self._patience = o.patience
        self._n_diverse, self._diverse_distance = o.n_diverse, o.diverse_distance
        self._top_region = o.top_region
        self._length_scale, self._radius = o.length_scale, o.radius
        # A prior that measured this space on this arch transfers across shapes; one from other
        # archs (or other kernels) only guides.
        target = None if context.arch is None else target_key(context.space.name, context.arch.name)
        names = [p.name for p in context.space.params]
        self._walk = o.walk and prior is not None and walks(prior, target, names)
        self._walk_first, self._walk_cover = o.walk_first, o.walk_cover
        self._keys = context.keys
        columns = candidate_feature_columns(context)  # computed once: the surrogate's and the priors'
        self._X = candidate_features(context, columns)
        # Rank-scaled scores of the pooled prior (row 0) and of each training device's prior.
        self._sources: np.ndarray | None = None
        if prior is not None:
            self._prior_score = prior.at(target).score_columns(columns, len(self._keys))
            if prior.sources:
                self._sources = np.stack([_rank01(self._prior_score)] + [
                    _rank01(src.score_columns(columns, len(self._keys))) for src in prior.sources])
        else:
            self._prior_score = np.zeros(len(self._keys))
        self._prior_rank = _ranks(self._prior_score)
        if prior is not None and prior.provenance.get("objective") == "rank":
            # A confident prior's top region is sharp: diversify over at most as many picks as
            # the number of configs it expects to beat its own best one.
            self._n_diverse = min(o.n_diverse, max(1, math.ceil(implied_rank(
                float(self._prior_score.min()), len(self._keys)))))
        self._source_weights: np.ndarray | None = None
        self._min_source_obs = o.min_source_obs
        self._source_rounds, self._source_margin = o.source_rounds, o.source_margin
        self._proposed_by: dict[int, int] = {}  # candidate -> source that proposed it (portfolio)
        self._followed: int | None = None  # the source followed alone after the portfolio start
        self._weighed_at = -1
        self._source_rng = np.random.default_rng(seed)
        self._ordinal = candidate_ordinals(context)
        self._history = CandidateHistory(context)
        self._observed = self._history.observed  # candidate index -> log time (nan: failed)
        self._seen = self._history.seen

    def _reweigh(self) -> None:
        """Blend the sources by how well each orders the measurements so far (once per new
        measurement, from *min_source_obs* on)."""
        n = len(self._observed)
        if self._sources is None or self._followed is not None or n < self._min_source_obs or (
                n == self._weighed_at):
            return
        self._weighed_at = n
        idx, y = self._targets()
        if 0 < self._portfolio_size() <= n:
            self._followed = self._clear_winner(idx, y)
            if self._followed is not None:
                self._prior_score = self._sources[self._followed]
                self._prior_rank = _ranks(self._prior_score)
                return
        self._source_weights = source_weights(self._sources[:, idx], y, self._source_rng)
        self._prior_score = self._source_weights @ self._sources
        self._prior_rank = _ranks(self._prior_score)

    def _portfolio_size(self) -> int:
        """Suggestions of the portfolio start (0 without sources, or with a walked prior)."""
        return 0 if self._sources is None or self._walk else self._source_rounds * len(self._sources)

    def _clear_winner(self, idx: np.ndarray, y: np.ndarray) -> int | None:
        """The source whose best proposal beat every other source's best by more than
        *source_margin*, or ``None`` (also while a proposal is still running)."""
        if not self._proposed_by.keys() <= self._observed.keys():
            return None
        best = np.full(len(self._sources), np.inf)
        for i, value in zip(idx.tolist(), y.tolist(), strict=True):
            source = self._proposed_by.get(i)
            if source is not None:
                best[source] = min(best[source], value)
        first, second = np.sort(best)[:2]
        return int(np.argmin(best)) if second - first > math.log1p(self._source_margin) else None

    def _read_history(self, study: Study) -> set[int]:
        """Fold newly finished trials in; return the candidates that running trials hold."""
        return self._history.update(study)

    def _targets(self) -> tuple[np.ndarray, np.ndarray]:
        idx = np.fromiter(self._observed, dtype=int)
        y = np.fromiter(self._observed.values(), dtype=float)
        finite = np.isfinite(y)
        penalty = (y[finite].max() + np.log(2.0)) if finite.any() else 0.0
        return idx, np.where(finite, y, penalty)

    def _forest_lcb(self, free: np.ndarray) -> np.ndarray:
        """Lower confidence bound of log time from a forest on the features (and the prior)."""
        idx, y = self._targets()
        X = self._X if self._prior is None else np.column_stack([self._X, self._prior_score])
        trees = fit_extra_trees(X[idx], y, n_trees=self._n_trees, max_features=0.7, seed=self._seed)
        per_tree = tree_predictions(trees, X[free])
        return per_tree.mean(axis=0) - self._kappa * per_tree.std(axis=0)

    def _scores(self, free: np.ndarray) -> np.ndarray:
        """Blend of the prior's rank and the forest's rank; the prior's weight decays as
        ``prior_weight / (n + prior_weight)`` with the n measurements."""
        n = len(self._observed)
        if self._prior is None:
            return self._forest_lcb(free)
        prior_rank = _rank01(self._prior_score[free])
        if n < 2:
            return prior_rank
        w = self._prior_weight / (n + self._prior_weight) * self._prior_trust()
        return w * prior_rank + (1 - w) * _rank01(self._forest_lcb(free))

    def _stalled(self) -> bool:
        """No better time in the last *patience* measurements: the prior's region is exhausted."""
        times = list(self._observed.values())
        if len(times) <= self._patience:
            return False
        before = np.array(times[: -self._patience])
        best_before = before[np.isfinite(before)].min() if np.isfinite(before).any() else np.inf
        recent = np.array(times[-self._patience:])
        return not np.any(recent[np.isfinite(recent)] < best_before)

    def _prior_trust(self) -> float:
        """1 while the measurements agree with the prior's order, falling to 0 as the rank
        correlation between the prior's scores and the measured times falls from 0.5 to -0.2."""
        idx, y = self._targets()
        if len(idx) < 5:
            return 1.0
        rho = float(np.corrcoef(_rank01(self._prior_score[idx]), _rank01(y))[0, 1])
        if not np.isfinite(rho):
            return 1.0
        return float(np.clip((rho + 0.2) / 0.7, 0.0, 1.0))

    def _agrees(self) -> bool:
        """The measurements still agree with the prior's order (rank correlation >= 0.15; fewer
        than 5 measurements always do)."""
        return self._prior_trust() >= 0.5

    def _trusted(self, n: int) -> bool:
        """The prior still agrees with the measurements, so a global suggestion stays among its top
        ``top_region * (n + 1)`` configs."""
        return self._top_region > 0 and self._prior is not None and n >= 5 and self._agrees()

    def _prior_order(self, free: np.ndarray) -> np.ndarray:
        """*free* in the prior's order, best first (ties in enumeration order)."""
        return free[np.lexsort((free, self._prior_score[free]))]

    def _diverse(self, free: np.ndarray, taken: set[int]) -> int:
        """The prior's best free config at Hamming distance >= diverse_distance from every taken one."""
        order = self._prior_order(free)
        if not taken:
            return int(order[0])
        used = self._ordinal[np.fromiter(taken, dtype=int)]
        for d in range(self._diverse_distance, 0, -1):
            far = (self._ordinal[order][:, None, :] != used[None, :, :]).sum(axis=2).min(axis=1) >= d
            if far.any():
                return int(order[int(np.argmax(far))])
        return int(order[0])

    def _covering(self, free: np.ndarray, taken: set[int]) -> int:
        """Among the prior's *walk_cover* best configs of *free*, the best that takes a value of some
        parameter no config of *taken* took; the prior's best when none does."""
        order = self._prior_order(free)[: self._walk_cover]
        used = self._ordinal[np.fromiter(taken, dtype=int)]  # none taken: every value is new
        new = (self._ordinal[order][:, None, :] != used[None, :, :]).all(axis=1).any(axis=1)
        return int(order[int(np.argmax(new))]) if new.any() else int(order[0])

    def _near_best(self, free: np.ndarray, radius: int) -> np.ndarray:
        """The configs of *free* 1 to *radius* value steps (L1 distance of the value indices) from
        the best measured config (the first of tied bests, as argmin picks); all of *free* when
        none is (or *radius* < 1)."""
        idx, y = self._targets()
        steps = steps_from(self._ordinal, int(idx[int(np.argmin(y))]))[free]
        ring = (steps >= 1) & (steps <= radius)
        return free[ring] if ring.any() else free

    def sample_relative(self, study: Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        pending = self._read_history(study)
        taken = self._seen | pending
        free = np.flatnonzero(self._history.free_mask(pending))
        pick = self._choose(free, taken, len(pending))
        config = self._context.feasible[pick]
        return self._context.space.encode(config, self._context.encoding)

    def _choose(self, free: np.ndarray, taken: set[int], n_pending: int) -> int:
        """The candidate to suggest among *free*, given the measurements and *taken* (evaluated or
        held by *n_pending* running trials)."""
        self._reweigh()
        n = len(self._observed)
        turn, self._turns = self._turns, self._turns + 1
        if self._walk and n + n_pending < self._walk_first:
            if self._walk_cover > 0 and (n + n_pending) % 2 == 1:
                return self._covering(free, taken)
            return self._lowest(free, self._prior_score[free])
        if n + n_pending < self._portfolio_size():
            source = (n + n_pending) % len(self._sources)
            pick = self._lowest(free, self._sources[source][free])
            self._proposed_by[pick] = source
            return pick
        if self._prior is not None and self._stalled():
            # The prior's region gave nothing better in `patience` measurements: search globally.
            return self._lowest(free, self._forest_lcb(free))
        if n < self._n_startup or self._rng.random() < self._epsilon:
            return int(self._rng.choice(free))
        if self._prior is not None and n + n_pending < self._n_diverse:
            if self._walk and n + n_pending == 1:
                # A walked prior's runner-up is as likely the optimum as any spread pick.
                return self._lowest(free, self._prior_score[free])
            return self._diverse(free, taken)
        if self._walk:
            if n < 2 or (n % 2 == 1 and self._prior_trust() > 0):
                return self._lowest(free, self._prior_score[free])
            idx, y = self._targets()
            near = self._near_best(free, self._radius)
            return self._lowest(near, prior_kriging(self._prior_score, self._ordinal, idx, y, near,
                                                    length_scale=self._length_scale))
        # Alternate by this sampler's own turns, not by the study's measurements: in a portfolio
        # taking turns by trial number, the measurements' parity would be the same at every turn.
        if self._local and n >= 2 and turn % 2 == 0:
            free = self._near_best(free, 1)
        elif self._trusted(n):
            top = free[self._prior_rank[free] < self._top_region * (n + 1)]
            free = top if top.size else free
        return self._lowest(free, self._scores(free))

    def _lowest(self, free: np.ndarray, scores: np.ndarray) -> int:
        """The config of *free* with the lowest score; ties (few measurements) go to the prior's
        better one, then to enumeration order."""
        return int(free[np.lexsort((free, self._prior_score[free], scores))[0]])


def prior_kriging(score: np.ndarray, ordinal: np.ndarray, idx: np.ndarray, y: np.ndarray,
                  free: np.ndarray, *, length_scale: float = 1.5, slope: float = 1.0,
                  noise: float = 0.1) -> np.ndarray:
    """Predicted log times of the *free* candidates: the prior corrected by the measurements.

    The prior's scores are calibrated to the measured log times *y* of the candidates *idx* as
    ``a + b * score`` (the least-squares slope, shrunk towards *slope* while measurements are few,
    and never negative); a Gaussian process with kernel ``exp(-d / length_scale)`` over the L1
    distance *d* of the parameters' value indices (*ordinal*) then spreads each measurement's
    residual to its neighbours (its posterior mean; *noise* is the nugget's share of the residuals'
    variance). Far from every measurement the prediction is the calibrated prior.

    Example:
        >>> ordinal = np.arange(5)[:, None]  # one parameter, five values
        >>> score = np.linspace(0.0, 1.0, 5)  # the prior orders them 0 < 1 < ... < 4
        >>> y = np.array([0.5, 0.0])  # measured 0 and 4: 4, the prior's last, ran fastest
        >>> prior_kriging(score, ordinal, np.array([0, 4]), y, np.array([1, 2, 3])).round(3).tolist()
        [0.275, 0.25, 0.225]
    """
    s = score[idx]
    n = len(idx)
    b = slope
    if n >= 3 and s.std() > 0:
        fitted = float(np.cov(s, y, bias=True)[0, 1] / s.var())
        b = max(0.0, (n * fitted + 5 * slope) / (n + 5))
    a = float(np.mean(y - b * s))
    residual = y - (a + b * s)
    var = max(float(np.mean(residual ** 2)), 1e-4)
    decay = var * np.exp(-np.arange(int(ordinal.max(initial=0)) * ordinal.shape[1] + 1) / length_scale)
    points = ordinal[idx]
    weights = np.linalg.solve(decay[_l1(points, points)] + noise * var * np.eye(n), residual)
    return a + b * score[free] + decay[_l1(ordinal[free], points)] @ weights


def _l1(rows: np.ndarray, points: np.ndarray) -> np.ndarray:
    """L1 distances between the value indices of *rows* and of *points*, one parameter at a time
    (a table per parameter instead of a rows x points x parameters array)."""
    out = np.zeros((len(rows), len(points)), dtype=np.int32)
    for p in range(rows.shape[1]):
        values = np.arange(max(int(rows[:, p].max(initial=0)), int(points[:, p].max(initial=0))) + 1)
        out += np.abs(values[:, None] - points[None, :, p]).astype(np.int32)[rows[:, p]]
    return out


def implied_rank(score: float, n: int) -> float:
    """How many configs a ``"rank"``-objective prior expects to be faster than one it scores
    *score*, among *n* candidates: its target is ``log1p(rank) / log1p(n - 1)``, so this inverts it.

    A prior unsure of a shape regresses its best score towards the middle, so the implied rank of
    its top config measures how sharp its top region is.

    Example:
        >>> round(implied_rank(0.5, 101), 2)
        9.05
    """
    return float(np.expm1(score * np.log1p(max(n - 1, 1))))


def source_weights(scores: np.ndarray, y: np.ndarray, rng: np.random.Generator, *, n_boot: int = 32,
                   last: int = 64) -> np.ndarray:
    """Each source's share of bootstrap resamples in which it misorders the fewest measured pairs.

    Args:
        scores: ``(sources, measured)``: each source's score of the measured configs (lower: faster).
        y: The measured log times, in measurement order.
        rng: The resamples' random stream.
        n_boot: Resamples.
        last: Only the most recent *last* measurements are resampled.

    Returns:
        Weights that sum to 1 (a tie for the fewest shares the resample).

    Example:
        >>> y = np.log([1.0, 2.0, 3.0, 4.0])
        >>> w = source_weights(np.array([[4.0, 3, 2, 1], [1.0, 2, 3, 4]]), y, np.random.default_rng(0))
        >>> w.round(2).tolist()
        [0.0, 1.0]
    """
    scores, y = scores[:, -last:], y[-last:]
    # wrong[s, i, j]: source s orders measurements i and j against their times.
    wrong = (np.sign(scores[:, :, None] - scores[:, None, :]) * np.sign(y[:, None] - y[None, :])) < 0
    counts = rng.multinomial(len(y), np.full(len(y), 1.0 / len(y)), size=n_boot).astype(float)
    loss = ((counts @ wrong.astype(float)) * counts).sum(axis=2)  # (sources, resamples)
    best = loss == loss.min(axis=0, keepdims=True)
    return (best / best.sum(axis=0, keepdims=True)).mean(axis=1)


def _ranks(values: np.ndarray) -> np.ndarray:
    """Each value's rank, 0 for the lowest (ties in order of position)."""
    return np.argsort(np.argsort(values, kind="stable"), kind="stable")


def _rank01(values: np.ndarray) -> np.ndarray:
    """Ranks scaled to [0, 1] (0: the lowest value)."""
    return _ranks(values) / max(len(values) - 1, 1)
