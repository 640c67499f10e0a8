"""Write finished trials into an Optuna RDB study in one short transaction, and read one user
attribute of all its finished trials in one query.

``Study.add_trial`` on Optuna's RDB storage is correct but chatty: for every parameter it looks up
an earlier trial's parameter of the same name (to check the distributions agree) and reloads the
trial, so a 7-parameter trial with a few attributes costs some 20 queries (about 80 ms on SQLite on
a busy machine, measured in a live study). A live study writes every trial, and knows that all of
them come from one set of distributions, so :func:`add_finished_trial` inserts the trial row, its
parameters, value and attributes with Optuna's own table models in one transaction, numbering the
trial the way Optuna does (the count of the study's trials with a smaller id);
:func:`add_finished_trials` writes several trials in one transaction. Other storages go through
``Study.add_trial``.

The result is read back by Optuna like any trial (``tests/test_trial_writer.py`` compares both
paths field by field).

Reading is the mirror case: ``Study.get_trials`` builds every trial with its parameters and
attributes (about half a millisecond a trial), while a study's summary needs one attribute;
:func:`finished_attr` selects it for all finished trials at once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import optuna
import sqlalchemy as sa

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial

__all__ = ["add_finished_trial", "add_finished_trials", "finished_attr", "rdb_storage"]


def rdb_storage(study: optuna.Study) -> optuna.storages.RDBStorage | None:
    """The RDB storage behind *study* (``None`` for any other kind of storage)."""
    storage = study._storage
    backend = getattr(storage, "_backend", storage)  # _CachedStorage wraps the RDB storage
    return backend if isinstance(backend, optuna.storages.RDBStorage) else None


def add_finished_trial(study: optuna.Study, trial: FrozenTrial) -> int | None:
    """Add the finished *trial* (params, value, user and system attributes) to *study*; return
    its storage id (``None`` where the storage is not an RDB storage)."""
    return add_finished_trials(study, [trial])[0]


def add_finished_trials(study: optuna.Study, trials: Sequence[FrozenTrial], *,
                        connection: sa.Connection | None = None) -> list[int | None]:
    """Add finished *trials* to *study*, in order, in one transaction (on an RDB storage); return
    their storage ids.

    With *connection* (open on the study's database, in a transaction), the trials are written in
    that transaction, which the caller commits.
    """
    rdb = rdb_storage(study)
    if rdb is None or any(not t.state.is_finished() or (t.values is not None and len(t.values) > 1)
                          for t in trials):
        for t in trials:
            study.add_trial(t)
        return [None] * len(trials)
    if not trials:
        return []
    for t in trials:
        t._validate()
    if connection is not None:
        return _insert(connection, study._study_id, trials)
    from optuna.storages._rdb.storage import _create_scoped_session

    with _create_scoped_session(rdb.scoped_session) as session:
        return _insert(session, study._study_id, trials)


def _insert(session: Any, study_id: int, trials: Sequence[FrozenTrial]) -> list[int | None]:
    """Insert *trials* with one statement per table after their trial rows (*session*: an ORM
    session or a Core connection; both execute Core statements)."""
    from optuna.distributions import distribution_to_json
    from optuna.storages._rdb import models

    table = models.TrialModel.__table__
    params: list[dict[str, Any]] = []
    user: list[dict[str, Any]] = []
    system: list[dict[str, Any]] = []
    values: list[dict[str, Any]] = []
    ids: list[int | None] = []
    # Optuna numbers a trial by the count of the study's trials with a smaller id; a new id
    # is larger than every id there is, so the count of the study's trials before it will do.
    first = session.execute(sa.select(sa.func.count()).select_from(table).where(
        table.c.study_id == study_id)).scalar_one()
    for i, trial in enumerate(trials):
        tid = session.execute(sa.insert(table).values(
            study_id=study_id, number=first + i, state=trial.state,
            datetime_start=trial.datetime_start, datetime_complete=trial.datetime_complete,
        )).inserted_primary_key[0]
        ids.append(tid)
        dists = trial.distributions
        params += [{"trial_id": tid, "param_name": name, "param_value": dists[name].to_internal_repr(v),
                    "distribution_json": distribution_to_json(dists[name])}
                   for name, v in trial.params.items()]
        user += [{"trial_id": tid, "key": k, "value_json": json.dumps(v)}
                 for k, v in trial.user_attrs.items()]
        system += [{"trial_id": tid, "key": k, "value_json": json.dumps(v)}
                   for k, v in trial.system_attrs.items()]
        if trial.value is not None:
            stored, kind = models.TrialValueModel.value_to_stored_repr(trial.value)
            values.append({"trial_id": tid, "objective": 0, "value": stored, "value_type": kind})
    for model, rows in ((models.TrialParamModel, params), (models.TrialUserAttributeModel, user),
                        (models.TrialSystemAttributeModel, system), (models.TrialValueModel, values)):
        if rows:
            session.execute(sa.insert(model.__table__), rows)
    return ids



def finished_attr(study: optuna.Study, key: str) -> list[tuple[int, Any]] | None:
    """``(trial number, value)`` of user attribute *key* of every finished (complete or failed)
    trial of *study* that has it, in trial order; ``None`` where the storage is not an RDB one."""
    rdb = rdb_storage(study)
    if rdb is None:
        return None
    from optuna.storages._rdb import models
    from optuna.trial import TrialState

    trials, attrs = models.TrialModel.__table__, models.TrialUserAttributeModel.__table__
    query = (sa.select(trials.c.number, attrs.c.value_json)
             .join(attrs, attrs.c.trial_id == trials.c.trial_id)
             .where(trials.c.study_id == study._study_id, attrs.c.key == key,
                    trials.c.state.in_((TrialState.COMPLETE, TrialState.FAIL)))
             .order_by(trials.c.number))
    with rdb.engine.connect() as c:
        return [(int(number), json.loads(value)) for number, value in c.execute(query).all()]
