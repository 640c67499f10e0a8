"""What ``flysearch/_optuna.py`` takes of Optuna's private API, held to the installed Optuna.

Each private name the adapter uses is exercised here: it exists, has the parameters the adapter
passes, and does what the adapter counts on (the steps of TPE and CMA-ES it overrides are the ones
the samplers take; the rows the trial writer inserts are the rows Optuna's own ``add_trial``
writes, column by column, in a real SQLite storage). A new Optuna is admitted by passing this file
and widening the bound in ``pyproject.toml``, which the first test holds to the installed version.
"""

from __future__ import annotations

import inspect
import math
import sqlite3
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pytest
from optuna.distributions import CategoricalDistribution, IntDistribution
from optuna.storages._rdb import models
from optuna.trial import FrozenTrial, TrialState, create_trial
from packaging.requirements import Requirement

from flysearch import _optuna as adapter

ROOT = Path(__file__).resolve().parents[1]
DISTS = {"a": IntDistribution(0, 7), "b": CategoricalDistribution(["x", "y"])}


def _params(trial: optuna.Trial) -> float:
    a, b = trial.suggest_int("a", 0, 7), trial.suggest_categorical("b", ["x", "y"])
    return (a - 5) ** 2 + (b == "x")


def _trials() -> list[FrozenTrial]:
    """A complete trial with attributes of both kinds, a failed one, and one whose value (infinity)
    Optuna stores apart, with one parameter of two."""
    ok = create_trial(params={"a": 3, "b": "y"}, distributions=DISTS, value=1.25,
                      user_attrs={"flysearch": {"key": "a=3"}}, system_attrs={"constraints": [0.0]})
    failed = create_trial(params={"a": 5, "b": "x"}, distributions=DISTS, state=TrialState.FAIL,
                          user_attrs={"flysearch": {"key": "a=5"}, "worker": "w1"})
    return [ok, failed, create_trial(params={"a": 7}, distributions={"a": DISTS["a"]}, value=math.inf)]


def _parameters(function: Any) -> list[str]:
    return list(inspect.signature(function).parameters)


