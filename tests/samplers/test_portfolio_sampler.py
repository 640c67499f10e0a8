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


def _timed(times: dict[int, Any]):  # type: ignore[no-untyped-def]
    """An objective that records a flysearch trial record whose time is ``times[x](trial number)``."""
    def objective(trial: optuna.Trial) -> float:
        x = trial.suggest_int("x", 0, 9)
        time_ms = float(times[x](trial.number))
        trial.set_user_attr("flysearch", {"key": f"x={x}", "time_ms": time_ms, "outcome": "ok"})
        return time_ms
    return objective


def test_with_winner_stays_a_member_proposes_while_it_sets_new_bests() -> None:
    # Member a's configs get faster at every trial, b's never beat them: a keeps the turn.
    study = optuna.create_study(sampler=PortfolioSampler([_Fixed(1), _Fixed(7)], winner_stays=True))
    study.optimize(_timed({1: lambda n: 100 - n, 7: lambda n: 1000}), n_trials=6)
    assert [t.params["x"] for t in study.trials] == [1] * 6
    # a sets one best and then matches it, which is no new best: the turn passes on after each.
    study = optuna.create_study(sampler=PortfolioSampler([_Fixed(1), _Fixed(7)], winner_stays=True))
    study.optimize(_timed({1: lambda n: 50, 7: lambda n: 1000}), n_trials=6)
    assert [t.params["x"] for t in study.trials] == [1, 1, 7, 1, 7, 1]
    assert [t.system_attrs["flysearch:portfolio_member"] for t in study.trials] == [0, 0, 1, 0, 1, 0]


def test_with_winner_stays_another_process_continues_the_same_sequence() -> None:
    # The member of each trial is in the study, not in the sampler: a fresh sampler on the same
    # storage (another process) continues where the first one stopped.
    times = {1: lambda n: 100 - n if n < 3 else 500, 7: lambda n: 90 - n}
    whole = optuna.create_study(sampler=PortfolioSampler([_Fixed(1), _Fixed(7)], winner_stays=True))
    whole.optimize(_timed(times), n_trials=8)
    storage = optuna.storages.InMemoryStorage()
    first = optuna.create_study(storage=storage, study_name="s",
                                sampler=PortfolioSampler([_Fixed(1), _Fixed(7)], winner_stays=True))
    first.optimize(_timed(times), n_trials=4)
    second = optuna.load_study(storage=storage, study_name="s",
                               sampler=PortfolioSampler([_Fixed(1), _Fixed(7)], winner_stays=True))
    second.optimize(_timed(times), n_trials=4)
    sequence = [t.params["x"] for t in whole.trials]
    assert [t.params["x"] for t in second.trials] == sequence
    assert sequence == [1, 1, 1, 1, 7, 7, 7, 7]


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
    elite = make_sampler("auto", seed=0, context=gemm_context, options={"elite_every": 2})
    assert elite._turns == (0, 1, 1, 0, 1, 1, 2)  # the elite Gaussian: one trial in seven


def test_an_empty_portfolio_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one"):
        PortfolioSampler([])


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


def _turns_next_to_the_best(table, space, options: dict[str, Any], first: int = 9, every: int = 4,  # type: ignore[no-untyped-def]
                            hamming: bool = False, within: int = 1, centres: float = 0.0) -> float:
    """The share of the trials *first*, *first* + *every*, ... that proposed a config one value step
    (1 to *within* steps) from the best measured before it (with *hamming*, one that differs from it
    in one parameter; with *centres*, from the nearest config measured within that fraction of the
    best time): by default the forest's even turns from its third on (its model turns begin at
    trial 5)."""
    settings = StudySpec(sampler="auto", sampler_options=options, budget=80, seed=3, space=space.name,
                         table=table.name)
    storage = optuna.storages.InMemoryStorage()
    run_study("l", space, ReplayEvaluator(table), settings, storage=storage)
    records = [r for _t, r in trial_records(optuna.load_study(study_name="l", storage=storage))]
    names = [p.name for p in space.free_params()]
    values = {p.name: list(p.values) for p in space.free_params()}
    configs = {c.key: c for c in space.enumerate().feasible}

    def steps(a: str, b: str) -> int:
        if hamming:
            return sum(configs[a][n] != configs[b][n] for n in names)
        return sum(abs(values[n].index(configs[a][n]) - values[n].index(configs[b][n])) for n in names)

    near = []
    for t in range(first, len(records), every):
        best = min((r for r in records[:t] if r.time_ms), key=lambda r: r.time_ms)
        near_best = [r for r in records[:t] if r.time_ms and r.time_ms <= best.time_ms * (1 + centres)]
        near.append(1 <= min(steps(records[t].key, r.key) for r in near_best or [best]) <= within)
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


