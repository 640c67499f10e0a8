"""Live studies: the sampler asks, a pool of CPU processes compiles ahead, one GPU process times.

A live study runs the same loop as a replayed one (:func:`flysearch.study._loop.run_loop`: one
trial per suggestion, constraint rejections and duplicates answered without a compile, the same
trial records); its trial evaluator, :class:`~flysearch.study.live._pipeline.Pipeline`, compiles
and times the configs for real, as a pipeline:

* the sampler is asked for several trials at once (up to ``depth`` in flight, fewer while the GPU
  is the bottleneck; TPE runs with its constant liar, the model-based and grid samplers skip what
  running trials evaluate), so the compile pool is never idle while the GPU times;
* each config is **claimed** before it is compiled (:mod:`flysearch.study`): one row per
  (study, config) taken atomically in the study's database, so several workers (one per GPU, on one
  host or many, sharing a PostgreSQL or SQLite storage) never compile one config twice, and the
  study's budget of compiles is shared exactly;
* compiled configs are timed one at a time by the timer process that owns this worker's GPU;
* every measurement is told to Optuna, then written to its claim and its trial (one transaction),
  then to the ground-truth table (:class:`~flysearch.tables.TableStore`, so live studies grow the
  data the cost model trains on); what one pass of the loop measured is written together. A worker
  killed at any point loses no finished trial and no table row: a rerun adds the table rows that
  stored measurements lack, fails the trials left running, and re-claims (compiles again) only
  configs whose claim never finished; a config that
  killed its worker ``max_attempts`` times is recorded as failed. A compile or launch that crashes
  or hangs only its pool process is a recorded failure at once.
* When the budget is spent, the worker that finishes last re-times the top configs in interleaved
  rounds (:mod:`flysearch.evaluators`) and reports the winner with its spread and its tie set.

The report separates what the study cost: wall-clock seconds, seconds during which a compile or a
timing was running (the union of their intervals), and the rest, the **overhead** of the search
itself (sampler, database, process start-up).
"""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import optuna

from flysearch.errors import FlysearchError
from flysearch.evaluators import measurement_from_json, retime_finalists
from flysearch.samplers import SearchContext, make_sampler
from flysearch.study._claims import ClaimStore
from flysearch.study._loop import run_loop
from flysearch.study._spec import LiveSettings, StudySpec
from flysearch.study._sqlite import tune_sqlite
from flysearch.study._storage_template import open_shared_storage
from flysearch.study._study import open_study
from flysearch.study.live._pipeline import FINALISTS_ATTR, Pipeline, ask_device, recover, start_pipeline
from flysearch.study.live._report import LiveReport, WorkerLog
from flysearch.tables import Outcome, TableStore

if TYPE_CHECKING:
    from flysearch.evaluators import CompilePipeline, LiveBackend
    from flysearch.space import ArchProfile, Shape, Space

__all__ = ["run_live_study"]


