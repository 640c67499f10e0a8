"""Write finished trials into an Optuna RDB study in one short transaction, and read one user
attribute of all its finished trials in one query.

``Study.add_trial`` on Optuna's RDB storage is correct but chatty: for every parameter it looks up
an earlier trial's parameter of the same name (to check the distributions agree) and reloads the
trial, so a 7-parameter trial with a few attributes costs some 20 queries (about 80 ms on SQLite on
a busy machine, measured in a live study). A live study writes every trial, and knows that all of
them come from one set of distributions, so :func:`add_finished_trial` inserts the trial row, its
parameters, value and attributes with Optuna's own table models in one transaction, numbering the
trial the way Optuna does (the count of the study's trials with a smaller id; the statements are
:func:`flysearch._optuna.insert_finished_trials`, the one place that writes Optuna's tables);
:func:`add_finished_trials` writes several trials in one transaction. Other storages go through
``Study.add_trial``.

The result is read back by Optuna like any trial (``tests/study/test_trial_writer.py`` compares both
paths field by field).

Reading is the mirror case: ``Study.get_trials`` builds every trial with its parameters and
attributes (about half a millisecond a trial), while a study's summary needs one attribute;
:func:`finished_attr` selects it for all finished trials at once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from flysearch._optuna import (
    finished_attr_rows,
    insert_finished_trials,
    rdb_storage,
    study_id,
    validate,
    write_session,
)

if TYPE_CHECKING:
    import optuna
    import sqlalchemy as sa
    from optuna.trial import FrozenTrial

__all__ = ["add_finished_trial", "add_finished_trials", "finished_attr"]


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
        validate(t)
    if connection is not None:
        return insert_finished_trials(connection, study_id(study), trials)
    with write_session(rdb) as session:
        return insert_finished_trials(session, study_id(study), trials)


def finished_attr(study: optuna.Study, key: str) -> list[tuple[int, Any]] | None:
    """``(trial number, value)`` of user attribute *key* of every finished (complete or failed)
    trial of *study* that has it, in trial order; ``None`` where the storage is not an RDB one."""
    rdb = rdb_storage(study)
    if rdb is None:
        return None
    with rdb.engine.connect() as c:
        return finished_attr_rows(c, study_id(study), key)
