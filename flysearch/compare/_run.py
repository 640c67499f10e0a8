"""Run an experiment: seeds x samplers x tables through the replay evaluator, in worker processes.

Each run is one :func:`~flysearch.study.run_study` against a replayed table, in an in-memory Optuna
storage inside a worker. Its compile trajectory (best-so-far time and simulated seconds after each
unique compile) is written to the experiment's results database (``<output>/results.db``, SQLite
through sqlite-utils) in one transaction when the run is done. Running the experiment again skips
the finished runs, so an interrupted experiment resumes where it stopped.

The ``costmodel`` sampler is trained leave-one-table-out: for the table it is scored on, its prior
(and the list of a zero-shot baseline: ``fixed-list``, ``decision-tree``, ``winners-first``) is
fitted on the experiment's *other* tables (unless ``prior_on_tables`` is false) and its
``[[prior_table]]`` entries, never on that table nor on a restriction of it (:func:`training_tables`).
With ``times = "retimed"`` the runs and the report read each table's noise-aware variant; a prior
trains on race times.

With ``Experiment.stop_at_optimum`` (the default) a run ends once it has compiled the best config of
its searched space: its trajectory is then shorter than the budget, and every metric reads it as
keeping its last best time (:meth:`~flysearch.compare._metrics.Trajectory.best_at`), exactly what the full
run would have reported. The run's ``stopped`` column says ``target reached``.

Example:
    >>> from flysearch.compare import Experiment, SamplerSpec, TableSpec
    >>> exp = Experiment("doc", (TableSpec("../shared/data/benchmark_hub/dedispersion_milo/A100.json.gz"),),
    ...                  (SamplerSpec("random"),), seeds=(0,), budget=5, workers=1, output="doc-results")
    >>> run_experiment(exp).done  # doctest: +SKIP
    1
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import hashlib
import itertools
import json
import math
import os
import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import asdict, dataclass, field, replace
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import sqlite_utils

from flysearch._lifeline import Lifeline
from flysearch.compare._blas import portable_environment, runs_portable
from flysearch.compare._experiment import MODEL_SAMPLERS, Experiment, SamplerSpec, TableSpec
from flysearch.compare._metrics import Trajectory
from flysearch.errors import DiskFullError, FlysearchError, InputFormatError
from flysearch.space import Param, Space
from flysearch.tables import GroundTruth, TableStore

__all__ = [
    "CompareResult",
    "RunTask",
    "TableInfo",
    "load_runs",
    "load_table",
    "load_table_infos",
    "model_samplers_available",
    "plan_runs",
    "restricted_space",
    "run_experiment",
    "study_trajectory",
    "table_names",
    "training_tables",
]

RESULTS_DB = "results.db"
# Rough relative cost of one run per sampler, to start the slow ones first (better packing).
_COST_ORDER = {"gp": 0, "costmodel": 1, "surrogate": 1, "spreadforest": 1, "tpe": 2, "tpe-unseen": 2,
               "fastgp": 3, "cmaes": 3}


# -- tables ---------------------------------------------------------------------------------------


def load_table(spec: TableSpec, db: str) -> GroundTruth:
    """The table *spec* names: read from its file, or loaded from the table database *db*."""
    if spec.is_file:
        from flysearch.tables import read_any_table

        meta, rows = read_any_table(spec.source)
        return GroundTruth(meta, {r.key: r for r in rows})
    store = TableStore(db, create=False)
    try:
        return store.load(spec.source)
    finally:
        store.close()


def restricted_space(space: Space, restrict: Sequence[tuple[str, Sequence[Any]]]) -> Space:
    """*space* with the domains of some parameters cut to the allowed values (constraints kept).

    Raises:
        InputFormatError: a parameter is not in the space or a value is outside its domain.
    """
    if not restrict:
        return space
    allowed = dict(restrict)
    names = {p.name for p in space.params}
    unknown = set(allowed) - names
    if unknown:
        raise InputFormatError(
            f"restrict names parameters {sorted(unknown)} that space {space.name!r} lacks; "
            f"its parameters are {sorted(names)}."
        )
    params = []
    for p in space.params:
        if p.name not in allowed:
            params.append(p)
            continue
        values = tuple(v for v in p.values if v in set(allowed[p.name]))
        outside = [v for v in allowed[p.name] if v not in p.values]
        if outside or not values:
            raise InputFormatError(
                f"restrict gives {p.name} values {outside or list(allowed[p.name])} outside its "
                f"domain {list(p.values)}; pick values from the domain."
            )
        params.append(Param(p.name, values))
    tag = ",".join(f"{k}={'|'.join(map(str, v))}" for k, v in restrict)
    return Space(f"{space.name}[{tag}]", params, space.constraints, kernel=space.kernel)


def _group_of(spec: TableSpec, table: GroundTruth) -> str:
    if spec.group:
        return spec.group
    shape = table.meta.shape()
    if shape is not None:
        return f"{table.meta.arch or table.meta.device}/{shape.regime}"
    return f"{table.meta.kernel}/{table.meta.device}"


def _label_of(spec: TableSpec, table: GroundTruth) -> str:
    if spec.label:
        return spec.label
    tag = ",".join(f"{k}={'|'.join(map(str, v))}" for k, v in spec.restrict)
    return f"{table.name}[{tag}]" if tag else table.name


@dataclass(frozen=True)
class TableInfo:
    """What the report needs to know about a table of an experiment."""

    label: str
    name: str
    kernel: str
    arch: str
    device: str
    shape: str
    regime: str
    group: str
    n_feasible: int
    n_ok: int
    optimum_ms: float
    space_optimum_ms: float
    source: str
    date: str
    restrict: str
    ok_times: list[float] = field(repr=False, default_factory=list)
    row_times: list[float | None] = field(repr=False, default_factory=list)
    costs: list[float] = field(repr=False, default_factory=list)  # compile + timing seconds (cold cache)
    warm_costs: list[float] = field(repr=False, default_factory=list)  # timing seconds (warm cache)
    n_retimed: int = 0  # configs of the table with a re-timed median


def _table_info(spec: TableSpec, table: GroundTruth) -> TableInfo:
    from flysearch.tables import space_for_table

    space = restricted_space(space_for_table(table), spec.restrict)
    arch, shape = _arch_of(table), table.meta.shape()
    feasible = space.enumerate(shape, arch).feasible
    rows = [table.rows[c.key] for c in feasible if c.key in table.rows]
    ok = [r for r in rows if r.ok]
    if not ok:
        raise FlysearchError(f"Table {table.name!r} has no successful config in the searched space.")
    return TableInfo(
        label=_label_of(spec, table),
        name=table.name,
        kernel=table.meta.kernel,
        arch=table.meta.arch,
        device=table.meta.device,
        shape=shape.key if shape else json.dumps(table.meta.problem),
        regime=shape.regime if shape else "",
        group=_group_of(spec, table),
        n_feasible=len(feasible),
        n_ok=len(ok),
        optimum_ms=table.best().time_ms or math.nan,
        space_optimum_ms=min(r.time_ms for r in ok if r.time_ms is not None),
        source=table.meta.source,
        date=table.meta.date,
        restrict=json.dumps(dict(spec.restrict)),
        ok_times=[float(r.time_ms) for r in ok if r.time_ms is not None],
        row_times=[float(r.time_ms) if r.ok and r.time_ms is not None else None for r in rows],
        costs=[(r.compile_s or 0.0) + (r.bench_s or 0.0) for r in rows],
        warm_costs=[r.bench_s or 0.0 for r in rows],
        n_retimed=len(table.retimed_ms()),
    )


def _arch_of(table: GroundTruth) -> Any:
    from flysearch.space import table_profile

    return table_profile(table.meta.arch, table.meta.device)


def training_tables(scored: GroundTruth, candidates: Sequence[GroundTruth]) -> list[GroundTruth]:
    """The tables a ``costmodel`` prior may train on when scored on *scored*: all others.

    A table is excluded when it has *scored*'s name or is the same object (a restricted variant
    of the scored table is the scored table), so a prior never sees the answers it is scored on.
    """
    out, seen = [], set()
    for t in candidates:
        if t is scored or t.name == scored.name or t.name in seen:
            continue
        seen.add(t.name)
        out.append(t)
    return out


def model_samplers_available() -> str | None:
    """``None`` when ``flysearch.costmodel`` imports, else why the model-based samplers are skipped."""
    try:
        import flysearch.costmodel  # noqa: F401
    except ImportError as exc:
        return f"flysearch.costmodel is not importable yet ({exc}); costmodel/surrogate runs are skipped"
    return None


# -- runs -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunTask:
    """One run: a table, a sampler, a seed, a budget; picklable for a worker process."""

    experiment: str
    table: TableSpec
    sampler: SamplerSpec
    seed: int
    budget: int
    db: str
    priors: tuple[TableSpec, ...] = ()
    stop_at_optimum: bool = False
    retimed: bool = False  # the table's re-timed medians stand for its race times

    @property
    def table_label(self) -> str:
        return self.table.label

    @property
    def run_id(self) -> str:
        return f"{self.table.label}|{self.sampler.label}|seed={self.seed}|budget={self.budget}"

    @property
    def fingerprint(self) -> str:
        """What the run's result depends on: its table (a file by its name and content, wherever it
        lies), sampler, budget, prior tables and ground truth. A stored run whose fingerprint
        differs is stale, not resumable."""
        return self._fingerprint(_table_identity(self.table))

    @property
    def legacy_fingerprint(self) -> str:
        """The fingerprint runs were stored with before it named a table file by its content (by
        its absolute path instead): such runs still resume where their table files lie."""
        return self._fingerprint(asdict(self.table))

    def _fingerprint(self, table: dict[str, Any]) -> str:
        # A sampler at its defaults keeps the fingerprint it had before samplers took options.
        sampler = {k: v for k, v in asdict(self.sampler).items()
                   if k != "seeds" and not (k == "options" and not v)}
        settings: list[Any] = [table, sampler, self.budget]
        if self.priors:  # a prior trained on other tables is another setting
            settings.append(sorted(p.label for p in self.priors))
        if self.retimed:  # so is the ground truth
            settings.append("retimed")
        text = json.dumps(settings, sort_keys=True, default=str)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _table_identity(spec: TableSpec) -> dict[str, Any]:
    """*spec* with a table file named by its file name and the SHA-256 of its bytes instead of its
    path: moving an experiment's folder keeps its runs, and a table rewritten in place does not."""
    identity = asdict(spec)
    if spec.is_file:
        try:
            stat = os.stat(spec.source)
        except OSError:  # a missing file fails where the run loads it, with its own message
            digest = ""
        else:
            digest = _file_digest(spec.source, stat.st_size, stat.st_mtime_ns)
        identity.update(source=Path(spec.source).name, sha256=digest)
    return identity