def test_the_installed_optuna_is_one_the_bound_admits() -> None:
    """``pyproject.toml`` names an upper bound, and the Optuna this file runs against is within it."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    (optuna_req,) = [Requirement(r) for r in project["dependencies"] if Requirement(r).name == "optuna"]
    assert any(spec.operator in ("<", "<=", "==", "~=") for spec in optuna_req.specifier)
    assert optuna_req.specifier.contains(optuna.__version__), (optuna_req, optuna.__version__)


def test_a_study_and_its_trials(tmp_path: Path) -> None:
    study = optuna.create_study(storage=f"sqlite:///{tmp_path}/s.db", study_name="s")
    study.optimize(_params, n_trials=3)
    storage = adapter.study_storage(study)
    assert isinstance(storage, optuna.storages.BaseStorage)
    assert adapter.study_id(study) == storage.get_study_id_from_name("s")
    cached = adapter.cached_trials(study)
    assert cached == study.get_trials(deepcopy=False)
    assert [adapter.trial_id(t) for t in cached] == [
        storage.get_trial_id_from_study_id_trial_number(adapter.study_id(study), n) for n in range(3)]
    # Optuna's cache wraps the RDB storage, which the writer reaches through it.
    rdb = adapter.rdb_storage(study)
    assert isinstance(rdb, optuna.storages.RDBStorage) and rdb is not storage
    assert adapter.rdb_storage(optuna.create_study()) is None

    adapter.validate(_trials()[0])
    broken = FrozenTrial(number=0, state=TrialState.COMPLETE, value=None, datetime_start=None,
                         datetime_complete=None, params={}, distributions={}, user_attrs={},
                         system_attrs={}, intermediate_values={}, trial_id=0)
    with pytest.raises(ValueError):
        adapter.validate(broken)


def test_tell_is_optunas_own_and_finishes_trials() -> None:
    from optuna.study._tell import _tell_with_warning

    assert _parameters(_tell_with_warning)[:4] == ["study", "trial", "value_or_values", "state"]
    assert adapter._TELL is _tell_with_warning  # the fast path, not the fallback
    study = optuna.create_study()
    first, second = study.ask(), study.ask()
    adapter.tell(study, first.number, 2.5, None)
    adapter.tell(study, second.number, None, TrialState.FAIL)
    assert [(t.state, t.value) for t in study.trials] == [(TrialState.COMPLETE, 2.5), (TrialState.FAIL, None)]


class _RecordingTPE(adapter.TPEHooks):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls: dict[str, int] = {"internal_repr": 0, "acquisition": 0}
        self.drawn: list[int] = []

    def internal_repr(self, trials: list[FrozenTrial], search_space: dict, study: optuna.Study
                      ) -> dict[str, np.ndarray]:
        self.calls["internal_repr"] += 1
        for t in trials:
            assert self.trial_params(t, study).keys() >= t.params.keys()
        return super().internal_repr(trials, search_space, study)

    def acquisition(self, samples: dict[str, np.ndarray], below: adapter.ParzenEstimator,
                    above: adapter.ParzenEstimator) -> np.ndarray:
        self.calls["acquisition"] += 1
        assert isinstance(below, adapter.ParzenEstimator) and isinstance(above, adapter.ParzenEstimator)
        assert {len(v) for v in samples.values()} == {self.n_ei_candidates}
        return super().acquisition(samples, below, above)


def test_the_tpe_hooks_are_the_steps_tpe_takes() -> None:
    from optuna.samplers import TPESampler

    assert _parameters(TPESampler._get_internal_repr) == ["self", "trials", "search_space", "study"]
    assert _parameters(TPESampler._compute_acquisition_func) == ["self", "samples", "mpe_below", "mpe_above"]
    assert _parameters(TPESampler._get_params) == ["self", "trial", "study"]
    recording = _RecordingTPE(seed=3, n_startup_trials=3, n_ei_candidates=7)
    plain = TPESampler(seed=3, n_startup_trials=3, n_ei_candidates=7)
    studies = [optuna.create_study(sampler=s) for s in (recording, plain)]
    for study in studies:
        study.optimize(_params, n_trials=8)
    assert recording.n_ei_candidates == 7
    # Called at every suggestion after the start-up (twice: for both estimators), changing nothing.
    assert recording.calls["acquisition"] >= 5
    assert recording.calls["internal_repr"] == 2 * recording.calls["acquisition"]
    assert [t.params for t in studies[0].trials] == [t.params for t in studies[1].trials]
    # The estimator's candidates come from TPE's random stream.
    below = recording._build_parzen_estimator(studies[0], DISTS, studies[0].trials, handle_below=True)
    drawn = recording.draw_candidates(below)
    assert set(drawn) == set(DISTS) and {len(v) for v in drawn.values()} == {7}


class _RecordingCmaEs(adapter.CmaEsHooks):
    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.calls = {"completed_trials": 0, "generation_trials": 0}

    def completed_trials(self, study: optuna.Study) -> list[FrozenTrial]:
        self.calls["completed_trials"] += 1
        return super().completed_trials(study)

    def generation_trials(self, trials: list[FrozenTrial], generation: int) -> list[FrozenTrial]:
        self.calls["generation_trials"] += 1
        return super().generation_trials(trials, generation)


def _ints(trial: optuna.Trial) -> float:
    return (trial.suggest_int("a", 0, 15) - 9) ** 2 + (trial.suggest_int("c", 0, 15) - 2) ** 2


@pytest.mark.filterwarnings("ignore::optuna.exceptions.ExperimentalWarning")
def test_the_cmaes_hooks_are_the_steps_cmaes_takes() -> None:
    from optuna.samplers import CmaEsSampler

    assert _parameters(CmaEsSampler._get_trials) == ["self", "study"]
    assert _parameters(CmaEsSampler._get_solution_trials) == ["self", "trials", "generation"]
    recording = _RecordingCmaEs(seed=1, with_margin=True, consider_pruned_trials=True)
    assert recording.consider_pruned_trials and not _RecordingCmaEs(seed=1).consider_pruned_trials
    recording.attr_prefix = "mine:"
    assert (recording.attr_prefix, recording.generation_attr) == ("mine:", "mine:generation")
    plain = CmaEsSampler(seed=1, with_margin=True, consider_pruned_trials=True)
    studies = [optuna.create_study(sampler=s) for s in (recording, plain)]
    for study in studies:
        study.optimize(_ints, n_trials=16)  # the default population of two dimensions is 6
    assert recording.calls["completed_trials"] >= 15 and recording.calls["generation_trials"] >= 2
    assert [t.params for t in studies[0].trials] == [t.params for t in studies[1].trials]
    # The prefix is where CMA-ES keeps its state: each trial's generation, the optimizer.
    generations = [t.system_attrs.get("mine:generation") for t in studies[0].trials[1:]]
    assert generations == [0] * 6 + [1] * 6 + [2] * 3
    stored = [t.number for t in studies[0].trials
              if any(k.startswith("mine:optimizer") for k in t.system_attrs)]
    assert stored == [7, 13]  # by the first trial of each later generation


def _rows(path: Path) -> dict[str, list[tuple]]:
    """Every row of every table of Optuna's in the SQLite file *path*, in order."""
    with sqlite3.connect(path) as conn:
        return {table: conn.execute(f"SELECT * FROM {table} ORDER BY 1").fetchall()
                for table in sorted(models.BaseModel.metadata.tables)}


