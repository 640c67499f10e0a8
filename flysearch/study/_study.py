"""Optuna studies that count compiles: open, run and summarize one.

Each trial's config is answered in one of three ways (by the one study loop,
:mod:`flysearch.study._loop`):

* **rejected**: an analytic constraint rejects it; nothing is compiled. The trial is recorded as
  infeasible (``trial.set_constraint``, violation 1, which TPE and GP learn from) and counted apart.
* **duplicate**: the study already evaluated this config; the answer is copied from history and
  nothing is compiled again.
* **compiled**: the evaluator compiles and times it; this is the only case a strategy is charged for.

Each trial stores one user attribute, ``"flysearch"``, with the config key, outcome, time, its
unique-compile index, the trial it duplicates or the constraint that rejected it, and the
cumulative simulated cost. The study runs until its budget of *unique compiles* is spent, the
feasible space is exhausted, or the sampler keeps proposing configs that need no compile.

Running the same study again resumes it: finished trials are kept, a trial that was interrupted
after its measurement was stored is completed from that record, and a trial interrupted before
is marked failed (nothing of it was measured, so nothing is lost).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import TrialState

from flysearch.errors import DiskFullError, FlysearchError, StudyMismatchError
from flysearch.evaluators import ReplayEvaluator
from flysearch.samplers import SearchContext, make_sampler
from flysearch.study._loop import SyncEvaluator, run_loop
from flysearch.study._shared import SharedStudy, lost_connection
from flysearch.study._spec import DEFAULT_STORAGE, StudySpec, identity_differences
from flysearch.study._sqlite import tune_sqlite
from flysearch.study._sqlite_file import create_whole, examine, sqlite_path
from flysearch.study._trials import RECORD_ATTR, History, TrialRecord, Trials, tell_record
from flysearch.tables import Outcome

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial

    from flysearch.evaluators import Evaluator
    from flysearch.space import ArchProfile, Shape, Space
    from flysearch.tables import GroundTruth

__all__ = ["StudySummary", "open_storage", "open_study", "run_study", "summarize", "trial_records"]

@dataclass
class StudySummary:
    """Counts and the best config of a study."""

    study_name: str
    trials: int = 0
    compiles: int = 0
    duplicates: int = 0
    rejected: int = 0
    failed: int = 0
    best_key: str | None = None
    best_ms: float | None = None
    best_compile_index: int | None = None
    cost_s: float = 0.0
    n_feasible: int | None = None
    stopped: str = ""
    settings: dict[str, Any] = field(default_factory=dict)
    finalists: dict[str, Any] | None = None
    new_trials: int | None = None


def open_storage(
    storage: str | optuna.storages.BaseStorage | None, *, create: bool = True, current: bool = False
) -> optuna.storages.BaseStorage:
    """An Optuna storage from a URL (``sqlite:///file.db``, ``postgresql://...``) or ``":memory:"``.

    A database server that drops the connection or cannot be reached while the storage opens (a
    restart) is tried again a few times, for two seconds in all.

    With *create* false, a SQLite file that does not exist raises instead of being created. With
    *current*, the caller knows the database has this Optuna's schema already (a copy of a template
    this process made, :mod:`flysearch.study`): Optuna's table creation and version
    check, some 30 ms of queries, are skipped.

    Raises:
        FlysearchError: the storage cannot be opened (a missing database driver is named with the
            ``pip install`` that brings it); :class:`DiskFullError` when its disk is full.
    """
    if isinstance(storage, optuna.storages.BaseStorage):
        return storage
    if storage in (None, ""):
        storage = DEFAULT_STORAGE
    if storage == ":memory:":
        return optuna.storages.InMemoryStorage()
    url = str(storage)
    path = sqlite_path(url)
    if path is not None and not create and not Path(path).is_file():
        raise FlysearchError(f"No study storage at {url}; run a study first with 'flysearch study run'.")
    for attempt in range(5):
        try:
            if path is not None and not current:
                examine(url, path)
                # A new file is built beside its path and linked into place whole (no half-made
                # schema if the process is killed); it is this Optuna's, so it is not checked again.
                current = create_whole(path, _build_storage)
            # A database server's connections are checked before use: after a restart of the
            # server, those kept in the pool are dead, and a study goes on with fresh ones.
            checked = None if url.startswith("sqlite") else {"pool_pre_ping": True}
            rdb = optuna.storages.RDBStorage(url, engine_kwargs=checked, skip_compatibility_check=current,
                                             skip_table_creation=current)
        except (ImportError, ValueError, sqlalchemy_errors()) as exc:
            if attempt < 4 and (_lost_schema_race(exc) or lost_connection(exc)):
                time.sleep(0.2 * (attempt + 1))
                continue
            reason = _missing_driver(url, exc) or str(exc).splitlines()[0]
            raise DiskFullError.found_in(exc, url) or FlysearchError(
                f"Cannot open study storage {url!r}: {reason}.") from None
        if rdb.engine.url.database not in (None, "", ":memory:"):  # a file: WAL, no waiting on the disk
            tune_sqlite(rdb.engine)
        return rdb
    raise AssertionError("unreachable")


def _missing_driver(url: str, exc: BaseException) -> str | None:
    """Why *url* cannot be opened when *exc* says that its database driver is not installed (Optuna
    re-raises SQLAlchemy's ImportError with a message of its own: the module is in the cause)."""
    missing = next((e.name for e in (exc, exc.__cause__) if isinstance(e, ModuleNotFoundError)), None)
    if missing is None:
        return None
    extra = "pip install 'flysearch[postgres]'"  # psycopg2
    if missing == "psycopg2":
        return f"its driver psycopg2 is not installed; {extra}"
    if not url.startswith("postgresql"):
        return f"its driver {missing} is not installed; install it"
    if missing == "psycopg" and url.startswith("postgresql:"):  # SQLAlchemy 2.1's default driver
        return (f"its driver psycopg, SQLAlchemy's default for postgresql://, is not installed; pip install "
                f"'psycopg[binary]', or {extra} and write the URL as postgresql+psycopg2://")
    return (f"its driver {missing} is not installed; install it, or {extra} and write the URL as "
            "postgresql+psycopg2://")


def _build_storage(path: str) -> None:
    """Create Optuna's schema and version stamp in a new SQLite file at *path*."""
    optuna.storages.RDBStorage(f"sqlite:///{path}").engine.dispose()


def _lost_schema_race(exc: Exception) -> bool:
    """Whether *exc* is another process creating the same new storage's tables at the same time."""
    text = str(exc)
    signs = ("already exists", "database is locked", "duplicate key", "UNIQUE constraint")
    return any(sign in text for sign in signs)


def sqlalchemy_errors() -> type[Exception]:
    import sqlalchemy.exc

    return sqlalchemy.exc.SQLAlchemyError


def _records(study: optuna.Study) -> list[TrialRecord]:
    """The records of *study*'s finished trials, in trial order (one query on an RDB storage)."""
    from flysearch.study._trial_writer import finished_attr

    found = finished_attr(study, RECORD_ATTR)
    if found is None:
        return [record for _t, record in trial_records(study)]
    records = (TrialRecord.from_dict(raw) for _n, raw in found)
    return [r for r in records if r is not None]


def trial_records(study: optuna.Study) -> list[tuple[FrozenTrial, TrialRecord]]:
    """The finished trials of *study* that carry a flysearch record, in trial order."""
    out = []
    for t in study.get_trials(deepcopy=False):
        record = TrialRecord.from_trial(t)
        if record is not None and t.state in (TrialState.COMPLETE, TrialState.FAIL):
            out.append((t, record))
    return out


def _recover_abandoned(study: optuna.Study) -> None:
    """Finish the trials a killed run left RUNNING: complete one whose record was stored from that
    record, fail one interrupted before (nothing of it was measured). Shared studies write only
    finished trials (:mod:`flysearch.study`), so a RUNNING trial of the storage belongs to no
    live process of this study; another process may finish one first, which is fine."""
    running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
    if not running:
        return
    history = History()
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL)):
        record = TrialRecord.from_trial(t)
        if record is not None:
            history.add(t.number, record)
    for t in running:
        record = TrialRecord.from_trial(t)
        with contextlib.suppress(RuntimeError, ValueError):  # finished by another process meanwhile
            if record is None:
                study.tell(t.number, state=TrialState.FAIL)
            else:
                history.add(t.number, record)
                tell_record(study, t.number, history, record)


