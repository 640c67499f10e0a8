"""The spreadforest sampler: only unevaluated feasible configs, running trials respected, seeded."""

from __future__ import annotations

import numpy as np
import optuna
import pytest

from flysearch.compare._experiment import TableSpec
from flysearch.compare._run import load_table
from flysearch.evaluators import ReplayEvaluator
from flysearch.samplers import SearchContext, make_sampler
from flysearch.samplers._forest import SpreadForestSampler, hamming_to_nearest
from flysearch.study import StudySpec, run_study, trial_records
from flysearch.tables import space_for_table
from tests.conftest import hub_file

# Under pytest-xdist one worker runs this module, so that its module fixture is set up once.
pytestmark = pytest.mark.xdist_group("samplers/test_forest_sampler")


@pytest.fixture(scope="module")
def conv_a100() -> tuple:  # type: ignore[type-arg]
    table = load_table(TableSpec(str(hub_file("convolution_milo", "A100"))), "")
    return table, space_for_table(table)


def _keys(table, space, seed: int, budget: int) -> list[str]:  # type: ignore[no-untyped-def]
    settings = StudySpec(sampler="spreadforest", budget=budget, seed=seed, space=space.name, table=table.name)
    storage = optuna.storages.InMemoryStorage()
    summary = run_study("s", space, ReplayEvaluator(table), settings, storage=storage)
    assert summary.compiles == summary.trials == budget  # no duplicate, no rejected suggestion
    assert summary.duplicates == summary.rejected == 0
    records = trial_records(optuna.load_study(study_name="s", storage=storage))
    return [r.key for _t, r in sorted(records, key=lambda tr: tr[0].number)]


def test_hamming_to_nearest() -> None:
    rows = np.array([[0, 0, 0], [1, 2, 3], [0, 2, 0]])
    assert hamming_to_nearest(rows, np.array([[0, 0, 1], [1, 2, 3]])).tolist() == [1, 0, 2]
    assert hamming_to_nearest(rows, np.zeros((0, 3), int)).tolist() == [3, 3, 3]


def test_only_unevaluated_feasible_configs_and_seeded(conv_a100) -> None:  # type: ignore[no-untyped-def]
    table, space = conv_a100
    enumeration = space.enumerate()
    feasible = {c.key for c in enumeration.feasible}
    assert len(feasible) < enumeration.total  # the constraints reject some configs of the product
    keys = _keys(table, space, seed=5, budget=40)  # past the spread start: the forest picks 24
    assert len(set(keys)) == 40
    assert set(keys) <= feasible
    assert keys == _keys(table, space, seed=5, budget=40)  # the same seed, the same run
    assert keys != _keys(table, space, seed=6, budget=40)


def _measure(study: optuna.Study, context: SearchContext, table, n: int) -> None:  # type: ignore[no-untyped-def]
    evaluator = ReplayEvaluator(table)
    for _ in range(n):
        trial = study.ask(context.distributions)
        config = context.space.decode(trial.params)
        measured = evaluator.time(evaluator.compile(config, None))
        trial.set_user_attr("flysearch", {"key": config.key, "outcome": measured.outcome.value,
                                          "time_ms": measured.time_ms})
        study.tell(trial, measured.time_ms or 1e9)


@pytest.mark.parametrize("told", [0, 1, 20])
def test_running_trials_are_not_proposed_twice(conv_a100, told: int) -> None:  # type: ignore[no-untyped-def]
    """In the spread start (0 or 1 measured) and under the forest (20 measured), a batch of asks
    before any tell proposes distinct configs, none already measured."""
    table, space = conv_a100
    context = SearchContext(space, "ordinal", space.enumerate().shuffled(0))
    sampler = make_sampler("spreadforest", seed=0, context=context)
    assert isinstance(sampler, SpreadForestSampler)
    study = optuna.create_study(sampler=sampler)
    _measure(study, context, table, told)
    measured = {space.decode(t.params).key for t in study.trials}
    batch = [space.decode(study.ask(context.distributions).params).key for _ in range(4)]
    assert len(set(batch)) == 4
    assert not set(batch) & measured


def test_spread_start_keeps_configs_apart(conv_a100) -> None:  # type: ignore[no-untyped-def]
    """The second config differs from the first in every free parameter (such a config exists)."""
    table, space = conv_a100
    keys = _keys(table, space, seed=1, budget=2)
    configs = {c.key: c for c in space.enumerate().feasible}
    first, second = configs[keys[0]], configs[keys[1]]
    assert all(first[p.name] != second[p.name] for p in space.free_params())
