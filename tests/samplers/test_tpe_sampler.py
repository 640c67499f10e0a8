from __future__ import annotations

import optuna
from optuna.distributions import CategoricalDistribution, IntDistribution

from flysearch.samplers import make_sampler
from flysearch.samplers._tpe import CachedTPESampler, UnseenTPESampler

optuna.logging.set_verbosity(optuna.logging.WARNING)

SPACE = {"a": IntDistribution(0, 4), "b": IntDistribution(0, 4),
         "c": CategoricalDistribution(["x", "y", "z"])}


def _objective(params: dict) -> float:
    return (params["a"] - 3) ** 2 + abs(params["b"] - 1) + {"x": 0.5, "y": 0.0, "z": 2.0}[params["c"]]


def _configs(sampler: optuna.samplers.BaseSampler, n: int) -> list[tuple]:
    study = optuna.create_study(sampler=sampler)
    out = []
    for _ in range(n):
        trial = study.ask(SPACE)
        out.append(tuple(trial.params[k] for k in sorted(SPACE)))
        study.tell(trial, _objective(trial.params))
    return out


def test_make_sampler_builds_it_with_the_constant_liar_for_batches():
    assert isinstance(make_sampler("tpe-unseen", seed=0), UnseenTPESampler)
    assert make_sampler("tpe-unseen", seed=0, batch=True)._constant_liar
    assert not make_sampler("tpe-unseen", seed=0)._constant_liar


def test_it_proposes_far_fewer_configs_already_tried_than_tpe():
    plain = _configs(optuna.samplers.TPESampler(seed=3), 60)
    unseen = _configs(UnseenTPESampler(seed=3), 60)
    assert plain[:10] == unseen[:10]  # the same random start-up trials: the same random stream
    repeats_plain = len(plain) - len(set(plain))
    repeats_unseen = len(unseen) - len(set(unseen))
    assert repeats_plain >= 15  # TPE's estimator peaks on configs it has (the test needs that)
    assert repeats_unseen <= repeats_plain // 3
    # It still converges: the optimum (a=3, b=1, c=y) is among its configs.
    assert (3, 1, "y") in unseen


def test_it_skips_configs_in_flight_too():
    study = optuna.create_study(sampler=UnseenTPESampler(seed=0, constant_liar=True))
    for _ in range(12):
        trial = study.ask(SPACE)
        study.tell(trial, _objective(trial.params))
    batch = [study.ask(SPACE) for _ in range(6)]  # asked before any is told: a live pipeline
    keys = [tuple(t.params[k] for k in sorted(SPACE)) for t in batch]
    assert len(set(keys)) == len(keys)
    told = {tuple(t.params[k] for k in sorted(SPACE)) for t in study.trials if t.state.is_finished()}
    assert not told & set(keys)


def test_given_the_feasible_configs_it_proposes_only_those_while_it_can():
    # Feasible: a + b <= 4 (15 of 25 pairs, 45 of 75 configs).
    feasible = [{"a": a, "b": b, "c": c} for a in range(5) for b in range(5) for c in "xyz" if a + b <= 4]
    study = optuna.create_study(sampler=UnseenTPESampler(seed=3, feasible=feasible))
    plain = optuna.create_study(sampler=optuna.samplers.TPESampler(seed=3))
    for s in (study, plain):
        for _ in range(40):
            trial = s.ask(SPACE)
            infeasible = trial.params["a"] + trial.params["b"] > 4
            s.tell(trial, 100.0 if infeasible else _objective(trial.params))

    def rejected(s: optuna.Study) -> int:
        return sum(t.params["a"] + t.params["b"] > 4 for t in s.trials[10:])  # after the random start-up
    assert rejected(study) <= 2 and rejected(plain) >= 8


def test_cached_tpe_proposes_exactly_what_optunas_tpe_does():
    def run(sampler: optuna.samplers.BaseSampler, liar: int) -> list[dict]:
        study = optuna.create_study(sampler=sampler)
        asked = []
        for i in range(70):
            trial = study.ask(SPACE)
            asked.append(trial.params)
            if liar and i % liar == 0:  # leave some running: the constant liar reads them
                continue
            infeasible = trial.params["a"] + trial.params["b"] > 6
            trial.set_constraint("flysearch", 1.0 if infeasible else 0.0)  # what a rejection sets
            study.tell(trial, _objective(trial.params))
        return asked

    for seed, liar in ((0, 0), (5, 4)):
        plain = run(optuna.samplers.TPESampler(seed=seed, constant_liar=bool(liar)), liar)
        cached = run(CachedTPESampler(seed=seed, constant_liar=bool(liar)), liar)
        assert plain == cached