def open_study(
    study_name: str,
    storage: optuna.storages.BaseStorage,
    settings: StudySpec,
    sampler: optuna.samplers.BaseSampler,
    *,
    space: Space | None,
) -> optuna.Study:
    """Create or load the study *study_name* in *storage*: a new one stores *settings* and what
    *space* it searches; an existing one must have been started with the same identity
    (:meth:`StudySpec.identity`, space included, else :class:`StudyMismatchError` naming each
    difference), and a grown budget is stored. A study stored before flysearch stored its space
    is resumed, and its space is stored from then on."""
    study = optuna.create_study(
        study_name=study_name, storage=storage, sampler=sampler, direction="minimize",
        load_if_exists=True,
    )
    record = settings.stored(space)
    stored = study.user_attrs.get(RECORD_ATTR)
    if stored is None:
        study.set_user_attr(RECORD_ATTR, record)
        return study
    differences = identity_differences(stored, settings.identity(space))
    if differences:
        raise StudyMismatchError(
            f"Study {study_name!r} exists with other settings ({'; '.join(differences)}); resume it with "
            "the same settings or give a new study name."
        )
    if any(stored.get(k) != v for k, v in record.items()):  # a grown budget, a space stored at last
        study.set_user_attr(RECORD_ATTR, record)
    return study


