"""``auto``: the default cold-start sampler, two models of the same measurements taking turns.

:class:`PortfolioSampler` holds several samplers over the same feasible configs and lets them
propose in turn, by trial number: trial ``t`` is proposed by member ``t % len(members)``. Each
member reads the whole study, so every member learns from every measurement, whichever member
proposed the config.

``auto`` pairs two models that miss on different tables (the development tables of
``lab/benchmarks/results/compare/coldstart_dev``: the GP on the K-heavy and a long-K prefill GEMM, the
forest on decode GEMMs and dedispersion on the MI250X):

* the exact Gaussian process (``fastgp``, :mod:`flysearch.samplers._gp`): expected improvement over
  the parameters' ordinal ranks, smooth in the tile sizes;
* the forest surrogate (``surrogate``, :mod:`flysearch.samplers._costmodel` without a prior): a
  lower confidence bound from extremely randomized trees on each config's analytic features
  (tile waves, bytes moved, occupancy for a GEMM), which split on thresholds a stationary kernel
  cannot express.

Neither proposes an infeasible or an already-evaluated config, so neither does the portfolio. It
was chosen among flysearch's cold-start samplers on the development tables of
``lab/studies/coldstart_split.toml`` only (``lab/studies/coldstart_choice.toml`` is that comparison); its
test tables were not searched before it was fixed. Where the configs have a GEMM's analytic
features (flysearch's own kernel families) the forest, which reads them, takes two turns to the
GP's one (``forest_turns``). Each member draws uniformly until the study has
5 measurements (``gp_startup``, ``forest_startup``). The members' own defaults, 10 and 8, spent
about nine of a study's first compiles at random; on 25 development tables the earlier start needed
fewer compiles to within 1% on 16 and more on 8 (``lab/studies/coldstart_startup.toml``).

The variants that did not pass their rule on development tables (the GP's local step, wider or
more frequent local steps, win-stay turns, an analytic opening, a third, elite Gaussian member) left
flysearch after commit 093cd2e; their results name it.

Example:
    >>> from flysearch.samplers import SAMPLERS
    >>> "auto" in SAMPLERS
    True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from optuna.samplers import BaseSampler

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.study import Study
    from optuna.trial import FrozenTrial

__all__ = ["AutoOptions", "PortfolioSampler"]


_KINDS: dict[type, tuple[str, tuple[type, ...]]] = {bool: ("true or false", (bool,)),
                                                    int: ("a whole number", (int,))}
"""An option's kind by its default's type: the words for it and the types a value may have."""


@dataclass(frozen=True)
class AutoOptions:
    """The options ``auto`` takes (a study file's ``sampler_options``, an experiment's ``options``).

    Attributes:
        local: The forest's turns alternate between its lower bound over the whole space and a
            local step, its lower bound over the configs one parameter step from the best measured
            one (``True``); ``False`` makes every turn global.
        gp_startup: Measurements before the GP's first model; until then its turns draw
            uniformly among the unevaluated configs.
        forest_startup: Likewise for the forest.
        forest_turns: The forest's turns to each of the GP's where the configs have a GEMM's
            analytic features (a flysearch kernel family's tiles and waves), which the forest
            reads and the GP does not; elsewhere the two take one turn each. Two (the order GP,
            forest, forest) needed fewer compiles than one turn each on 23 of 38 development
            tables of flysearch's races and more on 15; three on 19 and 19.
    """

    local: bool = True
    gp_startup: int = 5
    forest_startup: int = 5
    forest_turns: int = 2

    def __post_init__(self) -> None:
        for f in fields(self):
            value, default = getattr(self, f.name), f.default
            kind, types = _KINDS[type(default)]
            if type(value) not in types:  # a bool is no whole number here, nor 1 a bool
                raise ValueError(f"The auto sampler's option {f.name} is {kind}, not {value!r}.")
        if self.forest_turns < 1:
            raise ValueError(f"The auto sampler's option forest_turns is 1 or more, not {self.forest_turns}.")
        for name in ("gp_startup", "forest_startup"):
            if getattr(self, name) < 2:
                raise ValueError(f"The auto sampler's option {name} is 2 or more, not {getattr(self, name)}.")


class PortfolioSampler(BaseSampler):
    """Lets its members propose in turn, by trial number.

    Args:
        members: The samplers taking turns; each samples every parameter jointly (their relative
            search spaces are the whole space, as flysearch's candidate samplers' are).
        turns: The members' order, repeated by trial number: trial ``t`` goes to member
            ``turns[t % len(turns)]`` (default: each member once, in order).
    """

    def __init__(self, members: Sequence[BaseSampler], *, turns: Sequence[int] | None = None) -> None:
        if not members:
            raise ValueError("A portfolio needs at least one sampler.")
        self._members = tuple(members)
        self._turns = tuple(range(len(members)) if turns is None else turns)
        if set(self._turns) != set(range(len(members))):
            raise ValueError(f"A portfolio's turns name each of its {len(members)} members, not {turns!r}.")

    def _member(self, trial: FrozenTrial) -> BaseSampler:
        return self._members[self._turns[trial.number % len(self._turns)]]

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return self._member(trial).infer_relative_search_space(study, trial)

    def sample_relative(self, study: Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        return self._member(trial).sample_relative(study, trial, search_space)

    def sample_independent(self, study: Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        return self._member(trial).sample_independent(study, trial, param_name, param_distribution)

    def reseed_rng(self) -> None:
        for member in self._members:
            member.reseed_rng()
