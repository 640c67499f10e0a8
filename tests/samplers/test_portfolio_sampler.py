"""The default cold-start sampler ``auto``: a portfolio whose members propose in turn."""

from __future__ import annotations

from typing import Any

import optuna
import pytest

from flysearch.compare._experiment import TableSpec
from flysearch.compare._run import load_table
from flysearch.evaluators import ReplayEvaluator
from flysearch.samplers import SearchContext, make_sampler
from flysearch.samplers._portfolio import PortfolioSampler
from flysearch.study import StudySpec, run_study, trial_records
from flysearch.tables import space_for_table
from tests.conftest import hub_file


class _Fixed(optuna.samplers.BaseSampler):
    """Proposes one fixed value of ``x`` and counts its calls."""

    def __init__(self, value: int) -> None:
        self.value, self.calls, self.reseeded = value, 0, 0

    def infer_relative_search_space(self, study: Any, trial: Any) -> dict[str, Any]:
        return {"x": optuna.distributions.IntDistribution(0, 9)}

    def sample_relative(self, study: Any, trial: Any, search_space: Any) -> dict[str, Any]:
        self.calls += 1
        return {"x": self.value}

    def sample_independent(self, study: Any, trial: Any, name: str, dist: Any) -> Any:
        raise AssertionError("a portfolio member samples jointly")

    def reseed_rng(self) -> None:
        self.reseeded += 1


def test_members_propose_in_turn_by_trial_number() -> None:
    a, b = _Fixed(1), _Fixed(7)
    portfolio = PortfolioSampler([a, b])
    study = optuna.create_study(sampler=portfolio)
    study.optimize(lambda t: t.suggest_int("x", 0, 9), n_trials=5)
    assert [t.params["x"] for t in study.trials] == [1, 7, 1, 7, 1]
    assert (a.calls, b.calls) == (3, 2)
    portfolio.reseed_rng()
    assert a.reseeded == b.reseeded == 1


def test_an_empty_portfolio_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        PortfolioSampler([])


@pytest.fixture(scope="module")
def dedisp() -> tuple:  # type: ignore[type-arg]
    table = load_table(TableSpec(str(hub_file("dedispersion_milo", "MI250X"))), "")
    return table, space_for_table(table)


def _keys(table, space, seed: int) -> list[str]:  # type: ignore[no-untyped-def]
    settings = StudySpec(sampler="auto", budget=30, seed=seed, space=space.name, table=table.name)
    storage = optuna.storages.InMemoryStorage()
    summary = run_study("a", space, ReplayEvaluator(table), settings, storage=storage)
    assert summary.compiles == summary.trials == 30  # no duplicate, no rejected suggestion
    assert summary.duplicates == summary.rejected == 0
    return [r.key for _t, r in trial_records(optuna.load_study(study_name="a", storage=storage))]


def test_auto_proposes_only_new_feasible_configs_and_repeats_with_its_seed(dedisp) -> None:  # type: ignore[no-untyped-def]
    table, space = dedisp
    keys = _keys(table, space, seed=4)
    assert len(set(keys)) == 30
    assert keys == _keys(table, space, seed=4)
    assert keys != _keys(table, space, seed=5)


def test_auto_needs_the_feasible_configs() -> None:
    with pytest.raises(ValueError, match="needs the search context"):
        make_sampler("auto", seed=0)


def test_auto_is_the_gp_and_the_forest(dedisp) -> None:  # type: ignore[no-untyped-def]
    _table, space = dedisp
    context = SearchContext(space, "ordinal", space.enumerate().shuffled(0))
    sampler = make_sampler("auto", seed=0, context=context)
    assert isinstance(sampler, PortfolioSampler)
    assert [type(m).__name__ for m in sampler._members] == ["FeasibleGPSampler", "CostModelSampler"]