def run_study(
    study_name: str,
    space: Space,
    evaluator: Evaluator,
    settings: StudySpec,
    *,
    shape: Shape | None = None,
    arch: ArchProfile | None = None,
    storage: str | optuna.storages.BaseStorage | None = None,
    progress: Callable[[int, int], None] | None = None,
    prior: Any = None,
    problem: dict[str, Any] | None = None,
    target_ms: float | None = None,
) -> StudySummary:
    """Run (or resume) a study until its budget of unique compiles is spent.

    Args:
        study_name: Name of the Optuna study; running the same name again resumes it.
        space: The space searched; pruned for (*shape*, *arch*) before anything is compiled.
        evaluator: Compiles and times configs (a replayed table or a live GPU).
        settings: Sampler, budget, seed and encoding.
        shape: The GEMM shape, if the space's constraints need one.
        arch: The arch profile, if the constraints need one.
        storage: Optuna storage URL or object; ``None`` means the one *settings* names
            (:attr:`StudySpec.storage`).
        progress: Called as ``progress(compiles, budget)`` after each trial.
        prior: A trained cost model, for the model-based samplers.
        problem: The problem sizes a cost model sees (defaults to the shape's).
        target_ms: Stop as soon as a successful time at most this is found (a replayed table's
            optimum: nothing after it can change the best time); ``None`` runs the whole budget.

    Raises:
        EmptySpaceError: the constraints leave no config (raised before any storage is touched).
        StudyMismatchError: the stored study was started with other settings or over another
            space (other parameters, value sets or constraints).
        DiskFullError: the disk of the storage is full; the finished trials stay stored, and the
            same call resumes once there is room.
    """
    enumeration = space.enumerate(shape, arch)
    context = SearchContext(space, settings.encoding, enumeration.shuffled(settings.seed), shape, arch,
                            problem)
    sampler = make_sampler(settings.sampler, seed=settings.seed, context=context, prior=prior,
                           budget=settings.budget, measured=_measured(evaluator),
                           options=settings.sampler_options)
    storage = settings.storage if storage is None else storage
    where = (storage or DEFAULT_STORAGE) if isinstance(storage, str) else None
    with DiskFullError.raised_for(where):  # the storage's disk filled up: the same call resumes
        durable = open_study(study_name, open_storage(storage), settings, sampler, space=space)
        _recover_abandoned(durable)
        shared = SharedStudy(durable, sampler)
        trials = Trials(shared.working, settings.sampler, target_ms=target_ms)
        try:
            result = run_loop(trials, space, context, SyncEvaluator(evaluator, trials, shared, context),
                              budget=settings.budget, max_idle=settings.max_idle, progress=progress)
        finally:
            shared.close()
        summary = summarize(durable)
    summary.n_feasible = len(enumeration.feasible)
    summary.new_trials = result.asked
    summary.stopped = result.stopped
    return summary


class _TableTimes(Mapping[str, "float | None"]):
    """A replayed table's time of each config by key, ``None`` where it failed: a view of its rows,
    read only by the samplers that replay a table themselves (``kt:``)."""

    def __init__(self, table: GroundTruth) -> None:
        self._rows = table.rows

    def __getitem__(self, key: str) -> float | None:
        row = self._rows[key]
        return row.time_ms if row.ok else None

    def __iter__(self) -> Iterator[str]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)


def _measured(evaluator: Evaluator) -> Mapping[str, float | None] | None:
    """The replayed table's times (:class:`_TableTimes`); ``None`` for a live evaluator."""
    return _TableTimes(evaluator.table) if isinstance(evaluator, ReplayEvaluator) else None


def summarize(study: optuna.Study) -> StudySummary:
    """Counts and best config of a stored study, read from its trials' flysearch records."""
    summary = StudySummary(study.study_name, settings=dict(study.user_attrs.get(RECORD_ATTR, {})),
                           finalists=study.user_attrs.get("flysearch_finalists"))
    for record in _records(study):
        summary.trials += 1
        if record.duplicate_of is not None:
            summary.duplicates += 1
        elif record.outcome == Outcome.REJECTED.value:
            summary.rejected += 1
        elif record.outcome != Outcome.OK.value:
            summary.failed += 1
        if record.compile_index is not None:
            summary.compiles = max(summary.compiles, record.compile_index)
        summary.cost_s = max(summary.cost_s, record.cost_s)
        if record.outcome == Outcome.OK.value and record.time_ms is not None and (
            summary.best_ms is None or record.time_ms < summary.best_ms
        ):
            summary.best_ms, summary.best_key = record.time_ms, record.key
            summary.best_compile_index = record.compile_index
    return summary