def test_auto_s_gp_refines_near_the_best_config_on_every_second_turn_when_asked(dedisp) -> None:  # type: ignore[no-untyped-def]
    # The GP proposes at even trials; its model turns begin at trial 6 (after 5 measurements), and
    # its odd ones are trials 8, 12, 16, ...
    table, space = dedisp
    local = _turns_next_to_the_best(table, space, {"gp_local": True}, first=8)
    assert local >= 0.3
    assert _turns_next_to_the_best(table, space, {}, first=8) <= local / 4


def test_auto_s_forest_can_step_to_any_value_of_one_parameter_and_on_every_turn(dedisp) -> None:  # type: ignore[no-untyped-def]
    table, space = dedisp
    assert _turns_next_to_the_best(table, space, {"hamming": True}, hamming=True) >= 0.4
    # One value step is one parameter changed, not the other way round: the Hamming moves reach
    # further than the steps.
    assert (_turns_next_to_the_best(table, space, {"hamming": True}) <
            _turns_next_to_the_best(table, space, {"hamming": True}, hamming=True))
    every = _turns_next_to_the_best(table, space, {"local_every": 1}, every=2)  # trials 9, 11, 13, ...
    assert every >= 0.4
    assert every > _turns_next_to_the_best(table, space, {}, every=2)


def test_auto_s_forest_can_step_further_from_the_best_config(dedisp) -> None:  # type: ignore[no-untyped-def]
    # Half of the forest's local turns here find no unevaluated config one step from the best and
    # choose in the whole space; a radius of two, or a growing ring, keeps them next to the best.
    table, space = dedisp
    one = _turns_next_to_the_best(table, space, {}, within=2)
    assert _turns_next_to_the_best(table, space, {"local_radius": 2}, within=2) > one + 0.2
    assert _turns_next_to_the_best(table, space, {"local_grow": True}, within=2) > one + 0.2
    assert "1 or more, not 0" in str(sampler_options_problem("auto", {"local_radius": 0}))


def test_auto_s_forest_can_refine_next_to_every_config_near_the_best(dedisp) -> None:  # type: ignore[no-untyped-def]
    # With local_within, a local turn steps from any config measured within 5% of the best time,
    # not only from the best, and finds an unevaluated neighbour where the best alone has none left.
    table, space = dedisp
    near = _turns_next_to_the_best(table, space, {"local_within": 0.05}, centres=0.05)
    assert near > _turns_next_to_the_best(table, space, {}, centres=0.05) + 0.2
    assert sampler_options_problem("auto", {"local_within": 0}) is None
    assert "is a number, not True" in str(sampler_options_problem("auto", {"local_within": True}))
    assert "between 0 and 1, not 2.0" in str(sampler_options_problem("auto", {"local_within": 2.0}))


def test_auto_s_options_are_checked() -> None:
    assert sampler_options_problem("auto", {"local": False, "gp_local": True}) is None
    assert "is true or false, not 'no'" in str(sampler_options_problem("auto", {"local": "no"}))
    assert "is a whole number, not True" in str(sampler_options_problem("auto", {"local_every": True}))
    assert "1 or more, not 0" in str(sampler_options_problem("auto", {"local_every": 0}))
    assert "Unknown option(s) kappa" in str(sampler_options_problem("auto", {"kappa": 2}))
    assert "is true or false, not 1" in str(sampler_options_problem("auto", {"winner_stays": 1}))


def test_an_opening_proposes_the_first_trials_then_the_members_take_turns() -> None:
    opening, a, b = _Fixed(4), _Fixed(1), _Fixed(7)
    portfolio = PortfolioSampler([a, b], turns=(0, 1, 1), opening=opening, n_opening=2)
    study = optuna.create_study(sampler=portfolio)
    study.optimize(lambda t: t.suggest_int("x", 0, 9), n_trials=6)
    assert [t.params["x"] for t in study.trials] == [4, 4, 7, 1, 7, 7]
    portfolio.reseed_rng()
    assert opening.reseeded == 1
