"""``cmaes`` spends its budget of compiles instead of stalling.

Plain CMA-ES on ordinal (integer) parameters shrinks its step size until every sample rounds to a
config the study already compiled; the study then stops after ``max_idle`` suggestions in a row
without a new compile, far short of its budget (68 of 80 committed ``cmaes`` runs did, at about 76
compiles). These studies must stop because the budget is spent.
"""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from flysearch.evaluators import ReplayEvaluator
from flysearch.space import table_profile
from flysearch.study import StudySpec, StudySummary, run_study, trial_records
from flysearch.tables import GroundTruth, read_any_table, space_for_table

H200_DECODE = (
    Path(__file__).resolve().parents[2]
    / "lab/benchmarks/data/h200/triton_gemm__H200__1x6144x4096.table.json.gz"
)


def run_cmaes(table: GroundTruth, budget: int, seed: int) -> tuple[StudySummary, list[str], optuna.Study]:
    """Replay a ``cmaes`` study of *budget* compiles on *table*: its summary, compiled keys, study."""
    space = space_for_table(table)
    storage = optuna.storages.InMemoryStorage()
    settings = StudySpec(sampler="cmaes", budget=budget, seed=seed, space=space.name, table=table.name)
    summary = run_study("cma", space, ReplayEvaluator(table), settings, storage=storage,
                        shape=table.meta.shape(), arch=table_profile(table.meta.arch, table.meta.device))
    study = optuna.load_study(study_name="cma", storage=storage)
    return summary, [r.key for _, r in trial_records(study) if r.compile_index is not None], study


def h200_decode() -> GroundTruth:
    meta, rows = read_any_table(H200_DECODE)
    return GroundTruth(meta, {r.key: r for r in rows})


@pytest.mark.parametrize("seed", [0, 1])
def test_cmaes_spends_its_budget_on_a_kernel_tuner_table(conv_mi250x: GroundTruth, seed: int) -> None:
    summary, keys, _study = run_cmaes(conv_mi250x, 150, seed)
    assert summary.stopped == "budget spent"
    assert summary.compiles == len(set(keys)) == 150


def test_cmaes_spends_its_budget_on_a_constrained_gemm_table() -> None:
    """A Triton GEMM table (constraints reject part of the cartesian product): CMA-ES with margin
    alone still converged here after about 70 compiles; restarts carry it to the budget."""
    summary, keys, study = run_cmaes(h200_decode(), 100, 0)
    assert summary.stopped == "budget spent"
    assert summary.compiles == len(set(keys)) == 100
    restarted = {k.split(":")[1] for t in study.trials for k in t.system_attrs if k.startswith("cmawm:r")}
    assert {"r0", "r1"} <= restarted


def test_cmaes_is_seeded_across_restarts() -> None:
    """Two runs of one seed compile the same configs in the same order, restarts included."""
    first = run_cmaes(h200_decode(), 100, 1)[1]
    assert run_cmaes(h200_decode(), 100, 1)[1] == first


def test_cmaes_margin_turns_random_when_its_search_diverges(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cmaes library refuses a diverged mean with an AssertionError; ``cmaes-margin`` then goes on
    with Optuna's independent (random) sampling instead of ending the study with a traceback."""
    table = h200_decode()
    calls = {"n": 0}
    original = optuna.samplers.CmaEsSampler.sample_relative

    def diverging(self: optuna.samplers.CmaEsSampler, study: optuna.Study, trial: object,
                  space: dict) -> dict:
        calls["n"] += 1
        if calls["n"] > 12:
            raise AssertionError("Abs of all param values must be less than 1e+32 to avoid overflow errors")
        return original(self, study, trial, space)

    monkeypatch.setattr(optuna.samplers.CmaEsSampler, "sample_relative", diverging)
    space = space_for_table(table)
    storage = optuna.storages.InMemoryStorage()
    settings = StudySpec(sampler="cmaes-margin", budget=40, seed=0, space=space.name, table=table.name)
    summary = run_study("m", space, ReplayEvaluator(table), settings, storage=storage)
    assert summary.compiles == 40 and calls["n"] == 13  # asked once after diverging, never again


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")  # with_margin
def test_filing_finished_trials_once_changes_no_suggestion() -> None:
    """FinishedOnceCmaEsSampler proposes exactly what Optuna's CmaEsSampler does, duplicates and
    generations included, while reading each finished trial once (a converged search on a small
    integer space repeats configs, which is where the two differ in cost)."""
    from flysearch.samplers._cmaes import FinishedOnceCmaEsSampler

    def suggestions(sampler: optuna.samplers.BaseSampler) -> list[tuple[int, int, int]]:
        study = optuna.create_study(sampler=sampler)

        def objective(trial: optuna.Trial) -> float:
            x, y, z = (trial.suggest_int(n, 0, 6) for n in "xyz")
            return (x - 2) ** 2 + abs(y - 5) + 0.5 * (z - 1) ** 2

        study.optimize(objective, n_trials=300)
        return [(t.params["x"], t.params["y"], t.params["z"]) for t in study.trials]

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    plain = suggestions(optuna.samplers.CmaEsSampler(seed=3, with_margin=True))
    filed = suggestions(FinishedOnceCmaEsSampler(seed=3, with_margin=True))
    assert filed == plain
    assert len(set(plain)) < len(plain) / 2  # it converged: most suggestions were repeats