@functools.lru_cache(maxsize=1024)
def _file_digest(path: str, size: int, mtime_ns: int) -> str:
    """SHA-256 of the file at *path*; *size* and *mtime_ns* key the cache, so a rewritten file is
    read again."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


_TABLES: dict[tuple[str, str, bool], GroundTruth] = {}
_PRIORS: dict[tuple[Any, ...], Any] = {}
_OPTIMA: dict[tuple[str, str, bool], float] = {}
_SPACES: dict[tuple[str, str, str], Space] = {}


def _cached_table(spec: TableSpec, db: str, retimed: bool = False) -> GroundTruth:
    """*spec*'s table (loaded once per process); with *retimed*, its noise-aware variant."""
    key = (spec.source, db, retimed)
    if key not in _TABLES:
        table = _cached_table(spec, db) if retimed else load_table(spec, db)
        _TABLES[key] = table.with_retimed_times() if retimed else table
    return _TABLES[key]


def _cached_space(spec: TableSpec, db: str, table: GroundTruth) -> Space:
    """The run's space, one object per table and restriction in a worker (so that it is pruned once)."""
    from flysearch.tables import space_for_table

    key = (spec.source, db, json.dumps(spec.restrict))
    if key not in _SPACES:
        _SPACES[key] = restricted_space(space_for_table(table), spec.restrict)
    return _SPACES[key]


