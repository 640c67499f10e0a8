"""The one-transaction trial writer against Optuna's own add_trial, on SQLite and PostgreSQL."""

from __future__ import annotations

import optuna
import pytest
from optuna.distributions import CategoricalDistribution, IntDistribution
from optuna.trial import TrialState, create_trial

from flysearch.study._trial_writer import add_finished_trial, add_finished_trials

DISTS = {"a": IntDistribution(0, 7), "b": CategoricalDistribution(["x", "y"])}


def _trials() -> list:
    return [
        create_trial(params={"a": 3, "b": "y"}, distributions=DISTS, value=1.25,
                     user_attrs={"flysearch": {"key": "a=3", "time_ms": 1.25}, "worker": "w1"},
                     system_attrs={"constraints": [0.0]}),
        create_trial(params={"a": 5, "b": "x"}, distributions=DISTS, state=TrialState.FAIL,
                     user_attrs={"flysearch": {"key": "a=5", "outcome": "compile_failed"}}),
    ]


def _fields(t) -> tuple:
    return (t.number, t.state, t.value, t.params, t.distributions, t.user_attrs, t.system_attrs)


@pytest.fixture(params=["sqlite", "postgresql"])
def urls(request, tmp_path) -> tuple[str, str]:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/fast.db", f"sqlite:///{tmp_path}/slow.db"
    server = request.getfixturevalue("postgres_server")
    name = request.node.name.replace("[", "_").replace("]", "").lower()
    return server.create_database(f"{name}_fast"), server.create_database(f"{name}_slow")


def test_fast_writer_reads_back_like_add_trial(urls):
    fast_url, slow_url = urls
    fast = optuna.create_study(storage=fast_url, study_name="s")
    slow = optuna.create_study(storage=slow_url, study_name="s")
    for t in _trials():
        add_finished_trial(fast, t)
        slow.add_trial(t)
    fast.add_trial(_trials()[0])  # Optuna's own writes number after ours
    slow.add_trial(_trials()[0])
    read_fast = optuna.load_study(study_name="s", storage=fast_url).trials
    read_slow = optuna.load_study(study_name="s", storage=slow_url).trials
    assert [_fields(t) for t in read_fast] == [_fields(t) for t in read_slow]
    assert [t.number for t in read_fast] == [0, 1, 2]
    # The writing study's cache sees them too.
    assert [t.number for t in fast.get_trials()] == [0, 1, 2]


def test_batches_in_order_numbered_per_study(urls):
    fast_url, slow_url = urls
    other = optuna.create_study(storage=fast_url, study_name="other")
    fast = optuna.create_study(storage=fast_url, study_name="s")
    slow = optuna.create_study(storage=slow_url, study_name="s")
    add_finished_trial(other, _trials()[0])  # another study's trial ids sit before and between
    add_finished_trials(fast, _trials())
    add_finished_trial(other, _trials()[1])
    add_finished_trials(fast, _trials()[::-1])
    add_finished_trials(fast, [])
    for t in _trials() + _trials()[::-1]:
        slow.add_trial(t)
    read_fast = optuna.load_study(study_name="s", storage=fast_url).trials
    read_slow = optuna.load_study(study_name="s", storage=slow_url).trials
    assert [_fields(t) for t in read_fast] == [_fields(t) for t in read_slow]
    assert [t.number for t in optuna.load_study(study_name="other", storage=fast_url).trials] == [0, 1]


def test_other_storages_go_through_add_trial():
    study = optuna.create_study()
    add_finished_trial(study, _trials()[0])
    assert study.trials[0].params == {"a": 3, "b": "y"}
