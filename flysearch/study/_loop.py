"""The study loop: ask -> answer (duplicate / rejected / compile) -> tell, for every study.

A replayed study and a live one run this same loop; they differ in what compiles. The loop asks
the sampler for a trial, answers it at once when no compile is needed (:meth:`Trials.at_once`),
and otherwise hands it to a :class:`TrialEvaluator`, which finishes it through
:meth:`Trials.finish` when its measurement is in: at once for a replayed table
(:class:`SyncEvaluator`), or later, a batch at a time, for the live pipeline
(:class:`~flysearch.study.live._pipeline.Pipeline`), which keeps several trials in flight while a
pool compiles and a GPU times.

The loop runs in passes. A pass opens a :meth:`TrialEvaluator.turn` (a replay holds the shared
study's lock and learns the trials other processes finished; a live worker pulls other workers'
measurements), asks while the evaluator wants more trials, and closes the turn (which writes what
was finished). Between passes the evaluator waits for results. The study stops when its budget of
unique compiles is spent, the feasible space is exhausted, the target time is reached, or the
sampler keeps proposing configs that need no compile; it ends once nothing is in flight.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from flysearch.evaluators import measure
from flysearch.study._trials import TrialRecord, Trials
from flysearch.tables import Outcome

if TYPE_CHECKING:
    import optuna

    from flysearch.evaluators import Evaluator
    from flysearch.samplers import SearchContext
    from flysearch.space import Config, Space
    from flysearch.study._shared import SharedStudy

__all__ = ["LoopResult", "Submitted", "SyncEvaluator", "TrialEvaluator", "run_loop"]

Submitted = Literal["compile", "waiting", "answered", "full"]
"""What an evaluator did with a trial: sent its config to be compiled; queued it behind the same
config's compile (its answer will be a duplicate's); answered it at once; or refused it because the
study's budget of compiles is taken."""


class TrialEvaluator(Protocol):
    """What the loop hands the trials that need a compile (see the module's docstring)."""

    def turn(self) -> contextlib.AbstractContextManager[None]:
        """One pass of the loop: what is shared with other processes is read on entry and written
        on exit."""

    def wants_more(self) -> bool:
        """Whether to ask for another trial in this pass."""

    def submit(self, trial: optuna.trial.Trial, config: Config) -> Submitted:
        """Start answering *trial*; its answer comes through :meth:`Trials.finish`."""

    def between(self) -> None:
        """Called after each suggestion: a chance to keep the evaluator's own stages busy."""

    def settled(self) -> bool:
        """Whether nothing is in flight (the loop may end)."""

    def wait(self) -> None:
        """Block until some result is in, and finish its trials."""


@dataclass
class LoopResult:
    """Why the loop stopped and how many trials it asked."""

    stopped: str
    asked: int


def run_loop(trials: Trials, space: Space, context: SearchContext, evaluator: TrialEvaluator, *,
             budget: int, max_idle: int,
             progress: Callable[[int, int], None] | None = None) -> LoopResult:
    """Ask, answer and tell until the study stops (see the module's docstring).

    Args:
        trials: The sampler's study and its history.
        space: The space searched (decodes trial parameters, rejects configs).
        context: The pruned space's distributions, shape and arch.
        evaluator: What answers the trials that need a compile.
        budget: Unique compiles the study may spend.
        max_idle: Stop after this many suggestions in a row that needed no compile.
        progress: Called as ``progress(compiles, target)`` after each pass.
    """
    n_feasible = len(context.feasible)
    target = min(budget, n_feasible)
    spent = "feasible space exhausted" if target >= n_feasible else "budget spent"
    history = trials.history
    idle = asked = 0
    stopped = ""
    while True:
        with evaluator.turn():
            while not stopped:
                if trials.reached:
                    stopped = "target reached"
                elif history.compiles >= target:
                    stopped = spent
                elif idle >= max_idle:
                    stopped = f"{max_idle} suggestions in a row needed no compile"
                if stopped or not evaluator.wants_more():
                    break
                trial = trials.ask(context.distributions)
                asked += 1
                config = space.decode(trial.params, context.encoding)
                record = trials.at_once(config, space, context.shape, context.arch)
                if record is not None:
                    trials.finish(trial, record)
                    idle += 1
                else:
                    submitted = evaluator.submit(trial, config)
                    idle = 0 if submitted in ("compile", "waiting") else idle + 1
                    if submitted == "full":
                        stopped = spent
                evaluator.between()
        if progress is not None:
            progress(history.compiles, target)
        if stopped and evaluator.settled():
            if history.compiles >= target:  # the trials in flight when it stopped spent the budget
                stopped = "target reached" if trials.reached else spent
            return LoopResult(stopped, asked)
        evaluator.wait()


class SyncEvaluator:
    """Answers each trial at once with an :class:`~flysearch.evaluators.Evaluator` (a replayed
    table, or one compile and timing at a time), one trial per pass, each pass one turn of a
    :class:`~flysearch.study._shared.SharedStudy`."""

    def __init__(self, evaluator: Evaluator, trials: Trials, shared: SharedStudy,
                 context: SearchContext) -> None:
        self._evaluator, self._trials, self._shared = evaluator, trials, shared
        self._shape = context.shape
        self._asked = False

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        with self._shared.turn() as turn:
            for t in turn.arrived:  # this study's earlier trials, and other processes' new ones
                self._trials.absorb(t)
            self._trials.on_told = turn.finished.append
            self._asked = False
            yield

    def wants_more(self) -> bool:
        return not self._asked

    def submit(self, trial: optuna.trial.Trial, config: Config) -> Submitted:
        history = self._trials.history
        measurement = measure(self._evaluator, config, self._shape)
        history.compiles += 1
        history.cost_s += measurement.cost_s
        # A compiled config whose resources fail (spills, LDS) is rejected like a constraint would.
        rejected_by = measurement.detail if measurement.outcome is Outcome.REJECTED else None
        self._trials.finish(trial, TrialRecord(
            config.key, measurement.outcome.value, measurement.time_ms, compile_index=history.compiles,
            rejected_by=rejected_by, cost_s=history.cost_s, compile_s=measurement.compile_s,
            detail=measurement.detail,
        ))
        return "compile"

    def between(self) -> None:
        self._asked = True

    def settled(self) -> bool:
        return True

    def wait(self) -> None:
        return None