def _training_of(task: RunTask) -> list[GroundTruth]:
    """The tables *task*'s prior trains on (:func:`training_tables` of its candidates)."""
    candidates = [_cached_table(s, task.db) for s in task.priors]
    return training_tables(_cached_table(task.table, task.db), candidates)


def _prior_key(task: RunTask) -> tuple[Any, ...]:
    """What a prior depends on: its sampler and the tables it trains on. Runs on tables whose
    training sets are the same (``prior_on_tables = false``) share one fitted prior."""
    return (task.sampler.label, task.db, tuple(t.name for t in _training_of(task)))


def _prior_for(task: RunTask) -> Any:
    key = _prior_key(task)
    if key not in _PRIORS:
        if task.sampler.name == "costmodel":
            from flysearch.costmodel import fit_prior

            _PRIORS[key] = fit_prior(_training_of(task))
        else:  # a zero-shot baseline learns its list from the same tables
            from flysearch.samplers import transfer_tables

            _PRIORS[key] = transfer_tables(_training_of(task))
    return _PRIORS[key]


def _space_optimum(task: RunTask, table: GroundTruth, space: Space, shape: Any, arch: Any) -> float:
    """The best successful time among the feasible configs of the run's space (cached per table)."""
    key = (task.table.label, task.db, task.retimed)
    if key not in _OPTIMA:
        times = [
            table.rows[c.key].time_ms
            for c in space.enumerate(shape, arch).feasible
            if c.key in table.rows and table.rows[c.key].ok
        ]
        _OPTIMA[key] = min((t for t in times if t is not None), default=-math.inf)
    return _OPTIMA[key]