def run_live_study(
    study_name: str,
    space: Space,
    backend: LiveBackend,
    settings: StudySpec,
    *,
    shape: Shape | None = None,
    arch: ArchProfile | None = None,
    problem: dict[str, Any] | None = None,
    prior: Any = None,
    progress: Callable[[int, int], None] | None = None,
    pipeline: CompilePipeline | None = None,
) -> LiveReport:
    """Run (or resume, or join) a live study as one worker; see the module docstring.

    Args:
        study_name: The study; workers that give the same name (and storage) share it.
        space: The space searched, pruned for (*shape*, *arch*) before anything is compiled.
        backend: What compiles and times (:mod:`flysearch.evaluators`).
        settings: Sampler, budget (unique compiles, shared by all workers), seed, encoding; the
            database URL the workers share (``storage``: ``sqlite:///...``,
            ``postgresql://...``), the table database the measurements land in (``db``), and
            pool size, pipeline depth, GPU and finalists (``live``).
        problem: The problem sizes the cost model sees (defaults to the shape's).
        prior: A trained cost model for the ``costmodel`` sampler, or a function that loads one
            (called once the pools are starting, so that loading overlaps their start-up).
        progress: Called as ``progress(compiles, budget)`` after each trial.
        pipeline: A compile pool and a timer already started for an equivalent backend
            (:func:`~flysearch.study.live._pipeline.start_pipeline`, idle), to run this study on
            instead of starting its own: the caller keeps it (open) for its next study and closes it.

    Raises:
        EmptySpaceError: the constraints leave no config.
        FlysearchError: the storage is not a database URL, the timer cannot start, or *pipeline*
            is not idle.
    """
    live, url, db = settings.live, settings.storage, settings.db
    if "://" not in url:
        raise FlysearchError(f"A live study needs a database URL its workers share, not {url!r}.")
    log = WorkerLog(study_name, "", t0=time.monotonic(), started_at=time.time())
    lap = _Laps(log.setup_parts)
    own = pipeline is None
    if pipeline is None:
        pipeline = start_pipeline(backend, live)
    elif pipeline.pending:
        raise FlysearchError("The pools given to a live study must be idle.")
    else:
        ask_device(pipeline, backend)
    lap("pools")
    try:
        enumeration = space.enumerate(shape, arch)
        lap("enumerate")
        runner = _setup(study_name, space, backend, settings, enumeration, shape, arch, url, db, live,
                        problem, prior, pipeline, lap, log)
    except BaseException:
        if own:
            pipeline.close(grace_s=0.0)
        raise
    log.worker, log.n_feasible = runner.claims.worker, len(enumeration.feasible)
    claims, store = runner.claims, runner.store
    try:
        recover(runner)
        lap("recover")
        start = time.monotonic()
        log.stopped = run_loop(runner.trials, space, runner.context, runner, budget=settings.budget,
                               max_idle=settings.max_idle, progress=progress).stopped
        log.loop_s = time.monotonic() - start - runner.blocked_s
        log.loop_parts["ask"] = log.loop_parts.get("ask", 0.0) + runner.trials.ask_s
        runner.sample()
        log.pipeline_mean = runner.pipeline_means()
        runner.save()
        if own:
            pipeline.compiler.close(grace_s=0.0, wait=False)  # nothing left to compile; the finalists time
        if live.finalists > 0:
            log.finalists = _finalists(runner)
    finally:
        if own:
            runner.close()
        log.end = time.monotonic()
        claims_counts = claims.counts()
        claims.close()
        store.close()
    log.served_workers = pipeline.compiler.served + pipeline.timer.served
    return LiveReport.of(log, runner.durable, claims_counts)


class _Laps:
    """Seconds spent in each step of a study's set-up, added to *parts*: ``lap(name)`` ends the
    step *name*."""

    def __init__(self, parts: dict[str, float] | None = None) -> None:
        self.parts: dict[str, float] = {} if parts is None else parts
        self._last = time.monotonic()

    def __call__(self, name: str) -> None:
        now = time.monotonic()
        self.parts[name] = self.parts.get(name, 0.0) + now - self._last
        self._last = now


