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

With ``winner_stays`` the turns follow the measurements instead (win-stay, lose-shift): a member
whose proposal beat every earlier measurement proposes again, any other proposal passes the turn
on. The member that proposed each trial is kept in the trial's system attributes, so processes
sharing a study follow one sequence.

Neither proposes an infeasible or an already-evaluated config, so neither does the portfolio. It
was chosen among flysearch's cold-start samplers on the development tables of
``lab/studies/coldstart_split.toml`` only (``lab/studies/coldstart_choice.toml`` is that comparison); its
test tables were not searched before it was fixed. Where the configs have a GEMM's analytic
features (flysearch's own kernel families) the forest, which reads them, takes two turns to the
GP's one (``forest_turns``). Each member draws uniformly until the study has
5 measurements (``gp_startup``, ``forest_startup``). The members' own defaults, 10 and 8, spent
about nine of a study's first compiles at random; on 25 development tables the earlier start needed
fewer compiles to within 1% on 16 and more on 8 (``lab/studies/coldstart_startup.toml``).

Example:
    >>> from flysearch.samplers import SAMPLERS
    >>> "auto" in SAMPLERS
    True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from optuna.samplers import BaseSampler

from flysearch._optuna import set_trial_system_attr
from flysearch.samplers._history import RECORD_ATTR

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.study import Study
    from optuna.trial import FrozenTrial

__all__ = ["AutoOptions", "PortfolioSampler"]


_KINDS: dict[type, tuple[str, tuple[type, ...]]] = {
    bool: ("true or false", (bool,)), int: ("a whole number", (int,)), float: ("a number", (int, float))}
"""An option's kind by its default's type: the words for it and the types a value may have."""


@dataclass(frozen=True)
class AutoOptions:
    """The options ``auto`` takes (a study file's ``sampler_options``, an experiment's ``options``).

    Attributes:
        local: The forest's turns alternate between its lower bound over the whole space and a
            local step, its lower bound over the configs one parameter step from the best measured
            one (``True``); ``False`` makes every turn global.
        gp_local: The GP's turns alternate likewise, between its expected improvement over the
            whole space and over the configs one step from the best.
        local_every: The forest's local step comes at every this many-th of its turns.
        hamming: The forest's local step chooses among the configs that differ from the best in
            one parameter, by any value.
        local_radius: The forest's local step chooses among the configs 1 to this many value steps
            (with *hamming*, parameters) from the best measured one.
        local_grow: When every config within *local_radius* of the best has been measured, the
            forest's local step chooses in the nearest ring that has one left instead of the whole
            space.
        local_within: The forest's local step chooses next to every measured config within this
            fraction of the best measured time (0: next to the best alone).
        gp_startup: Measurements before the GP's first model; until then its turns draw
            uniformly among the unevaluated configs.
        forest_startup: Likewise for the forest.
        winner_stays: A member whose proposal beat every earlier measurement proposes the next
            trial too; any other proposal passes the turn on. ``False``: the members take turns
            by trial number, which needed fewer compiles on the development tables: the other
            member's turns are what keeps a study from settling early.
        forest_turns: The forest's turns to each of the GP's where the configs have a GEMM's
            analytic features (a flysearch kernel family's tiles and waves), which the forest
            reads and the GP does not; elsewhere the two take one turn each. Two (the order GP,
            forest, forest) needed fewer compiles than one turn each on 23 of 38 development
            tables of flysearch's races and more on 15; three on 19 and 19.
        analytic_start: The study's first this many trials, where the configs have a GEMM's
            analytic features, are the configs of lowest analytic bound, each at least two
            parameters from those before (:mod:`flysearch.samplers._opening`) instead of the
            members' uniform draws; 0 leaves the start to the members.
        elite_every: After every this many rounds of the two models' turns, one turn goes to a
            third member, a Gaussian over the best measured configs whose draws move several
            parameters at once (:mod:`flysearch.samplers._elite`); 0 leaves the turns to the two.
    """

    local: bool = True
    gp_local: bool = False
    local_every: int = 2
    hamming: bool = False
    local_radius: int = 1
    local_grow: bool = False
    local_within: float = 0.0
    gp_startup: int = 5
    forest_startup: int = 5
    winner_stays: bool = False
    forest_turns: int = 2
    analytic_start: int = 0
    elite_every: int = 0

    def __post_init__(self) -> None:
        for f in fields(self):
            value, default = getattr(self, f.name), f.default
            kind, types = _KINDS[type(default)]
            if type(value) not in types:  # a bool is no whole number here, nor 1 a bool
                raise ValueError(f"The auto sampler's option {f.name} is {kind}, not {value!r}.")
        if self.local_every < 1:
            raise ValueError(f"The auto sampler's option local_every is 1 or more, not {self.local_every}.")
        if self.local_radius < 1:
            raise ValueError(f"The auto sampler's option local_radius is 1 or more, not {self.local_radius}.")
        if not 0.0 <= self.local_within <= 1.0:
            raise ValueError(f"The auto sampler's option local_within is between 0 and 1, "
                             f"not {self.local_within}.")
        if self.forest_turns < 1:
            raise ValueError(f"The auto sampler's option forest_turns is 1 or more, not {self.forest_turns}.")
        if self.elite_every < 0:
            raise ValueError(f"The auto sampler's option elite_every is 0 or more, not {self.elite_every}.")
        if self.analytic_start < 0:
            raise ValueError(f"The auto sampler's option analytic_start is 0 or more, "
                             f"not {self.analytic_start}.")
        for name in ("gp_startup", "forest_startup"):
            if getattr(self, name) < 2:
                raise ValueError(f"The auto sampler's option {name} is 2 or more, not {getattr(self, name)}.")


_MEMBER_ATTR = "flysearch:portfolio_member"


class PortfolioSampler(BaseSampler):
    """Lets its members propose in turn: by trial number, or while their proposals improve.

    Args:
        members: The samplers taking turns; each samples every parameter jointly (their relative
            search spaces are the whole space, as flysearch's candidate samplers' are).
        winner_stays: Give the next trial to the member whose proposal beat every earlier
            measurement; pass the turn on after any other (see the module docstring).
        turns: The members' order, repeated by trial number: trial ``t`` goes to member
            ``turns[t % len(turns)]`` (default: each member once, in order).
        opening: A sampler for the study's first *n_opening* trials (by trial number), before
            the members take turns.
        n_opening: Trials the *opening* proposes.
    """

    def __init__(self, members: Sequence[BaseSampler], *, winner_stays: bool = False,
                 turns: Sequence[int] | None = None, opening: BaseSampler | None = None,
                 n_opening: int = 0) -> None:
        if not members:
            raise ValueError("A portfolio needs at least one sampler.")
        self._members = tuple(members)
        self._turns = tuple(range(len(members)) if turns is None else turns)
        if set(self._turns) != set(range(len(members))):
            raise ValueError(f"A portfolio's turns name each of its {len(members)} members, not {turns!r}.")
        self._winner_stays = winner_stays
        self._chosen: dict[int, int] = {}  # with winner_stays: trial number -> its member
        self._opening = opening
        self._n_opening = n_opening if opening is not None else 0

    def _member(self, study: Study, trial: FrozenTrial) -> BaseSampler:
        if trial.number < self._n_opening:
            return self._opening  # type: ignore[return-value]  # set whenever _n_opening > 0
        if not self._winner_stays:
            return self._members[self._turn(trial.number)]
        i = self._chosen.get(trial.number)
        if i is None:  # decided once per trial, at its first call, and kept in the study
            i = self._after(study, trial.number)
            set_trial_system_attr(study, trial, _MEMBER_ATTR, i)
            # Trials asked together (threads of one process) keep their members; old ones go.
            self._chosen = {n: m for n, m in self._chosen.items() if n > trial.number - 64}
            self._chosen[trial.number] = i
        return self._members[i]

    def _after(self, study: Study, number: int) -> int:
        """The member for trial *number*: the last finished trial's, if it set a new best, else the
        next one (by trial number until a trial has finished)."""
        finished = [t for t in study.get_trials(deepcopy=False)
                    if t.state.is_finished() and t.number < number]
        if not finished:
            return self._turn(number)
        last = max(finished, key=lambda t: t.number)
        member = last.system_attrs.get(_MEMBER_ATTR, self._turn(last.number))
        before = min((_time(t) for t in finished if t.number < last.number), default=math.inf)
        return member if _time(last) < before else (member + 1) % len(self._members)

    def _turn(self, number: int) -> int:
        return self._turns[number % len(self._turns)]

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return self._member(study, trial).infer_relative_search_space(study, trial)

    def sample_relative(self, study: Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        return self._member(study, trial).sample_relative(study, trial, search_space)

    def sample_independent(self, study: Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        return self._member(study, trial).sample_independent(study, trial, param_name, param_distribution)

    def reseed_rng(self) -> None:
        for member in self._members:
            member.reseed_rng()
        if self._opening is not None:
            self._opening.reseed_rng()


def _time(trial: FrozenTrial) -> float:
    """The time a trial measured for a config it compiled first (inf for a failure, a repeat or a
    rejected config)."""
    record = trial.user_attrs.get(RECORD_ATTR)
    if not isinstance(record, dict) or record.get("duplicate_of") is not None:
        return math.inf
    time_ms = record.get("time_ms")
    return float(time_ms) if time_ms and record.get("outcome") != "rejected" else math.inf
