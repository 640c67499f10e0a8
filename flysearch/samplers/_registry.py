"""Samplers by name, all seeded, plus flysearch's own :class:`FeasibleGridSampler`.

``grid`` is an exhaustive race of the *feasible* candidates, in an order fixed by the seed (a grid
over the raw cartesian product would spend trials on configs the constraints reject). The others
are Optuna's samplers; ``tpe`` and ``gp`` read the constraint each trial sets (a rejected or failed
config is infeasible), so they learn which regions not to propose. ``tpe-unseen`` is TPE that
proposes the best of its candidates that is feasible and not tried yet (:mod:`flysearch.samplers`).
``cmaes`` is CMA-ES with margin that restarts with a larger population once it stops finding new
configs (:mod:`flysearch.samplers`); ``cmaes-margin`` is Optuna's CMA-ES with margin as it comes.
``auto`` is the default cold start: flysearch's exact GP (``fastgp``) and its feature forest
(``surrogate``) propose in turn (:mod:`flysearch.samplers`). ``kt:<strategy>`` runs one of
Kernel Tuner's strategies on a replayed table, ``helion:<search>`` one of Helion's autotuner searches
(:mod:`flysearch.samplers`). ``fixed-list``, ``decision-tree``, ``winners-first`` and ``nvmmh`` are
zero-shot transfer baselines: a short list of configs chosen before any compile, then ``auto``
(:mod:`flysearch.samplers._zeroshot`).

The samplers that are Optuna's (``tpe``, ``tpe-unseen``, ``gp``, ``cmaes-margin``) take *options*:
keyword arguments of the Optuna class they build (``{"n_startup_trials": 20, "multivariate":
True}``), so that a comparison can run them tuned as well as at their defaults
(:func:`sampler_options_problem` says what is wrong with a set of options). ``auto`` takes the
fields of :class:`~flysearch.samplers._portfolio.AutoOptions`.

Example:
    >>> from flysearch.samplers import make_sampler
    >>> type(make_sampler("tpe", seed=0)).__name__
    'CachedTPESampler'
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, is_dataclass, replace
from typing import TYPE_CHECKING, Any

import optuna
from optuna.samplers import BaseSampler

from flysearch.errors import FlysearchError, UnknownSamplerError
from flysearch.samplers._context import SearchContext
from flysearch.samplers._portfolio import AutoOptions, PortfolioSampler

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.study import Study
    from optuna.trial import FrozenTrial


__all__ = ["SAMPLERS", "FeasibleGridSampler", "SamplerRequest", "SearchContext", "make_sampler",
           "register_sampler", "sampler_options_problem"]


_GOLDEN = (5**0.5 - 1) / 2  # successive multiples mod 1 stay evenly spread, for any number of workers


def _params_key(params: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(sorted(params.items()))


class FeasibleGridSampler(BaseSampler):
    """Proposes every feasible candidate exactly once, in the order given.

    Args:
        candidates: Trial parameters (encoded as the study's distributions) of each feasible config.
        distributions: The study's distributions.

    Candidates that the study already holds (after a resume) are skipped. Once all were proposed,
    it proposes the first one again; the study loop stops before that, when the space is exhausted.
    With *start*, the order begins at that candidate and wraps around: workers sharing a study
    start at different places, instead of all asking for the configs the first one has in flight.
    """

    def __init__(
        self,
        candidates: Sequence[Mapping[str, Any]],
        distributions: Mapping[str, BaseDistribution],
        start: int = 0,
    ) -> None:
        start = start % len(candidates) if candidates else 0
        self._candidates = [dict(c) for c in [*candidates[start:], *candidates[:start]]]
        self._distributions = dict(distributions)
        self._seen: set[tuple[tuple[str, Any], ...]] = set()
        self._n_trials_read = 0
        self._next = 0

    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        return dict(self._distributions)

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        trials = study.get_trials(deepcopy=False)
        for t in trials[self._n_trials_read:]:
            if not t.state.is_finished():
                break
            self._n_trials_read += 1
            if t.params:
                self._seen.add(_params_key(t.params))
        # Candidates other trials are evaluating now (a batch, another worker) are skipped too.
        running = {_params_key(t.params) for t in trials[self._n_trials_read:] if t.params}
        while self._next < len(self._candidates):
            candidate = self._candidates[self._next]
            self._next += 1
            if _params_key(candidate) not in self._seen | running:
                return candidate
        return self._candidates[0] if self._candidates else {}

    def sample_independent(
        self,
        study: Study,
        trial: FrozenTrial,
        param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        raise RuntimeError(f"FeasibleGridSampler has no value for undeclared parameter {param_name!r}.")


@dataclass(frozen=True)
class SamplerRequest:
    """What a sampler is built from.

    Attributes:
        seed: Seed of the sampler's random state (``grid`` takes its order from *context*).
        context: The space, its feasible configs and the shape/arch (needed by ``grid`` and the
            model-based samplers).
        prior: A trained cost model for the model-based samplers (``None``: cold start).
        batch: Several trials will be asked before the first is told (a live study's pipeline,
            several workers): TPE then uses its constant liar.
        worker: This worker's number among the workers of a shared study.
        budget: The study's budget of compiles (the ``kt:`` and ``helion:`` samplers give it to
            the search they run).
        measured: A replayed study's table: each config's time in ms by key, ``None`` where it
            failed. Only the ``kt:`` and ``helion:`` samplers read it, to run Kernel Tuner's or
            Helion's search on the table.
        options: Keyword arguments of the Optuna class an Optuna sampler builds (see
            :func:`sampler_options_problem`); empty for its defaults.
    """

    name: str
    seed: int | None = None
    context: SearchContext | None = None
    prior: Any = None
    batch: bool = False
    worker: int = 0
    budget: int | None = None
    measured: Mapping[str, float | None] | None = None
    options: Mapping[str, Any] = field(default_factory=dict)

    def needs_context(self) -> SearchContext:
        if self.context is None:
            raise ValueError(f"The {self.name} sampler needs the search context (its feasible configs).")
        return self.context


_BUILDERS: dict[str, Callable[[SamplerRequest], BaseSampler]] = {}
# The options each sampler takes: the keyword arguments of this Optuna class, less those it sets.
_OPTIONS: dict[str, tuple[type, frozenset[str]]] = {}


def register_sampler(
    name: str, options_of: type | None = None, fixed: frozenset[str] = frozenset({"seed"})
) -> Callable[[Callable[[SamplerRequest], BaseSampler]], Callable[[SamplerRequest], BaseSampler]]:
    """Register the decorated function as the builder of the sampler called *name*; a sampler that
    builds an Optuna class (*options_of*) takes its keyword arguments as options, less the *fixed*
    ones its builder sets."""

    def add(builder: Callable[[SamplerRequest], BaseSampler]) -> Callable[[SamplerRequest], BaseSampler]:
        _BUILDERS[name] = builder
        if options_of is not None:
            _OPTIONS[name] = (options_of, fixed)
        return builder

    return add


def sampler_options_problem(name: str, options: Mapping[str, Any]) -> str | None:
    """What is wrong with *options* for the sampler *name*, in one sentence, or ``None``.

    Example:
        >>> sampler_options_problem("tpe", {"n_startup_trials": 20})
        >>> print(sampler_options_problem("random", {"n_startup_trials": 20}))
        The random sampler takes no options; these take them: auto, cmaes-margin, gp, tpe, tpe-unseen.
    """
    if not options:
        return None
    name = name.strip().lower()
    if name not in _OPTIONS:
        return (f"The {name} sampler takes no options; these take them: "
                f"{', '.join(sorted(_OPTIONS))}.")
    cls, fixed = _OPTIONS[name]
    allowed = set(inspect.signature(cls.__init__).parameters) - {"self", "args", "kwargs"} - fixed
    unknown = sorted(set(options) - allowed)
    if unknown:
        return (f"Unknown option(s) {', '.join(unknown)} of the {name} sampler; it takes "
                f"{cls.__name__}'s: {', '.join(sorted(allowed))}.")
    if is_dataclass(cls):  # flysearch's own options check their values themselves
        try:
            cls(**options)
        except ValueError as e:
            return str(e)
    return None


def make_sampler(
    name: str,
    *,
    seed: int | None = None,
    context: SearchContext | None = None,
    prior: Any = None,
    batch: bool = False,
    worker: int = 0,
    budget: int | None = None,
    measured: Mapping[str, float | None] | None = None,
    options: Mapping[str, Any] | None = None,
) -> BaseSampler:
    """Build the sampler called *name* (one of :data:`SAMPLERS`; see :class:`SamplerRequest` for
    the rest).

    Raises:
        UnknownSamplerError: *name* is not a known sampler, or *options* do not fit it.
    """
    name = name.strip().lower()
    if name not in _BUILDERS:
        raise UnknownSamplerError(f"Unknown sampler {name!r}; choose one of: {', '.join(SAMPLERS)}.")
    problem = sampler_options_problem(name, options or {})
    if problem:
        raise UnknownSamplerError(problem)
    request = SamplerRequest(name, seed, context, prior, batch, worker, budget, measured, dict(options or {}))
    return _BUILDERS[name](request)


# The builders import their sampler's module when first used, so that a study pays for its own.


@register_sampler("grid")
def _grid(r: SamplerRequest) -> BaseSampler:
    # Workers sharing a study start the feasible configs' order at a golden-ratio fraction of their
    # number (worker 0 at the beginning), so that they walk different parts of it.
    context = r.needs_context()
    start = int(len(context.feasible) * ((r.worker * _GOLDEN) % 1.0))
    return FeasibleGridSampler(context.encoded(), context.distributions, start=start)


@register_sampler("random")
def _random(r: SamplerRequest) -> BaseSampler:
    return optuna.samplers.RandomSampler(seed=r.seed)


_TPE_FIXED = frozenset({"seed", "constant_liar"})


@register_sampler("tpe", optuna.samplers.TPESampler, _TPE_FIXED)
def _tpe(r: SamplerRequest) -> BaseSampler:
    from flysearch.samplers._tpe import CachedTPESampler

    # Optuna's TPE (its parameters converted once per trial: the same suggestions, faster).
    # The constant liar keeps a batch of asks (or several workers) from proposing one config.
    return CachedTPESampler(seed=r.seed, constant_liar=r.batch, **r.options)


@register_sampler("tpe-unseen", optuna.samplers.TPESampler, _TPE_FIXED)
def _tpe_unseen(r: SamplerRequest) -> BaseSampler:
    from flysearch.samplers._tpe import UnseenTPESampler

    feasible = r.context.encoded() if r.context is not None else None
    return UnseenTPESampler(seed=r.seed, constant_liar=r.batch, feasible=feasible, **r.options)


@register_sampler("gp", optuna.samplers.GPSampler)
def _gp(r: SamplerRequest) -> BaseSampler:
    import importlib.util

    if importlib.util.find_spec("torch") is None:  # Optuna imports it only at the first suggestion
        raise FlysearchError("The gp sampler needs torch, which is not installed; install it (pip install "
                             "'flysearch[gp]', or a CUDA or ROCm build of torch) or choose another sampler.")
    return optuna.samplers.GPSampler(seed=r.seed, **r.options)


@register_sampler("fastgp")
def _fastgp(r: SamplerRequest) -> BaseSampler:
    from flysearch.samplers._gp import FeasibleGPSampler

    return FeasibleGPSampler(r.needs_context(), seed=r.seed)


@register_sampler("auto", AutoOptions, frozenset())
def _auto(r: SamplerRequest) -> BaseSampler:
    from flysearch.samplers._costmodel import CostModelOptions, CostModelSampler
    from flysearch.samplers._gp import FeasibleGPSampler
    from flysearch.samplers._history import candidate_feature_columns

    # The default cold start: the exact GP and the feature forest propose in turn.
    context = r.needs_context()
    options = AutoOptions(**r.options)
    forest = CostModelOptions(local=options.local, n_startup=options.forest_startup)
    # The GEMM features (g_*: tiles, waves, bytes) are what the forest reads and the GP does not.
    gemm = options.forest_turns > 1 and any(n.startswith("g_") for n in candidate_feature_columns(context))
    members: list[BaseSampler] = [
        FeasibleGPSampler(context, seed=r.seed, n_startup=options.gp_startup),
        CostModelSampler(context, None, seed=None if r.seed is None else r.seed + 1, options=forest)]
    return PortfolioSampler(members, turns=(0,) + (1,) * options.forest_turns if gemm else (0, 1))


@register_sampler("cmaes")
def _cmaes(r: SamplerRequest) -> BaseSampler:
    from flysearch.samplers._cmaes import RestartingCmaEsSampler

    # CMA-ES with margin, restarted when it converged: plain CMA-ES on integer parameters ends
    # up proposing only configs already compiled and the study stops short of its budget.
    return RestartingCmaEsSampler(r.context, seed=r.seed)


@register_sampler("cmaes-margin", optuna.samplers.CmaEsSampler,
                  frozenset({"seed", "with_margin", "warn_independent_sampling"}))
def _cmaes_margin(r: SamplerRequest) -> BaseSampler:
    from flysearch.samplers._cmaes import PlainMarginCmaEsSampler

    # Optuna's CMA-ES with margin as it comes, without flysearch's restarts: an anchor.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return PlainMarginCmaEsSampler(seed=r.seed, **r.options)


@register_sampler("qmc")
def _qmc(r: SamplerRequest) -> BaseSampler:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.QMCSampler(seed=r.seed, scramble=True, warn_independent_sampling=False)


@register_sampler("costmodel")
def _costmodel(r: SamplerRequest) -> BaseSampler:
    from flysearch.samplers._costmodel import CostModelSampler

    context = r.needs_context()
    if r.prior is None:
        raise UnknownSamplerError(
            "The costmodel sampler needs a prior trained on other tables; use 'surrogate' for a "
            "cold start or train one with 'flysearch model train'."
        )
    return CostModelSampler(context, r.prior, seed=r.seed)


@register_sampler("surrogate")
def _surrogate(r: SamplerRequest) -> BaseSampler:
    from flysearch.samplers._costmodel import CostModelSampler

    return CostModelSampler(r.needs_context(), None, seed=r.seed)


@register_sampler("spreadforest")
def _spreadforest(r: SamplerRequest) -> BaseSampler:
    from flysearch.samplers._forest import SpreadForestSampler

    return SpreadForestSampler(r.needs_context(), seed=r.seed)


@register_sampler("ranker")
def _ranker(r: SamplerRequest) -> BaseSampler:
    from flysearch.samplers._ranker import OnlineRankerSampler

    # An online gradient-boosted cost model in the style of Ansor: a baseline for the prior.
    return OnlineRankerSampler(r.needs_context(), seed=r.seed)


def _replayed(what: str, order_of: Callable[..., list[dict[str, Any]]],
              search: str) -> Callable[[SamplerRequest], BaseSampler]:
    """The builder of a sampler that runs another tuner's search on the replayed table (*what*) and
    proposes the configs it measured, in its order (``order_of(context, search, measured, seed=,
    budget=)``)."""

    def build(r: SamplerRequest) -> BaseSampler:
        if r.measured is None:
            raise UnknownSamplerError(
                f"The {r.name} sampler replays a table through {what}; "
                "run it on a table (--table, or a compare experiment), not live.")
        context = r.needs_context()
        order = order_of(context, search, r.measured, seed=r.seed, budget=r.budget)
        # Once the search's configs are spent, the grid repeats its first: the study counts
        # duplicates until it stops for want of a new config.
        return FeasibleGridSampler(order, context.distributions)

    return build


def _register_replayed() -> None:
    from flysearch.samplers._helion import SEARCHES, helion_order
    from flysearch.samplers._kernel_tuner import STRATEGIES, kernel_tuner_order

    for strategy in STRATEGIES:
        register_sampler(f"kt:{strategy}")(
            _replayed("Kernel Tuner's simulation mode", kernel_tuner_order, strategy))
    for search in SEARCHES:
        register_sampler(f"helion:{search}")(
            _replayed("Helion's own search code", helion_order, search))


_register_replayed()


def _zero_shot(rule: str) -> Callable[[SamplerRequest], BaseSampler]:
    def build(r: SamplerRequest) -> BaseSampler:
        from flysearch.samplers._zeroshot import (
            TRAINED,
            ListFirstSampler,
            TransferTables,
            key_values,
            nearest_feasible,
            zero_shot_order,
        )

        context = r.needs_context()
        if rule in TRAINED:
            if not isinstance(r.prior, TransferTables):
                raise UnknownSamplerError(
                    f"The {rule} sampler learns its list from other shapes' tables; run it in a compare "
                    "experiment, which trains it leave-one-table-out as it trains costmodel.")
            listed = zero_shot_order(rule, r.prior, context.problem or {})
            # A listed config the shape's constraints reject stands for its nearest feasible one.
            order = nearest_feasible(context, [key_values(k) for k in listed])
        else:
            from flysearch.samplers._nvmmh import nvmmh_order

            order = nvmmh_order(context)
        # The list first, then the default cold start, which reads the list's measurements too.
        return ListFirstSampler(context, order, _auto(replace(r, name="auto", options={})))

    return build


def _register_zero_shot() -> None:
    from flysearch.samplers._zeroshot import ZERO_SHOT

    for rule in ZERO_SHOT:
        register_sampler(rule)(_zero_shot(rule))


_register_zero_shot()

SAMPLERS: tuple[str, ...] = tuple(_BUILDERS)
"""Every sampler's name, in the order the CLI lists them."""