def _setup(study_name: str, space: Space, backend: LiveBackend, settings: StudySpec,
           enumeration: Any, shape: Shape | None, arch: ArchProfile | None, url: str, db: str,
           live: LiveSettings, problem: dict[str, Any] | None, prior: Any, pipeline: CompilePipeline,
           lap: _Laps, log: WorkerLog) -> Pipeline:
    """Everything a worker opens before its loop, while its pools start up.

    The sampler is made in a thread while this one opens the databases: a cost model's scoring
    (scikit-learn's, outside the GIL) overlaps the database work (laps ``prior`` and ``sampler``
    are the thread's own seconds; ``sampler_wait`` what the databases left to wait for)."""
    context = SearchContext(space, settings.encoding, enumeration.shuffled(settings.seed), shape, arch,
                            problem)
    # Workers of one study draw from different random streams (the grid keeps one order).
    seed = settings.seed if settings.seed is None or not live.worker_index else (
        settings.seed * 7919 + live.worker_index)
    sampler_laps = _Laps()

    def make() -> optuna.samplers.BaseSampler:
        loaded = prior() if callable(prior) else prior
        sampler_laps("prior")
        made = make_sampler(settings.sampler, seed=seed, context=context, prior=loaded, batch=True,
                            worker=live.worker_index, options=settings.sampler_options)
        sampler_laps("sampler")
        return made

    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="flysearch-sampler") as making:
        sampler_future = making.submit(make)  # leaving the block waits for it, whatever is raised
        durable, claims, store = _open_databases(study_name, space, url, db, settings, live, lap)
        try:
            sampler = sampler_future.result()
        except BaseException:  # a missing or malformed prior: nothing is left open
            claims.close()
            store.close()
            raise
        lap("sampler_wait")
    lap.parts.update(sampler_laps.parts)
    study = optuna.create_study(storage=optuna.storages.InMemoryStorage(), sampler=sampler,
                                direction="minimize", study_name=study_name)
    lap("study")
    return Pipeline(study, durable, space, backend, settings, live, claims, store, context,
                    len(enumeration.feasible), pipeline, log)


def _open_databases(study_name: str, space: Space, url: str, db: str, settings: StudySpec,
                    live: LiveSettings, lap: _Laps) -> tuple[optuna.Study, ClaimStore, TableStore]:
    """The shared study, its claims and the table store this worker writes to."""
    storage_obj = open_shared_storage(url)
    if isinstance(storage_obj, optuna.storages.RDBStorage):
        tune_sqlite(storage_obj.engine, immediate=True)
    lap("storage")
    # The shared study (in the database) holds every finished trial; the sampler works on a copy
    # in memory, so that asking costs no database round trips (a trial is one transaction, when it
    # is finished), and other workers' trials are brought in as they land.
    durable = open_study(study_name, storage_obj, settings, optuna.samplers.RandomSampler(), space=space)
    lap("study")
    claims = ClaimStore(url, study_name, gpu=live.gpu or "", lease_s=live.lease_s,
                        max_attempts=live.max_attempts)
    lap("claims")
    store = TableStore(db)
    store.use_wal()
    lap("tables")
    return durable, claims, store


def _finalists(r: Pipeline) -> dict[str, Any] | None:
    """Re-time the study's top configs, if this worker finished last; store and return the report."""
    rows = r.claims.rows()
    if any(not row.finished for row in rows):
        return None  # another worker is still measuring; the last one to finish re-times
    measured = {row.key: measurement_from_json(row.result) for row in rows if row.result}
    ok = [row for row in rows if row.key in measured and measured[row.key].outcome is Outcome.OK
          and measured[row.key].time_ms]
    # One lock per state of the study: a study resumed with a larger budget re-times again.
    if len(ok) < 2 or not r.claims.try_lock(f"finalists@{len(rows)}"):
        return r.durable.user_attrs.get(FINALISTS_ATTR)
    ok.sort(key=lambda row: (measured[row.key].time_ms, row.key))
    top = ok[: r.live.finalists]
    configs = {row.key: r.space.decode(row.params, r.s.encoding) for row in top}

    def time_one(key: str) -> float | None:
        res, _ = r.pipe.time_alone(("final", key), r.backend.time_payload(configs[key], r.shape, None))
        r.log.timer_intervals.append(r._interval(res))
        if not res.ok or res.value.outcome is not Outcome.OK:
            return None
        return float(res.value.time_ms)

    search = {row.key: float(measured[row.key].time_ms) for row in top}  # type: ignore[arg-type]
    try:
        report = retime_finalists(list(configs), time_one, rounds=r.live.rounds, seed=r.s.seed,
                        noise_floor=r.live.noise_floor, search_ms=search)
    except ValueError:
        return None
    doc = report.as_dict()
    r.durable.set_user_attr(FINALISTS_ATTR, doc)
    return doc
