"""A study's trials as one process knows them, and the one way a trial is answered and told.

:class:`TrialRecord` is what a trial did (its ``"flysearch"`` user attribute); :class:`History`
is what each config already answered; :class:`Trials` holds the sampler's study with its history
and finishes trials, for the study loop (:mod:`flysearch.study._loop`) and for the evaluators
that answer it a batch at a time.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import TrialState

from flysearch._optuna import tell
from flysearch.tables import Outcome

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial

    from flysearch.space import ArchProfile, Config, Shape, Space

__all__ = ["CONSTRAINT_AWARE", "RECORD_ATTR", "History", "TrialRecord", "Trials", "tell_record"]

# Samplers that learn from trial constraints; the others are spared the extra storage write.
CONSTRAINT_AWARE = frozenset({"tpe", "tpe-unseen", "gp"})
RECORD_ATTR = "flysearch"  # the user attribute that holds each trial's TrialRecord, and the study's settings


@dataclass
class TrialRecord:
    """What one trial did; stored as the trial's ``"flysearch"`` user attribute."""

    key: str
    outcome: str
    time_ms: float | None = None
    compile_index: int | None = None
    duplicate_of: int | None = None
    rejected_by: str | None = None
    cost_s: float = 0.0
    compile_s: float | None = None
    detail: str = ""

    @property
    def violation(self) -> float:
        """1 for a rejected or failed config (infeasible to the sampler), 0 otherwise."""
        return 0.0 if self.outcome == Outcome.OK.value else 1.0

    def as_dict(self) -> dict[str, Any]:
        """The record as a trial's user attribute (``dataclasses.asdict`` of its flat fields, built
        without its recursive copy: one per trial)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__}

    @classmethod
    def from_trial(cls, trial: FrozenTrial) -> TrialRecord | None:
        return cls.from_dict(trial.user_attrs.get(RECORD_ATTR))

    @classmethod
    def from_dict(cls, raw: Any) -> TrialRecord | None:
        """The record stored as a trial's user attribute (``None`` if *raw* is not one)."""
        if not isinstance(raw, dict):
            return None
        return cls(**{k: raw.get(k) for k in cls.__dataclass_fields__ if k in raw})


class History:
    """The study's own memory: what each config key already answered, and what was spent."""

    def __init__(self) -> None:
        self.by_key: dict[str, tuple[int, TrialRecord]] = {}
        self.compiles = 0
        self.cost_s = 0.0
        self.worst_ok_ms: float | None = None
        self.best_ok_ms: float | None = None

    def add(self, number: int, record: TrialRecord) -> None:
        if record.duplicate_of is None:
            self.by_key.setdefault(record.key, (number, record))
        if record.compile_index is not None:
            self.compiles = max(self.compiles, record.compile_index)
        self.cost_s = max(self.cost_s, record.cost_s)
        if record.outcome == Outcome.OK.value and record.time_ms is not None:
            self.worst_ok_ms = max(self.worst_ok_ms or 0.0, record.time_ms)
            self.best_ok_ms = min(self.best_ok_ms or math.inf, record.time_ms)

    def value(self, record: TrialRecord) -> float:
        """The objective value: the time, or for anything else the worst time seen (NaN if none)."""
        if record.outcome == Outcome.OK.value and record.time_ms is not None:
            return record.time_ms
        return self.worst_ok_ms if self.worst_ok_ms is not None else math.nan


def tell_record(study: optuna.Study, trial_number: int, history: History, record: TrialRecord) -> None:
    """Finish trial *trial_number* with *record*'s objective value (:meth:`History.value`), or as
    failed when no time was measured yet to stand for a rejection or failure."""
    value = history.value(record)
    if math.isnan(value):
        tell(study, trial_number, None, TrialState.FAIL)
    else:
        tell(study, trial_number, value, None)


class Trials:
    """The sampler's study, its :class:`History`, and how a trial is answered and finished.

    Args:
        study: The study the sampler asks and the loop tells.
        sampler: The sampler's registry name (constraint-aware samplers get each trial's violation).
        target_ms: A time that ends the study once reached (a replayed table's optimum).
        attrs: Further user attributes every finished trial carries (a live worker's name).
        on_told: Called with each finished trial's number once it is told.
    """

    def __init__(self, study: optuna.Study, sampler: str, *, target_ms: float | None = None,
                 attrs: dict[str, Any] | None = None,
                 on_told: Callable[[int], None] | None = None) -> None:
        self.study = study
        self.history = History()
        self.target_ms = target_ms
        self.reached = False  # a successful time at most target_ms was seen
        self.ask_s = 0.0  # seconds spent asking the sampler
        self.on_told = on_told
        self._attrs = dict(attrs or {})
        self._constraints = sampler in CONSTRAINT_AWARE

    def ask(self, distributions: dict[str, Any]) -> optuna.trial.Trial:
        start = time.monotonic()
        trial = self.study.ask(distributions)
        self.ask_s += time.monotonic() - start
        return trial

    def absorb(self, trial: FrozenTrial) -> None:
        """Learn a trial finished elsewhere (an earlier run, another process)."""
        record = TrialRecord.from_trial(trial)
        if record is not None:
            self.history.add(trial.number, record)
            self.reached = self.reached or self._reaches(record)

    def at_once(self, config: Config, space: Space, shape: Shape | None,
                arch: ArchProfile | None) -> TrialRecord | None:
        """The answer that needs no compile: a duplicate's, copied from the config's first trial,
        or a rejection by the space's constraints; ``None`` when the config must be compiled."""
        if config.key in self.history.by_key:
            return self.duplicate(config.key)
        reason = space.reject_reason(config, shape, arch)
        if reason is not None:
            return TrialRecord(config.key, Outcome.REJECTED.value, rejected_by=reason,
                               cost_s=self.history.cost_s)
        return None

    def duplicate(self, key: str) -> TrialRecord:
        """The record of a trial that repeats *key*, answered from its first trial."""
        number, first = self.history.by_key[key]
        return TrialRecord(key, first.outcome, first.time_ms, duplicate_of=number,
                           rejected_by=first.rejected_by, cost_s=self.history.cost_s, detail=first.detail)

    def finish(self, trial: optuna.trial.Trial, record: TrialRecord) -> None:
        """Store *record* on *trial*, learn it, and tell the sampler's study."""
        trial.set_user_attr(RECORD_ATTR, record.as_dict())
        for name, value in self._attrs.items():
            trial.set_user_attr(name, value)
        if self._constraints:
            trial.set_constraint(RECORD_ATTR, record.violation)
        self.history.add(trial.number, record)
        tell_record(self.study, trial.number, self.history, record)
        self.reached = self.reached or self._reaches(record)
        if self.on_told is not None:
            self.on_told(trial.number)

    def _reaches(self, record: TrialRecord) -> bool:
        return (self.target_ms is not None and record.outcome == Outcome.OK.value
                and record.time_ms is not None and record.time_ms <= self.target_ms)
