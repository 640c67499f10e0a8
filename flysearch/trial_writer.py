"""Write a finished trial into an Optuna RDB study in one short transaction.

``Study.add_trial`` on Optuna's RDB storage is correct but chatty: for every parameter it looks up
an earlier trial's parameter of the same name (to check the distributions agree) and reloads the
trial, so a 7-parameter trial with a few attributes costs some 20 queries (about 80 ms on SQLite on
a busy machine, measured in a live study). A live study writes every trial, and knows that all of
them come from one set of distributions, so :func:`add_finished_trial` inserts the trial row, its
parameters, value and attributes with Optuna's own table models in one transaction, numbering the
trial the way Optuna does (the count of the study's trials with a smaller id). Other storages go
through ``Study.add_trial``.

The result is read back by Optuna like any trial (``tests/test_trial_writer.py`` compares both
paths field by field).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import optuna
import sqlalchemy as sa

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial

__all__ = ["add_finished_trial"]


def _rdb(study: optuna.Study) -> optuna.storages.RDBStorage | None:
    storage = study._storage
    backend = getattr(storage, "_backend", storage)  # _CachedStorage wraps the RDB storage
    return backend if isinstance(backend, optuna.storages.RDBStorage) else None


def add_finished_trial(study: optuna.Study, trial: FrozenTrial) -> None:
    """Add the finished *trial* (params, value, user and system attributes) to *study*."""
    rdb = _rdb(study)
    if rdb is None or not trial.state.is_finished() or (trial.values is not None and len(trial.values) > 1):
        study.add_trial(trial)
        return
    trial._validate()
    from optuna.distributions import distribution_to_json
    from optuna.storages._rdb import models
    from optuna.storages._rdb.storage import _create_scoped_session

    with _create_scoped_session(rdb.scoped_session) as session:
        row = models.TrialModel(
            study_id=study._study_id, number=None, state=trial.state,
            datetime_start=trial.datetime_start, datetime_complete=trial.datetime_complete,
        )
        session.add(row)
        session.flush()
        tid = row.trial_id
        dists = trial.distributions
        params = [{"trial_id": tid, "param_name": name, "param_value": dists[name].to_internal_repr(v),
                   "distribution_json": distribution_to_json(dists[name])}
                  for name, v in trial.params.items()]
        user = [{"trial_id": tid, "key": k, "value_json": json.dumps(v)} for k, v in trial.user_attrs.items()]
        system = [{"trial_id": tid, "key": k, "value_json": json.dumps(v)}
                  for k, v in trial.system_attrs.items()]
        for model, rows in ((models.TrialParamModel, params), (models.TrialUserAttributeModel, user),
                            (models.TrialSystemAttributeModel, system)):
            if rows:
                session.execute(sa.insert(model.__table__), rows)
        if trial.value is not None:
            stored, kind = models.TrialValueModel.value_to_stored_repr(trial.value)
            session.execute(sa.insert(models.TrialValueModel.__table__),
                            [{"trial_id": tid, "objective": 0, "value": stored, "value_type": kind}])
        trials = models.TrialModel.__table__
        row.number = session.execute(sa.select(sa.func.count()).select_from(trials).where(
            trials.c.study_id == study._study_id, trials.c.trial_id < tid)).scalar_one()
