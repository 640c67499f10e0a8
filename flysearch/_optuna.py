"""The one module that uses Optuna's private names and writes Optuna's tables.

flysearch leans on a few things Optuna does not publish: a study's storage and id, its cached
trials, a trial's storage id, the fast path of ``Study.tell``, the steps of the TPE and CMA-ES
samplers that flysearch's samplers override, and the table models of its RDB storage, which the
trial writer fills in one transaction (``Study.add_trial`` costs some 20 queries a trial). Each of
them is used here and nowhere else (``tests/test_architecture.py`` holds that), under a public
name, and ``tests/test_optuna_contract.py`` exercises each against the installed Optuna: the
names, their signatures, the rows the writer writes next to the rows Optuna writes, and the index
a half-made SQLite storage is mended with. ``pyproject.toml`` bounds Optuna to the versions that
test passed on; a new Optuna is admitted by running it and widening the bound.

Example:
    >>> import optuna
    >>> study = optuna.create_study()
    >>> study.optimize(lambda trial: trial.suggest_int("x", 0, 3), n_trials=2)
    >>> [trial_id(t) for t in cached_trials(study)] == [
    ...     study_storage(study).get_trial_id_from_study_id_trial_number(study_id(study), n) for n in (0, 1)]
    True
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import numpy as np
import optuna
from optuna.samplers import CmaEsSampler, TPESampler
from optuna.samplers._tpe.parzen_estimator import _ParzenEstimator
from optuna.trial import TrialState

if TYPE_CHECKING:
    import sqlite3

    import sqlalchemy as sa
    from optuna.distributions import BaseDistribution
    from optuna.trial import FrozenTrial

__all__ = [
    "STUDIES_TABLE",
    "STUDY_NAME_INDEX",
    "CmaEsHooks",
    "ParzenEstimator",
    "TPEHooks",
    "cached_trials",
    "count_trials",
    "finished_attr_rows",
    "insert_finished_trials",
    "mend_study_names",
    "rdb_storage",
    "repeated_study_names",
    "study_id",
    "study_storage",
    "tell",
    "trial_id",
    "trial_ids_from",
    "validate",
    "write_session",
]

ParzenEstimator = _ParzenEstimator
"""The estimator TPE builds of the good and of the bad trials (what :class:`TPEHooks` hands its
acquisition)."""


# -- a study and its trials --------------------------------------------------------------------


def study_storage(study: optuna.Study) -> optuna.storages.BaseStorage:
    """The storage *study* reads and writes (Optuna's cache around an RDB storage, if it has one)."""
    return study._storage


def study_id(study: optuna.Study) -> int:
    """*study*'s id in its storage."""
    return study._study_id


def trial_id(trial: FrozenTrial) -> int:
    """*trial*'s id in its storage."""
    return trial._trial_id


def cached_trials(study: optuna.Study) -> list[FrozenTrial]:
    """*study*'s trials, not copied, from the cache Optuna's samplers read (filled at the first
    call of a suggestion, so every trial a sampler reads within one suggestion agrees)."""
    return study._get_trials(deepcopy=False, use_cache=True)


def validate(trial: FrozenTrial) -> None:
    """Raise ``ValueError`` where *trial* is not one Optuna would store (``Study.add_trial``'s
    check)."""
    trial._validate()


def rdb_storage(study: optuna.Study) -> optuna.storages.RDBStorage | None:
    """The RDB storage behind *study* (``None`` for any other kind of storage)."""
    storage = study._storage
    backend = getattr(storage, "_backend", storage)  # _CachedStorage wraps the RDB storage
    return backend if isinstance(backend, optuna.storages.RDBStorage) else None


def _fast_tell() -> Callable[..., Any] | None:
    """What ``Study.tell`` calls, when Optuna still has it with the same leading parameters."""
    import inspect

    try:
        from optuna.study._tell import _tell_with_warning
    except ImportError:  # pragma: no cover - a later Optuna: Study.tell is used
        return None
    names = list(inspect.signature(_tell_with_warning).parameters)[:4]
    return _tell_with_warning if names == ["study", "trial", "value_or_values", "state"] else None


_TELL = _fast_tell()


def tell(study: optuna.Study, number: int, value: float | None, state: TrialState | None) -> None:
    """``study.tell(number, value, state=state)`` without the deep copy of the finished trial that
    ``Study.tell`` returns: a replayed study tells thousands of trials and reads none of them."""
    if _TELL is None:  # pragma: no cover
        study.tell(number, value, state=state)
    else:
        _TELL(study, number, value, state)


# -- the steps of Optuna's samplers that flysearch's samplers change ----------------------------


class TPEHooks(TPESampler):
    """Optuna's ``TPESampler``, unchanged, whose private steps a subclass changes under public names.

    Override :meth:`internal_repr` (the trials' parameters in TPE's internal representation) or
    :meth:`acquisition` (the value of each candidate) and call the base method for TPE's own; the
    estimator's candidates are drawn with :meth:`draw_candidates`. Takes ``TPESampler``'s arguments.
    """

    def _get_internal_repr(
        self, trials: list[FrozenTrial], search_space: dict[str, BaseDistribution], study: optuna.Study
    ) -> dict[str, np.ndarray]:
        return self.internal_repr(trials, search_space, study)

    def _compute_acquisition_func(
        self, samples: dict[str, np.ndarray], mpe_below: ParzenEstimator, mpe_above: ParzenEstimator
    ) -> np.ndarray:
        return self.acquisition(samples, mpe_below, mpe_above)

    def internal_repr(
        self, trials: list[FrozenTrial], search_space: dict[str, BaseDistribution], study: optuna.Study
    ) -> dict[str, np.ndarray]:
        """Each parameter of *search_space* of the *trials* that have them all, internally."""
        return super()._get_internal_repr(trials, search_space, study)

    def acquisition(
        self, samples: dict[str, np.ndarray], below: ParzenEstimator, above: ParzenEstimator
    ) -> np.ndarray:
        """The acquisition of each candidate in *samples*; TPE suggests the candidate of the largest."""
        return super()._compute_acquisition_func(samples, below, above)

    def trial_params(self, trial: FrozenTrial, study: optuna.Study) -> dict[str, Any]:
        """*trial*'s parameters as TPE reads them (with the relative ones of a running trial)."""
        return self._get_params(trial, study)

    def draw_candidates(self, estimator: ParzenEstimator) -> dict[str, np.ndarray]:
        """``n_ei_candidates`` candidates drawn from *estimator* with TPE's random stream."""
        return estimator.sample(self._rng.rng, self._n_ei_candidates)

    @property
    def n_ei_candidates(self) -> int:
        """The candidates TPE draws for one suggestion."""
        return self._n_ei_candidates


class CmaEsHooks(CmaEsSampler):
    """Optuna's ``CmaEsSampler``, unchanged, whose private steps a subclass changes under public names.

    Override :meth:`completed_trials` (the trials CMA-ES learns from) or :meth:`generation_trials`
    (those of one generation) and call the base method for Optuna's own. Takes ``CmaEsSampler``'s
    arguments.
    """

    def _get_trials(self, study: optuna.Study) -> list[FrozenTrial]:
        return self.completed_trials(study)

    def _get_solution_trials(self, trials: list[FrozenTrial], generation: int) -> list[FrozenTrial]:
        return self.generation_trials(trials, generation)

    def completed_trials(self, study: optuna.Study) -> list[FrozenTrial]:
        """The trials CMA-ES learns from: the complete ones (and pruned ones, if it considers them)."""
        return super()._get_trials(study)

    def generation_trials(self, trials: list[FrozenTrial], generation: int) -> list[FrozenTrial]:
        """Those of *trials* (what :meth:`completed_trials` returned) of generation *generation*."""
        return super()._get_solution_trials(trials, generation)

    @property
    def consider_pruned_trials(self) -> bool:
        """Whether pruned trials count as complete ones, with their last intermediate value."""
        return self._consider_pruned_trials

    @property
    def generation_attr(self) -> str:
        """The system attribute that holds a trial's generation."""
        return self._attr_key_generation

    @property
    def attr_prefix(self) -> str:
        """The prefix of the system attributes CMA-ES keeps its state under (its optimizer, and each
        trial's generation): a sampler with a prefix of its own starts afresh."""
        return self._attr_prefix

    @attr_prefix.setter
    def attr_prefix(self, prefix: str) -> None:
        self._attr_prefix = prefix


# -- Optuna's tables ----------------------------------------------------------------------------


@contextmanager
def write_session(storage: optuna.storages.RDBStorage) -> Iterator[Any]:
    """An ORM session on *storage*, committed when the block ends (rolled back if it raises)."""
    from optuna.storages._rdb.storage import _create_scoped_session

    with _create_scoped_session(storage.scoped_session) as session:
        yield session


def insert_finished_trials(session: Any, study: int, trials: Sequence[FrozenTrial]) -> list[int | None]:
    """Insert the finished single-objective *trials* into study *study* with one statement per table
    after their trial rows, numbering them the way Optuna does; return their ids (*session*: an ORM
    session or a Core connection, in a transaction; both execute Core statements)."""
    import sqlalchemy as sa
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
    first = count_trials(session, study)
    for i, trial in enumerate(trials):
        tid = session.execute(sa.insert(table).values(
            study_id=study, number=first + i, state=trial.state,
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


def count_trials(connection: Any, study: int) -> int:
    """How many trials study *study* holds (*connection*: a Core connection or an ORM session)."""
    import sqlalchemy as sa
    from optuna.storages._rdb import models

    table = models.TrialModel.__table__
    return connection.execute(sa.select(sa.func.count()).select_from(table)
                              .where(table.c.study_id == study)).scalar_one()


def trial_ids_from(connection: sa.Connection, study: int, number: int) -> list[int]:
    """The ids of study *study*'s trials numbered *number* and up, in trial order."""
    import sqlalchemy as sa
    from optuna.storages._rdb import models

    table = models.TrialModel.__table__
    return list(connection.execute(sa.select(table.c.trial_id).where(
        table.c.study_id == study, table.c.number >= number).order_by(table.c.number)).scalars())


def finished_attr_rows(connection: sa.Connection, study: int, key: str) -> list[tuple[int, Any]]:
    """``(trial number, value)`` of user attribute *key* of every finished (complete or failed)
    trial of study *study* that has it, in trial order."""
    import sqlalchemy as sa
    from optuna.storages._rdb import models

    trials, attrs = models.TrialModel.__table__, models.TrialUserAttributeModel.__table__
    query = (sa.select(trials.c.number, attrs.c.value_json)
             .join(attrs, attrs.c.trial_id == trials.c.trial_id)
             .where(trials.c.study_id == study, attrs.c.key == key,
                    trials.c.state.in_((TrialState.COMPLETE, TrialState.FAIL)))
             .order_by(trials.c.number))
    return [(int(number), json.loads(value)) for number, value in connection.execute(query).all()]


STUDIES_TABLE = "studies"
"""The table of a storage's studies: a SQLite file that holds it is an Optuna storage."""

STUDY_NAME_INDEX = "ix_studies_study_name"
"""Optuna's unique index on the study names, the last thing it creates of the studies table."""

_STUDY_ROWS = ("study_directions", STUDIES_TABLE)  # what an interrupted creation's empty study holds
_STUDY_CONTENT = ("trials", "study_user_attributes", "study_system_attributes")  # what a real one may


def mend_study_names(conn: sqlite3.Connection, tables: set[str]) -> None:
    """In SQLite storage *conn* (in a transaction), drop the study rows that repeat an earlier
    study's name and hold nothing, then add :data:`STUDY_NAME_INDEX`; *tables*: the tables the
    file has (an interrupted creation made some of them). Raises ``sqlite3.IntegrityError`` where
    two studies of one name remain (:func:`repeated_study_names` names them)."""
    holding = [t for t in _STUDY_CONTENT if t in tables]
    empty = [row[0] for row in conn.execute(
        f"SELECT s.study_id FROM {STUDIES_TABLE} s WHERE EXISTS (SELECT 1 FROM {STUDIES_TABLE} e WHERE "
        "e.study_name = s.study_name AND e.study_id < s.study_id)"
        + "".join(f" AND NOT EXISTS (SELECT 1 FROM {t} WHERE {t}.study_id = s.study_id)" for t in holding)
    )]
    for table in _STUDY_ROWS:
        if table in tables:
            conn.executemany(f"DELETE FROM {table} WHERE study_id = ?", [(i,) for i in empty])
    conn.execute(f"CREATE UNIQUE INDEX IF NOT EXISTS {STUDY_NAME_INDEX} ON {STUDIES_TABLE} (study_name)")


def repeated_study_names(conn: sqlite3.Connection) -> list[str]:
    """The names that more than one study of SQLite storage *conn* has, sorted."""
    return sorted(row[0] for row in conn.execute(
        f"SELECT study_name FROM {STUDIES_TABLE} GROUP BY study_name HAVING COUNT(*) > 1"))