def fit_run_prior(task: RunTask) -> Any:
    """The prior *task* runs with (fitted here, and kept for this worker's later tasks)."""
    return _prior_for(task)


def execute_run(task: RunTask, prior: Any = None) -> dict[str, Any]:
    """Run one task and return its results record (what :func:`run_experiment` stores).

    *prior*, for a sampler that needs one, is the task's prior fitted elsewhere (by
    :func:`fit_run_prior`); without it the worker fits it (once per worker)."""
    import optuna

    from flysearch.evaluators import ReplayEvaluator
    from flysearch.study import StudySpec, run_study

    table = _cached_table(task.table, task.db, task.retimed)
    space = _cached_space(task.table, task.db, table)
    arch, shape = _arch_of(table), table.meta.shape()
    if not task.sampler.needs_prior:
        prior = None
    elif prior is None:
        prior = _prior_for(task)
    settings = StudySpec(
        sampler=task.sampler.name,
        sampler_options=dict(task.sampler.options),
        budget=task.budget,
        seed=task.seed,
        encoding=task.sampler.encoding,  # type: ignore[arg-type]
        space=space.name,
        table=table.name,
        arch=arch.name if arch else None,
        shape=shape.key if shape else None,
        max_idle=task.sampler.max_idle,
    )
    storage = optuna.storages.InMemoryStorage()
    target = _space_optimum(task, table, space, shape, arch) if task.stop_at_optimum else None
    start = time.perf_counter()
    summary = run_study(
        task.run_id,
        space,
        ReplayEvaluator(table),
        settings,
        shape=shape,
        arch=arch,
        storage=storage,
        prior=prior,
        target_ms=target,
    )
    wall = time.perf_counter() - start
    traj = study_trajectory(optuna.load_study(study_name=task.run_id, storage=storage))
    return {
        "id": task.run_id,
        "fingerprint": task.fingerprint,
        "experiment": task.experiment,
        "table_label": task.table.label,
        "table_name": table.name,
        "sampler": task.sampler.label,
        "sampler_name": task.sampler.name,
        "encoding": task.sampler.encoding,
        "seed": task.seed,
        "budget": task.budget,
        "compiles": summary.compiles,
        "trials": summary.trials,
        "duplicates": summary.duplicates,
        "rejected": summary.rejected,
        "failed": summary.failed,
        "stopped": summary.stopped,
        "best_ms": summary.best_ms,
        "best_key": summary.best_key,
        "n_feasible": summary.n_feasible,
        "wall_s": wall,
        "ms_per_trial": 1000.0 * wall / max(summary.trials, 1),
        "best_json": json.dumps([None if math.isnan(x) else x for x in traj.best_ms]),
        "cost_json": json.dumps([round(x, 6) for x in traj.cost_s]),
        "warm_json": json.dumps([round(x, 6) for x in traj.warm_s or ()]),
        "finished": _dt.datetime.now().isoformat(timespec="seconds"),
        "versions": json.dumps(_versions()),
        **_where(Path(task.db).parent),
    }


