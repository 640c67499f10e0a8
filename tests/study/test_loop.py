"""The one study loop, driven by a trial evaluator that answers a batch at a time."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import optuna
import pytest

from flysearch.samplers import SearchContext, make_sampler
from flysearch.space import Param, Space
from flysearch.study._loop import run_loop
from flysearch.study._trials import TrialRecord, Trials
from flysearch.tables import Outcome

optuna.logging.set_verbosity(optuna.logging.WARNING)


class BatchEvaluator:
    """Keeps up to *depth* trials in flight and answers them all when the loop waits."""

    def __init__(self, trials: Trials, depth: int) -> None:
        self.trials, self.depth = trials, depth
        self.flying: list[tuple[optuna.trial.Trial, str]] = []
        self.waiting: list[tuple[optuna.trial.Trial, str]] = []  # behind a flying compile
        self.compiled: list[str] = []
        self.turns = self.waits = 0
        self.most_in_flight = 0

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        self.turns += 1
        yield

    def wants_more(self) -> bool:
        return len(self.flying) < self.depth

    def submit(self, trial, config):
        if any(key == config.key for _t, key in self.flying):
            self.waiting.append((trial, config.key))
            return "waiting"
        self.flying.append((trial, config.key))
        self.most_in_flight = max(self.most_in_flight, len(self.flying))
        return "compile"

    def between(self) -> None:
        pass

    def settled(self) -> bool:
        return not self.flying and not self.waiting

    def wait(self) -> None:
        self.waits += 1
        history = self.trials.history
        for trial, key in self.flying:
            history.compiles += 1
            self.compiled.append(key)
            value = float(sum(int(part.split("=")[1]) for part in key.split(",")))
            self.trials.finish(trial, TrialRecord(key, Outcome.OK.value, value,
                                                  compile_index=history.compiles))
        self.flying = []
        for trial, key in self.waiting:
            self.trials.finish(trial, self.trials.duplicate(key))
        self.waiting = []


def _space() -> Space:
    return Space("toy", [Param("a", (1, 2, 3, 4)), Param("b", (1, 2, 3, 4))])


@pytest.mark.parametrize("depth", [1, 4])
def test_a_batch_evaluator_spends_the_budget_once_with_trials_in_flight(depth: int) -> None:
    space = _space()
    context = SearchContext(space, "ordinal", space.enumerate(None, None).shuffled(0), None, None, None)
    study = optuna.create_study(sampler=make_sampler("grid", seed=0, context=context))
    trials = Trials(study, "grid")
    evaluator = BatchEvaluator(trials, depth)
    result = run_loop(trials, space, context, evaluator, budget=10, max_idle=50)
    assert result.stopped == "budget spent"
    assert len(evaluator.compiled) == len(set(evaluator.compiled)) >= 10
    assert evaluator.most_in_flight == depth
    assert trials.history.compiles == len(evaluator.compiled)
    # Every finished trial carries its record, and the study saw each one told.
    told = [t for t in study.get_trials() if t.state.is_finished()]
    assert len(told) == result.asked
    assert all(TrialRecord.from_trial(t).compile_index for t in told)


def test_the_loop_stops_when_the_feasible_space_is_spent_and_nothing_flies() -> None:
    space = _space()
    context = SearchContext(space, "ordinal", space.enumerate(None, None).shuffled(0), None, None, None)
    study = optuna.create_study(sampler=make_sampler("grid", seed=0, context=context))
    trials = Trials(study, "grid")
    evaluator = BatchEvaluator(trials, 3)
    result = run_loop(trials, space, context, evaluator, budget=100, max_idle=50)
    assert result.stopped == "feasible space exhausted"
    assert sorted(evaluator.compiled) == sorted(c.key for c in context.feasible)
    assert evaluator.settled()

