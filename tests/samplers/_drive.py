"""Drive a candidate sampler through a study by hand, recording each trial as flysearch does."""

from __future__ import annotations

from collections.abc import Callable

import optuna

from flysearch.samplers import SearchContext


def proposals(sampler: optuna.samplers.BaseSampler, context: SearchContext, n: int,
              time_of: Callable[[int], float | None] = lambda _i: 1.0) -> list[int]:
    """The candidates *sampler* proposes in *n* trials, each timed ``time_of(candidate)`` (``None``:
    the compile failed)."""
    study = optuna.create_study(sampler=sampler)
    index = {key: i for i, key in enumerate(context.keys)}
    picks = []
    for _ in range(n):
        trial = study.ask(dict(context.distributions))
        key = context.space.decode(trial.params, context.encoding).key
        picks.append(index[key])
        time_ms = time_of(index[key])
        trial.set_user_attr("flysearch", {"key": key, "time_ms": time_ms, "outcome": "ok"})
        study.tell(trial, time_ms if time_ms is not None else 1e9)
    return picks