def study_trajectory(study: Any) -> Trajectory:
    """A finished study's :class:`Trajectory`, compile by compile: the best time, the seconds with a
    cold compile cache (each compile's seconds plus its timing's) and with a warm one (the timing's
    alone)."""
    from flysearch.study import trial_records

    steps = sorted(
        (rec.compile_index, rec.time_ms if rec.outcome == "ok" else None, rec.cost_s, rec.compile_s or 0.0)
        for _t, rec in trial_records(study)
        if rec.compile_index is not None
    )
    traj = Trajectory.from_steps([(ms, cost) for _i, ms, cost, _c in steps])
    compiled = itertools.accumulate(c for _i, _ms, _cost, c in steps)
    warm = tuple(max(cost - c, 0.0) for (_i, _ms, cost, _c), c in zip(steps, compiled, strict=True))
    return replace(traj, warm_s=warm)


@functools.cache
def _where(output: Path) -> dict[str, str]:
    """The commit of the code that runs here (the comparison's *output* folder, where its results are
    written, aside) and this machine, recorded with every run (once per process and folder)."""
    from flysearch.compare._provenance import code_commit, host_description

    return {"commit": code_commit(Path(__file__).resolve().parents[2], outputs=[output.resolve()]),
            "host": host_description()}


def _versions() -> dict[str, str]:
    import numpy
    import optuna

    from flysearch._version import __version__
    from flysearch.compare._blas import blas_core

    return {"flysearch": __version__, "optuna": optuna.__version__, "numpy": numpy.__version__,
            "openblas": blas_core() or "none"}


def _init_worker() -> None:
    """Keep each worker to one thread: torch (Optuna's GP) and OpenMP (scikit-learn's boosted trees)
    oversubscribe 2 cores 10x otherwise (measured: a GP run took 282 s instead of 21 s).

    A worker ignores SIGINT: a terminal's Ctrl-C reaches every process of the command, and a worker
    that took it would report its run as failed and go on to the next one; the parent, which gets it
    too, stops the pool instead (:func:`_stop_pool`)."""
    import signal
    import warnings

    import optuna
    from threadpoolctl import threadpool_limits

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    threadpool_limits(1)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore")
    try:
        import torch

        torch.set_num_threads(1)
    except ImportError:  # pragma: no cover - torch comes with optuna's GP only
        pass


# -- the experiment -------------------------------------------------------------------------------


@dataclass
class CompareResult:
    """What :func:`run_experiment` did.

    Attributes:
        results_db: The results database.
        total: Runs planned; done: finished now; skipped_done: found finished already.
        skipped: Why some planned sampler settings were not run (one line each).
        wall_s: Seconds the runs took here.
    """

    results_db: Path
    total: int = 0
    done: int = 0
    skipped_done: int = 0
    skipped: list[str] = field(default_factory=list)
    wall_s: float = 0.0


def _labelled(exp: Experiment) -> tuple[list[TableSpec], list[TableSpec], list[TableInfo]]:
    tables, infos = [], []
    for spec in exp.tables:
        table = _cached_table(spec, exp.db, exp.times == "retimed")
        spec = TableSpec(spec.source, _label_of(spec, table), spec.restrict, _group_of(spec, table))
        tables.append(spec)
        infos.append(_table_info(spec, table))
    labels = [s.label for s in tables]
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise InputFormatError(
            f"Tables {dup} appear twice in experiment {exp.name!r}; give them distinct labels."
        )
    priors = [
        TableSpec(s.source, s.label or _cached_table(s, exp.db).name, s.restrict) for s in exp.prior_tables
    ]
    return tables, priors, infos