def test_the_writer_writes_the_rows_optuna_writes(tmp_path: Path) -> None:
    """The trial writer's statements fill every column of Optuna's tables as ``add_trial`` does;
    the readers select what Optuna reads."""
    trials = _trials()
    fast = optuna.create_study(storage=f"sqlite:///{tmp_path}/fast.db", study_name="s")
    slow = optuna.create_study(storage=f"sqlite:///{tmp_path}/slow.db", study_name="s")
    rdb = adapter.rdb_storage(fast)
    assert rdb is not None
    with adapter.write_session(rdb) as session:
        ids = adapter.insert_finished_trials(session, adapter.study_id(fast), trials[:2])
    with rdb.engine.begin() as connection:
        ids += adapter.insert_finished_trials(connection, adapter.study_id(fast), trials[2:])
    for t in trials:
        slow.add_trial(t)
    assert _rows(tmp_path / "fast.db") == _rows(tmp_path / "slow.db")
    assert ids == [t._trial_id for t in optuna.load_study(study_name="s", storage=rdb).trials]

    with rdb.engine.connect() as connection:
        assert adapter.count_trials(connection, adapter.study_id(fast)) == 3
        assert adapter.trial_ids_from(connection, adapter.study_id(fast), 1) == ids[1:]
        assert adapter.finished_attr_rows(connection, adapter.study_id(fast), "flysearch") == [
            (0, {"key": "a=3"}), (1, {"key": "a=5"})]


def test_a_half_made_storage_is_mended_with_optunas_own_index(tmp_path: Path) -> None:
    """The index the mend adds is the one Optuna makes, and the tables it looks at are every table
    that refers to a study."""
    path = tmp_path / "s.db"
    optuna.create_study(storage=f"sqlite:///{path}", study_name="s").add_trial(_trials()[0])
    with sqlite3.connect(path) as conn:
        found = {name: sql for name, sql in conn.execute("SELECT name, sql FROM sqlite_master")}
        assert adapter.STUDIES_TABLE in found
        assert found[adapter.STUDY_NAME_INDEX].startswith(
            f"CREATE UNIQUE INDEX {adapter.STUDY_NAME_INDEX} ON {adapter.STUDIES_TABLE} (study_name)")
        tables = {name for name, kind in conn.execute("SELECT name, type FROM sqlite_master")
                  if kind == "table"}
        referring = {t for t in tables if any(ref[2] == adapter.STUDIES_TABLE
                                              for ref in conn.execute(f"PRAGMA foreign_key_list({t})"))}
        assert referring == {*adapter._STUDY_ROWS, *adapter._STUDY_CONTENT} - {adapter.STUDIES_TABLE}
    # An interrupted creation: no index, and a second, empty row of the study's name.
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(f"DROP INDEX {adapter.STUDY_NAME_INDEX}")
        conn.execute("INSERT INTO studies (study_name) VALUES ('s')")
        assert adapter.repeated_study_names(conn) == ["s"]
        conn.execute("BEGIN IMMEDIATE")
        adapter.mend_study_names(conn, tables)
        conn.execute("COMMIT")
        assert adapter.repeated_study_names(conn) == []
    finally:
        conn.close()
    assert [t.params for t in optuna.load_study(study_name="s", storage=f"sqlite:///{path}").trials] == [
        {"a": 3, "b": "y"}]
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT 1 FROM sqlite_master WHERE name = ?",
                            [adapter.STUDY_NAME_INDEX]).fetchall() == [(1,)]
