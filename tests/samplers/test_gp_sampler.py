"""flysearch's fast GP sampler: its math, and that it proposes only unevaluated feasible configs."""

from __future__ import annotations

import numpy as np
import optuna
import pytest
from scipy.optimize import approx_fprime

from flysearch.compare._experiment import TableSpec
from flysearch.compare._run import load_table
from flysearch.evaluators import ReplayEvaluator
from flysearch.samplers import SearchContext, make_sampler
from flysearch.samplers._gp import FeasibleGPSampler, _neg_lml, matern52
from flysearch.study import StudySpec, run_study, trial_records
from flysearch.tables import space_for_table
from tests.conftest import hub_file


def test_matern52_hand_values() -> None:
    ls = np.array([1.0, 2.0])
    k = matern52(np.array([[0.0, 0.0]]), np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]]), ls, signal=2.0)
    r = 1.0
    expected = 2.0 * (1 + np.sqrt(5) * r + 5 / 3 * r * r) * np.exp(-np.sqrt(5) * r)
    assert k[0, 0] == pytest.approx(2.0) and k[0, 1] == pytest.approx(expected) == k[0, 2]


def test_marginal_likelihood_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(0)
    X, y = rng.random((25, 3)), rng.standard_normal(25)
    theta = np.log(np.array([0.4, 0.7, 1.3, 1.5, 0.05]))
    _f, grad = _neg_lml(theta, X, y)
    numeric = approx_fprime(theta, lambda t: _neg_lml(t, X, y)[0], 1e-6)
    assert grad == pytest.approx(numeric, rel=1e-3, abs=1e-3)


# Under pytest-xdist one worker runs this module, so that its module fixture is set up once.
pytestmark = pytest.mark.xdist_group("samplers/test_gp_sampler")


@pytest.fixture(scope="module")
def dedisp() -> tuple:  # type: ignore[type-arg]
    table = load_table(TableSpec(str(hub_file("dedispersion_milo", "MI250X"))), "")
    return table, space_for_table(table)


def test_only_unevaluated_feasible_configs(dedisp) -> None:  # type: ignore[no-untyped-def]
    table, space = dedisp
    settings = StudySpec(sampler="fastgp", budget=40, seed=3, space=space.name, table=table.name)
    storage = optuna.storages.InMemoryStorage()
    summary = run_study("g", space, ReplayEvaluator(table), settings, storage=storage)
    assert summary.compiles == summary.trials == 40  # no duplicate, no rejected suggestion
    assert summary.duplicates == summary.rejected == 0
    records = trial_records(optuna.load_study(study_name="g", storage=storage))
    assert len({r.key for _t, r in records}) == 40


def test_running_trials_are_not_proposed_twice(dedisp) -> None:  # type: ignore[no-untyped-def]
    table, space = dedisp
    context = SearchContext(space, "ordinal", space.enumerate().shuffled(0))
    sampler = make_sampler("fastgp", seed=0, context=context)
    assert isinstance(sampler, FeasibleGPSampler)
    study = optuna.create_study(sampler=sampler)
    evaluator = ReplayEvaluator(table)
    for _ in range(12):  # past the random start, so the GP picks the batch below
        trial = study.ask(context.distributions)
        config = space.decode(trial.params)
        measured = evaluator.time(evaluator.compile(config, None))
        trial.set_user_attr("flysearch", {"key": config.key, "outcome": measured.outcome.value,
                                          "time_ms": measured.time_ms})
        study.tell(trial, measured.time_ms or 1e9)
    batch = [study.ask(context.distributions) for _ in range(4)]
    keys = {space.decode(t.params).key for t in batch}
    assert len(keys) == 4


def test_optunas_gp_without_torch_is_one_sentence_naming_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch is no dependency (only the ``gp`` extra's): the gp sampler names it when it is missing,
    before a study is stored, instead of Optuna failing at its first suggestion."""
    import sys

    from flysearch.errors import FlysearchError

    assert type(make_sampler("gp", seed=0)).__name__ == "GPSampler"  # torch is installed here
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now fails, as on a machine without it
    with pytest.raises(FlysearchError, match=r"^The gp sampler needs torch, .*'flysearch\[gp\]'"):
        make_sampler("gp", seed=0)