def _scored(exp: Experiment, items: list[Any]) -> list[Any]:
    """The entries of *items* (one per table of *exp*) of the tables that get runs
    (``Experiment.only_tables``)."""
    if exp.only_tables is None:
        return items
    return [items[i] for i in exp.only_tables]


def table_names(exp: Experiment) -> list[tuple[str, str]]:
    """Each table of *exp* as ``(label, table name)``, in the file's order (loads the tables)."""
    names = []
    for spec in exp.tables:
        table = _cached_table(spec, exp.db)
        names.append((_label_of(spec, table), table.name))
    return names


def plan_runs(exp: Experiment) -> tuple[list[RunTask], list[TableInfo], list[str]]:
    """The runs of *exp* (slowest samplers first), its tables' infos, and the skipped settings.

    Only the tables of ``exp.only_tables`` get runs, but a costmodel prior trains on all of them
    (leave-one-table-out), so each run is the one the whole experiment would make."""
    exp.validate()
    every_table, priors, infos = _labelled(exp)
    tables, infos = _scored(exp, every_table), _scored(exp, infos)
    skipped, samplers = [], list(exp.samplers)
    missing = model_samplers_available()
    if missing and any(s.name in MODEL_SAMPLERS for s in samplers):
        names = [s.label for s in samplers if s.name in MODEL_SAMPLERS]
        skipped.append(f"{', '.join(names)}: {missing}")
        samplers = [s for s in samplers if s.name not in MODEL_SAMPLERS]
    every = (tuple(every_table) if exp.prior_on_tables else ()) + tuple(priors)
    retimed = exp.times == "retimed"
    tasks = [
        RunTask(exp.name, t, s, seed, exp.budget, exp.db, every if s.needs_prior else (), exp.stop_at_optimum,
                retimed)
        for s in sorted(samplers, key=lambda s: _COST_ORDER.get(s.name, 9))
        for t in tables
        for seed in (s.seeds if s.seeds is not None else exp.seeds)
    ]
    return tasks, infos, skipped


def open_results(path: str | Path) -> sqlite_utils.Database:
    """The results database of an experiment (created on first use)."""
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    db = _results_database(path)
    if "runs" not in db.table_names():
        db["runs"].create({"id": str, "fingerprint": str}, pk="id")  # type: ignore[union-attr]
    return db


def _results_database(path: str | Path) -> sqlite_utils.Database:
    """*path* opened as SQLite; a file that is no database (or a folder) is a one-line error."""
    try:
        db = sqlite_utils.Database(path)
        db.table_names()
    except sqlite3.DatabaseError as exc:
        raise FlysearchError(
            f"{path} is not a results database ({exc}); move it away, or give the experiment another "
            "output folder."
        ) from None
    return db


def _finished(db: sqlite_utils.Database, tasks: list[RunTask]) -> set[str]:
    stored = {r["id"]: r["fingerprint"] for r in db.query("select id, fingerprint from runs")}
    for task in tasks:
        if task.run_id in stored and stored[task.run_id] not in (task.fingerprint, task.legacy_fingerprint):
            raise FlysearchError(
                f"Results in {db.conn.execute('pragma database_list').fetchone()[2]} hold run "
                f"{task.run_id!r} with other settings; give the changed table or sampler a new label "
                "or the results another output folder (--out)."
            )
    return set(stored) & {t.run_id for t in tasks}


def _store_infos(db: sqlite_utils.Database, infos: list[TableInfo]) -> None:
    with db.atomic():
        for info in infos:
            rec = {k: v for k, v in asdict(info).items()
                   if k not in ("ok_times", "row_times", "costs", "warm_costs")}
            db["tables"].insert(rec, pk="label", replace=True, alter=True)  # type: ignore[union-attr]


