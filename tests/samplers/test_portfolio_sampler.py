"""The default cold-start sampler ``auto``: a portfolio whose members propose in turn."""

from __future__ import annotations

from typing import Any

import optuna
import pytest

from flysearch.compare._experiment import TableSpec
from flysearch.compare._run import load_table
from flysearch.evaluators import ReplayEvaluator
from flysearch.samplers import SearchContext, make_sampler, sampler_options_problem
from flysearch.samplers._portfolio import PortfolioSampler
from flysearch.space import get_arch
from flysearch.study import StudySpec, run_study, trial_records
from flysearch.tables import space_for_table
from tests.conftest import REPO, hub_file


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


def test_turns_repeat_an_order_of_the_members() -> None:
    study = optuna.create_study(sampler=PortfolioSampler([_Fixed(1), _Fixed(7)], turns=(0, 1, 1)))
    study.optimize(lambda t: t.suggest_int("x", 0, 9), n_trials=6)
    assert [t.params["x"] for t in study.trials] == [1, 7, 7, 1, 7, 7]
    with pytest.raises(ValueError, match="name each of its 2 members"):
        PortfolioSampler([_Fixed(1), _Fixed(7)], turns=(1, 1))


def test_auto_gives_the_forest_more_turns_only_where_it_reads_gemm_features(dedisp) -> None:  # type: ignore[no-untyped-def]
    path = REPO / "lab/benchmarks/data/h100_fused/triton_gemm_fused__H100__4x576x7168.table.json.gz"
    gemm = load_table(TableSpec(str(path)), "")
    gemm_space, shape, arch = space_for_table(gemm), gemm.meta.shape(), get_arch("sm_90")
    feasible = gemm_space.enumerate(shape, arch).shuffled(0)
    gemm_context = SearchContext(gemm_space, "ordinal", feasible, shape, arch)
    _table, space = dedisp
    plain_context = SearchContext(space, "ordinal", space.enumerate().shuffled(0))
    turns = {name: make_sampler("auto", seed=0, context=context)._turns
             for name, context in (("gemm", gemm_context), ("plain", plain_context))}
    assert turns == {"gemm": (0, 1, 1), "plain": (0, 1)}  # the default, forest_turns = 2
    for forest_turns, order in ((1, (0, 1)), (3, (0, 1, 1, 1))):
        sampler = make_sampler("auto", seed=0, context=gemm_context, options={"forest_turns": forest_turns})
        assert sampler._turns == order
    assert "1 or more, not 0" in str(sampler_options_problem("auto", {"forest_turns": 0}))


def test_an_empty_portfolio_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        PortfolioSampler([])


# Under pytest-xdist one worker runs this module, so that its module fixture is set up once.
pytestmark = pytest.mark.xdist_group("samplers/test_portfolio_sampler")


@pytest.fixture(scope="module")
def dedisp() -> tuple:  # type: ignore[type-arg]
    table = load_table(TableSpec(str(hub_file("dedispersion_milo", "MI250X"))), "")
    return table, space_for_table(table)


def _keys(table, space, seed: int, options: dict[str, Any] | None = None) -> list[str]:  # type: ignore[no-untyped-def]
    settings = StudySpec(sampler="auto", sampler_options=options or {}, budget=30, seed=seed,
                         space=space.name, table=table.name)
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


def test_auto_s_members_start_modelling_after_as_many_measurements_as_asked(dedisp) -> None:  # type: ignore[no-untyped-def]
    # With the GP drawing uniformly until 10 measurements and the forest until 8, about the first
    # nine trials are draws; with both at 2 the models propose from the third trial on. The draws
    # themselves come from the same seeded streams. The default starts both after 5.
    table, space = dedisp
    late = _keys(table, space, seed=4, options={"gp_startup": 10, "forest_startup": 8})
    early = _keys(table, space, seed=4, options={"gp_startup": 2, "forest_startup": 2})
    default = _keys(table, space, seed=4)
    assert early[:2] == late[:2] == default[:2] and default[:5] == late[:5]
    assert sum(a != b for a, b in zip(early[2:9], late[2:9], strict=True)) >= 6
    assert sum(a != b for a, b in zip(default[5:9], late[5:9], strict=True)) >= 3
    assert "2 or more, not 1" in str(sampler_options_problem("auto", {"gp_startup": 1}))
    assert "2 or more, not 0" in str(sampler_options_problem("auto", {"forest_startup": 0}))


def test_auto_needs_the_feasible_configs() -> None:
    with pytest.raises(ValueError, match="needs the search context"):
        make_sampler("auto", seed=0)


def test_auto_is_the_gp_and_the_forest(dedisp) -> None:  # type: ignore[no-untyped-def]
    _table, space = dedisp
    context = SearchContext(space, "ordinal", space.enumerate().shuffled(0))
    sampler = make_sampler("auto", seed=0, context=context)
    assert isinstance(sampler, PortfolioSampler)
    assert [type(m).__name__ for m in sampler._members] == ["FeasibleGPSampler", "CostModelSampler"]


def _turns_next_to_the_best(table, space, options: dict[str, Any]) -> float:  # type: ignore[no-untyped-def]
    """The share of the trials 9, 13, 17, ... (the forest's even turns from its third on: its model
    turns begin at trial 5) that proposed a config one value step from the best measured before it."""
    settings = StudySpec(sampler="auto", sampler_options=options, budget=80, seed=3, space=space.name,
                         table=table.name)
    storage = optuna.storages.InMemoryStorage()
    run_study("l", space, ReplayEvaluator(table), settings, storage=storage)
    records = [r for _t, r in trial_records(optuna.load_study(study_name="l", storage=storage))]
    names = [p.name for p in space.free_params()]
    values = {p.name: list(p.values) for p in space.free_params()}
    configs = {c.key: c for c in space.enumerate().feasible}

    def steps(a: str, b: str) -> int:
        return sum(abs(values[n].index(configs[a][n]) - values[n].index(configs[b][n])) for n in names)

    near = []
    for t in range(9, len(records), 4):
        best = min((r for r in records[:t] if r.time_ms), key=lambda r: r.time_ms)
        ties = [r for r in records[:t] if r.time_ms and r.time_ms <= best.time_ms]
        near.append(min(steps(records[t].key, r.key) for r in ties) == 1)
    return sum(near) / len(near)


def test_auto_s_forest_refines_near_the_best_config_on_every_second_turn(dedisp) -> None:  # type: ignore[no-untyped-def]
    # The forest alternates by its own turns: by the study's measurements, which have the same
    # parity at each of its turns in a portfolio of two, it would never take the local step. (A
    # local turn whose best config has no unevaluated neighbour left proposes elsewhere: half of
    # them here.)
    table, space = dedisp
    local = _turns_next_to_the_best(table, space, {})
    assert local >= 0.4
    assert _turns_next_to_the_best(table, space, {"local": False}) <= local / 4


def test_auto_s_options_are_checked() -> None:
    assert sampler_options_problem("auto", {"local": False, "forest_turns": 3}) is None
    assert "is true or false, not 'no'" in str(sampler_options_problem("auto", {"local": "no"}))
    assert "is a whole number, not True" in str(sampler_options_problem("auto", {"gp_startup": True}))
    assert "Unknown option(s) kappa" in str(sampler_options_problem("auto", {"kappa": 2}))
    # The options of the variants that did not pass their rule left with them.
    assert "Unknown option(s) elite_every" in str(sampler_options_problem("auto", {"elite_every": 2}))