def run_experiment(
    exp: Experiment,
    *,
    workers: int | None = None,
    progress: Callable[[int, int, str], None] | None = None,
) -> CompareResult:
    """Run (or resume) every unfinished run of *exp* and store each one when it is done.

    Args:
        exp: The experiment.
        workers: Worker processes (default ``exp.workers``); 1 runs in this process.
        progress: Called as ``progress(done, total, last_run_id)`` after each stored run.

    Raises:
        FlysearchError: a table is missing, a restriction is invalid, or stored results disagree.
        DiskFullError: the disk of the results database is full; the stored runs stay, and the
            same call resumes once there is room.
    """
    tasks, infos, skipped = plan_runs(exp)
    result = CompareResult(Path(exp.output) / RESULTS_DB, total=len(tasks), skipped=skipped)
    with DiskFullError.raised_for(result.results_db):  # the results' disk filled up: the command resumes
        db = open_results(result.results_db)
        try:
            _store_infos(db, infos)
            finished = _finished(db, tasks)
            todo = [t for t in tasks if t.run_id not in finished]
            result.skipped_done = len(tasks) - len(todo)
            start = time.perf_counter()

            def store(rec: dict[str, Any]) -> None:
                with db.atomic():
                    db["runs"].insert(rec, pk="id", replace=True, alter=True)  # type: ignore[union-attr]
                result.done += 1
                if progress is not None:
                    progress(result.skipped_done + result.done, result.total, rec["id"])

            if progress is not None:
                progress(result.skipped_done, result.total, "")
            _dispatch(todo, workers or exp.workers, store)
            result.wall_s = time.perf_counter() - start
        finally:
            db.close()
    return result


def _dispatch(todo: list[RunTask], workers: int, store: Callable[[dict[str, Any]], None]) -> None:
    """Run *todo* in this process when it is one worker's work and this process computes as a
    portable one would (:mod:`flysearch.compare`); else in a pool of spawned, portable workers."""
    if not todo:
        return
    if (workers <= 1 or len(todo) <= 1) and runs_portable():
        _serial(todo, store)
        return
    with portable_environment():
        _pooled(todo, max(workers, 1), store)


def _pooled(todo: list[RunTask], workers: int, store: Callable[[dict[str, Any]], None]) -> None:
    """Run *todo* in a pool of *workers* spawned processes, storing each result as it comes.

    Whatever stops this early (an error, Ctrl-C, a signal turned into an exception by the caller)
    ends every worker before it propagates (:func:`_stop_pool`): the runs stored by then stay stored,
    and no worker goes on with a run nobody will store."""
    # Each worker ends with this process, however it ends (kill -9 too).
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"),
                               initializer=Lifeline(_init_worker))
    try:
        # Each prior is fitted once, by one worker, while the others start the runs that need none;
        # the runs that need it are submitted (with it) once it is fitted.
        waiting: dict[tuple[Any, ...], list[RunTask]] = {}
        for task in todo:
            if task.sampler.needs_prior:
                waiting.setdefault(_prior_key(task), []).append(task)
        fits = {pool.submit(fit_run_prior, tasks[0]): key for key, tasks in waiting.items()}
        runs = {pool.submit(execute_run, t): t for t in todo if not t.sampler.needs_prior}
        pending = set(fits) | set(runs)
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for fut in done:
                if fut in fits:
                    prior = fut.result()
                    more = {pool.submit(execute_run, t, prior): t for t in waiting.pop(fits[fut])}
                    runs.update(more)
                    pending |= set(more)
                else:
                    with _naming(runs[fut]):
                        rec = fut.result()
                    store(rec)
    except BrokenProcessPool as exc:  # a worker died: not the run's fault, nor the user's
        workers = _workers_of(pool)
        _stop_pool(pool)  # which joins every worker: each exit code is known after it
        raise ChildProcessError(_death(workers)) from exc
    except BaseException:
        _stop_pool(pool)
        raise
    pool.shutdown(wait=True)


def _death(workers: list[Any]) -> str:
    """The one line that says a worker of *workers* died, how (its signal or exit code), and that
    the same command resumes. Once one worker dies the pool ends the others with SIGTERM, so a code
    other than SIGTERM is the death's."""
    import signal

    codes = [p.exitcode for p in workers if p.exitcode]
    code = next((c for c in codes if c != -signal.SIGTERM), codes[0] if codes else None)
    if code is None:
        how = "it ended unexpectedly"
    elif code < 0:
        try:
            how = f"killed by {signal.Signals(-code).name}"
        except ValueError:
            how = f"killed by signal {-code}"
    else:
        how = f"exit code {code}"
    hint = (" (SIGKILL is often the kernel's out-of-memory killer: fewer --workers need less memory)"
            if code == -signal.SIGKILL else "")
    return (f"A compare worker process died ({how}); the runs stored so far are kept, and running the "
            f"same command again resumes after them{hint}.")


@contextlib.contextmanager
def _naming(task: RunTask) -> Iterator[None]:
    """Turn a run's unexpected error (a sampler that raised, say) into one line naming the run; the
    runs stored before it stay stored, and the same command resumes after the rest."""
    try:
        yield
    except (FlysearchError, BrokenProcessPool):  # a dead worker is not the run's failure
        raise
    except Exception as exc:
        raise FlysearchError(
            f"Run {task.run_id} failed: {type(exc).__name__}: {exc}; the runs stored so far are kept "
            "(leave this sampler or table out with --samplers or --tables to run the rest)."
        ) from exc


# Seconds a terminated worker gets to exit before it is killed.
_TERMINATE_GRACE_S = 2.0


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """Cancel what *pool* has not started and end its workers now: SIGTERM, then SIGKILL for one
    still there after :data:`_TERMINATE_GRACE_S`. ``shutdown(cancel_futures=True)`` alone leaves the
    running calls (and those already queued to a worker) to finish, minutes of work on a stopped
    command, and the interpreter's exit waits for them."""
    from multiprocessing.connection import wait as wait_for

    processes = _workers_of(pool)
    pool.shutdown(wait=False, cancel_futures=True)
    for p in processes:
        if p.exitcode is None:
            p.terminate()
    deadline = time.monotonic() + _TERMINATE_GRACE_S
    left = {p.sentinel: p for p in processes}
    while left and time.monotonic() < deadline:
        for ended in wait_for(list(left), timeout=max(deadline - time.monotonic(), 0.0)):
            left.pop(ended)
    for p in left.values():
        p.kill()
    for p in processes:
        p.join(timeout=_TERMINATE_GRACE_S)
    # With its workers gone the executor's manager thread ends at once; joining it here keeps the
    # interpreter's exit from waking it while it closes its pipe (a race in concurrent.futures that
    # printed "OSError: [Errno 9] Bad file descriptor" after a SIGTERM had stopped the command).
    pool.shutdown(wait=True)


def _workers_of(pool: ProcessPoolExecutor) -> list[Any]:
    """The worker processes of *pool* (its private ``_processes``: the executor has no public list of
    them before Python 3.14's ``terminate_workers``)."""
    return list((getattr(pool, "_processes", None) or {}).values())


def _serial(todo: list[RunTask], store: Callable[[dict[str, Any]], None]) -> None:
    """Run in this process, one thread, restoring the caller's thread settings afterwards."""
    import optuna
    from threadpoolctl import threadpool_limits

    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        import torch

        threads = torch.get_num_threads()
    except ImportError:  # pragma: no cover
        torch, threads = None, 0
    try:
        with threadpool_limits(1):
            if torch is not None:
                torch.set_num_threads(1)
            for task in todo:
                with _naming(task):
                    rec = execute_run(task)
                store(rec)
    finally:
        optuna.logging.set_verbosity(verbosity)
        if torch is not None:
            torch.set_num_threads(threads)


def load_runs(results_db: str | Path) -> list[dict[str, Any]]:
    """Every stored run of a results database, with its trajectory as a :class:`Trajectory`."""
    if not Path(results_db).is_file():
        raise FlysearchError(f"No results database at {results_db}; run the experiment first.")
    db = _results_database(results_db)
    try:
        runs = list(db.query("select * from runs order by table_label, sampler, seed"))
    finally:
        db.close()
    for r in runs:
        best = [math.nan if x is None else float(x) for x in json.loads(r["best_json"])]
        warm = tuple(json.loads(r["warm_json"])) if r.get("warm_json") else None  # none before 2026-12
        r["trajectory"] = Trajectory(tuple(best), tuple(json.loads(r["cost_json"])), warm)
    return runs


def load_table_infos(exp: Experiment) -> list[TableInfo]:
    """The infos (optimum, valid times, costs) of *exp*'s tables that get runs, read from the tables."""
    return _scored(exp, _labelled(exp)[2])
