"""One live worker's pipeline: the study loop's evaluator that takes trials a batch at a time.

:class:`Pipeline` claims each config it is handed, compiles it in a pool, times it on the GPU,
stores the measurement and finishes its trial through :class:`~flysearch.study._trials.Trials`;
it holds the worker's state (trials in flight, compiled configs waiting for the GPU, trials
waiting on another worker's claim). :func:`recover` loads a study a killed worker left behind.
The loop itself is :func:`flysearch.study._loop.run_loop`, the same as a replayed study's;
:mod:`flysearch.study.live._worker` documents the design.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import json
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import TrialState

from flysearch.errors import FlysearchError
from flysearch.evaluators import (
    CompilePipeline,
    CompileResult,
    Measurement,
    TaskResult,
    TimerInfo,
    WorkerPool,
    compile_worker_init,
    measurement_from_json,
    measurement_json,
)
from flysearch.samplers import SearchContext
from flysearch.space import device_label
from flysearch.study._claims import ClaimRow, ClaimStore
from flysearch.study._loop import Submitted
from flysearch.study._spec import LiveSettings, StudySpec
from flysearch.study._trial_writer import add_finished_trial, add_finished_trials
from flysearch.study._trials import RECORD_ATTR, TrialRecord, Trials
from flysearch.study.live._report import WorkerLog
from flysearch.tables import Outcome, Row, TableMeta, TableStore

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial

    from flysearch.evaluators import LiveBackend
    from flysearch.space import Config, Space

__all__ = ["FINALISTS_ATTR", "Pipeline", "ask_device", "compile_initializer", "pools_key", "recover",
           "start_pipeline"]

_WORKER = "flysearch_worker"
_PULL_MARGIN_S = 10.0
FINALISTS_ATTR = "flysearch_finalists"  # the study attribute holding the re-timed finalists


@contextlib.contextmanager
def _spending(log: WorkerLog, part: str) -> Iterator[None]:
    """Add the seconds the block takes to ``log.loop_parts[part]``."""
    start = time.monotonic()
    try:
        yield
    finally:
        log.loop_parts[part] = log.loop_parts.get(part, 0.0) + time.monotonic() - start


def _spent(part: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Add the wrapped :class:`Pipeline` method's seconds to ``log.loop_parts[part]``."""

    def wrap(method: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(method)
        def timed(self: Pipeline, *args: Any, **kwargs: Any) -> Any:
            with _spending(self.log, part):
                return method(self, *args, **kwargs)

        return timed

    return wrap


@dataclass
class _Item:
    trial: optuna.trial.Trial
    config: Config
    claim: ClaimRow
    compiled: CompileResult | None = None


def start_pipeline(backend: LiveBackend, live: LiveSettings, *, ask: bool = True) -> CompilePipeline:
    """Start a worker's compile pool and its timer (which is asked for its device at once, unless
    not *ask*), so that their processes start up while the study is being set up."""
    env = dict(backend.env)
    # The timer holds the next compiled configs in its pipe (LiveSettings.timer_queue), so the GPU
    # goes from one timing to the next without waiting for the study loop (busy with the sampler or
    # the database) to read the answer. It starts first: its start-up (the framework's imports, the
    # GPU's context) is the longest.
    timer = WorkerPool(backend.timer_fn, workers=1, timeout_s=backend.launch_timeout_s,
                       env={**env, **backend.timer_env}, prefetch=max(1, live.timer_queue - 1),
                       server=live.server)
    # A compile process holds its next config in its pipe too (see LiveSettings.in_flight). Its
    # initializer lives in a light module: unpickling it must not import the study's machinery.
    # (A pool starts no process before it is used or started.)
    compiler = WorkerPool(backend.compile_fn, workers=live.workers(), timeout_s=backend.compile_timeout_s,
                          env=env, initializer=compile_initializer(backend), prefetch=1, server=live.server)
    pipe = CompilePipeline(compiler, timer)
    if ask:
        ask_device(pipe, backend)
    else:
        timer.start()
    compiler.start()
    return pipe


def compile_initializer(backend: LiveBackend) -> Callable[[], None]:
    """What a compile process of *backend* runs once before its first compile (its warm-up)."""
    return functools.partial(compile_worker_init, backend.warmup)


def ask_device(pipe: CompilePipeline, backend: LiveBackend) -> None:
    """Ask the timer for its device (a study's first task; the answer marks the GPU ready)."""
    pipe.time("info", backend.info_payload)
    pipe.dispatch()  # not wait(): a warm timer may answer at once, and the loop reads the answer


def pools_key(backend: LiveBackend, live: LiveSettings) -> tuple[Any, ...]:
    """What a compile pool and a timer started for *backend* run: studies whose backends have the
    same key can share them (the same task functions, environments, timeouts and pool size)."""
    return (backend.compile_fn, backend.timer_fn, backend.warmup, tuple(sorted(backend.env.items())),
            tuple(sorted(backend.timer_env.items())), backend.compile_timeout_s, backend.launch_timeout_s,
            live.workers(), live.timer_queue)


class Pipeline:
    """One worker's pipeline state."""

    def __init__(self, study: optuna.Study, durable: optuna.Study, space: Space, backend: LiveBackend,
                 settings: StudySpec, live: LiveSettings, claims: ClaimStore, store: TableStore,
                 context: SearchContext, n_feasible: int, pipe: CompilePipeline, log: WorkerLog) -> None:
        self.study, self.durable = study, durable
        self.log = log  # what this worker observes, for its report
        self.space, self.backend, self.s, self.live = space, backend, settings, live
        self.placeholders: dict[str, int] = {}
        self.last_pull = 0.0
        self.pulled_to = 0.0  # finished_at of the newest claim pulled
        self.claims, self.store, self.context = claims, store, context
        self.shape, self.arch = context.shape, context.arch
        self.target = min(settings.budget, n_feasible)
        self.trials = Trials(study, settings.sampler, attrs={_WORKER: claims.worker}, on_told=self._told)
        self.history = self.trials.history
        self._depth = 0  # trials to keep in flight in this pass (in_flight_limit)
        self.unsaved: list[FrozenTrial] = []
        self.items: dict[str, _Item] = {}
        self.ready: collections.deque[str] = collections.deque()
        self.timing: set[str] = set()  # configs sent to the timer (one timing, the others queued)
        self.waiting: dict[str, list[optuna.trial.Trial]] = {}
        self.last_wait_check = 0.0
        self.meta: TableMeta | None = None
        self.rows: list[Row] = []
        # Written at the end of each loop pass, one transaction each (see flush).
        self.compiled_batch: dict[str, dict[str, Any]] = {}  # key -> CompileResult.to_json()
        self.finished_batch: list[tuple[_Item, Measurement]] = []
        # All this worker compiles and times goes through it (it may have run earlier studies).
        self.pipe = pipe
        self._blocked_before = pipe.blocked_s
        self.mean_s: dict[str, float] = {}  # running means of a compile's and a timing's seconds
        self._state: tuple[float, dict[str, int]] | None = None  # last pipeline sample
        self._sums: dict[str, float] = {}  # time-weighted sums of the samples, and their seconds

    def close(self) -> None:
        self.pipe.close(grace_s=0.0, wait=False)  # idle workers hold nothing to lose

    @property
    def blocked_s(self) -> float:
        """Seconds the loop waited for a compile or a timing."""
        return self.pipe.blocked_s - self._blocked_before

    @property
    def in_flight(self) -> int:
        """Trials in flight: compiling, compiled, timing, or waiting on another worker's claim."""
        return len(self.items) + sum(len(v) for v in self.waiting.values())

    def in_flight_limit(self) -> int:
        """How many trials to keep in flight: enough to keep the slower stage busy, and no more.

        By Little's law the pipeline holds its throughput times a config's time in it. Compiles
        bound the throughput at ``workers / compile_s``, the GPU at ``1 / timing_s``. While
        compiles are the bottleneck this is about one trial per compile process, plus half as
        many queued behind them (:meth:`LiveSettings.in_flight`). While the GPU is, it is a
        few: configs compiled far ahead of the GPU only wait, the sampler proposes with fewer
        results missing, and when the budget is spent no worker is left with a long queue to
        time while the others stop.
        """
        depth = self.live.in_flight()
        compile_s, timing_s = self.mean_s.get("compile"), self.mean_s.get("timing")
        if not compile_s or not timing_s:
            return depth
        workers = self.live.workers()
        if workers / compile_s <= 1.0 / timing_s:
            return depth  # compile-bound
        return max(4, min(depth, math.ceil((compile_s + timing_s) / timing_s) + 3))

    def _observe(self, stage: str, interval: tuple[float, float]) -> None:
        """Fold one task's seconds into the running mean of *stage* (the last ~20 tasks)."""
        seconds = interval[1] - interval[0]
        mean = self.mean_s.get(stage)
        self.mean_s[stage] = seconds if mean is None else mean + (seconds - mean) / 20.0

    # -- trials -----------------------------------------------------------------------------------

    def _told(self, number: int) -> None:
        """Queue a trial the loop or this pipeline finished for the shared study: a trial is
        finished once it is there. A measurement is written at once (:meth:`flush`); trials
        answered without a compile (duplicates, rejections) go with it or at the end of the pass,
        several in one transaction (a worker killed before then loses no measurement: a rerun
        asks again)."""
        self.unsaved.append(self.study.get_trials(deepcopy=False)[number])

    @_spent("save")
    def save(self) -> None:
        """Write the queued finished trials to the shared study, in one transaction."""
        if self.unsaved:
            with self.claims.writing() as c:
                add_finished_trials(self.durable, self.unsaved, connection=c)
            self.unsaved.clear()

    def _duplicate(self, trial: optuna.trial.Trial, key: str) -> None:
        self.trials.finish(trial, self.trials.duplicate(key))

    def _learn(self, row: ClaimRow) -> None:
        """Fold another worker's finished claim into the history (so it answers duplicates)."""
        if row.key in self.history.by_key or row.result is None:
            return
        self.history.add(row.trial if row.trial is not None else -1,
                         _record_of(row, measurement_from_json(row.result)))

    # -- the study loop's evaluator (flysearch.study._loop.TrialEvaluator) ------------------------

    @contextlib.contextmanager
    def turn(self) -> Iterator[None]:
        """A pass of the loop: show the sampler other workers' measurements first; write this
        pass's finished trials, feed the GPU and look at trials waiting on claims after."""
        self.claims.heartbeat()
        self.pull()
        self._depth = self.in_flight_limit()
        yield
        self.save()
        self.dispatch_timer()
        if self.waiting and time.monotonic() - self.last_wait_check > 0.5:
            self.check_waiting()
            self.last_wait_check = time.monotonic()

    def wants_more(self) -> bool:
        return self.in_flight < self._depth

    def between(self) -> None:
        """Between suggestions, hand finished compiles to the GPU: a sampler that needs many
        suggestions per compile must not leave the GPU (the scarce resource) waiting."""
        if len(self.timing) < self.live.timer_queue and (self.ready or self.pipe.compiler.running):
            self.poll(0.0)
            self.dispatch_timer()

    def settled(self) -> bool:
        return not self.items and not self.waiting and not self.timing and self.meta is not None

    def wait(self) -> None:
        self.poll(0.25 if self.waiting else 2.0)

    @_spent("ask")
    def submit(self, trial: optuna.trial.Trial, config: Config) -> Submitted:
        """Claim *trial*'s config and send it to be compiled, or queue the trial behind the
        config's claim (see :data:`~flysearch.study._loop.Submitted`)."""
        key = config.key
        if key in self.items:
            self.waiting.setdefault(key, []).append(trial)
            return "waiting"
        with _spending(self.log, "claim"):
            claim = self.claims.claim(key, budget=self.target, params=dict(trial.params), trial=trial.number)
        if claim.status in ("granted", "compiled"):
            assert claim.row is not None
            self._start(trial, config, claim.row)
            return "compile"
        if claim.status in ("done", "failed"):
            assert claim.row is not None
            if self._gave_up(claim.row, trial, config):
                return "compile"
            self._learn(claim.row)
            self._duplicate(trial, key)
            return "answered"
        if claim.status == "busy":
            self.waiting.setdefault(key, []).append(trial)
            return "waiting"
        self.study.tell(trial.number, state=TrialState.FAIL)  # the budget is spent: nothing to do
        return "full"

    def _start(self, trial: optuna.trial.Trial, config: Config, row: ClaimRow) -> None:
        """Take on *trial* under this worker's claim *row*: time its config's build where the
        claim holds one (a dead worker compiled it), else send the config to be compiled."""
        item = self.items[config.key] = _Item(trial, config, row)
        if row.state == "compiled" and row.result is not None:
            item.compiled = CompileResult.from_json(row.result)
            self.ready.append(config.key)
            return
        self.pipe.compile(config.key, self.backend.compile_payload(config, self.shape))
        if self.log.first_sent is None:
            self.log.first_sent = time.monotonic()
        # Sent at once: the loop may ask for many more trials (a claim each) before it waits.
        self.pipe.dispatch()

    def _gave_up(self, row: ClaimRow, trial: optuna.trial.Trial, config: Config) -> bool:
        """If this worker's claim just recorded the config as failed (it outlived
        ``max_attempts`` workers), finish *trial* as its compile: record, table row, tell."""
        if row.worker != self.claims.worker or row.trial != trial.number or row.result is None:
            return False
        measured = measurement_from_json(row.result)
        self._add_rows([Row.from_measurement(config.key, config.as_dict(), measured)])
        self.history.compiles = max(self.history.compiles, row.compile_index)
        record = _record_of(row, measured)
        record.compile_index, record.cost_s = row.compile_index, self.history.cost_s
        self.trials.finish(trial, record)
        self.save()
        return True

    # -- results ----------------------------------------------------------------------------------

    @staticmethod
    def _interval(res: TaskResult) -> tuple[float, float]:
        """When the task ran in its pool process (as that process measured it), or, for a process
        that died, from the task's start to now."""
        if res.ran is not None:
            return res.ran
        now = time.monotonic()
        return now - res.elapsed_s, now

    def on_compiled(self, res: TaskResult, compiled: CompileResult) -> None:
        self.log.compile_intervals.append(self._interval(res))
        self._observe("compile", self.log.compile_intervals[-1])
        item = self.items[res.task_id]
        self.log.compiled += 1
        if not compiled.ok:
            self.finish(item, compiled.failure())
            return
        item.compiled = compiled
        self.compiled_batch[item.config.key] = compiled.to_json()
        self.ready.append(item.config.key)

    def on_timed(self, res: TaskResult) -> None:
        if res.task_id == "info":
            # Starting the GPU (its process, the framework's imports, the device's context) is
            # start-up, not timing: it stays out of the busy time.
            self.log.timer_ready = self._interval(res)[1]
            self.on_info(res)
            return
        self.log.timer_intervals.append(self._interval(res))
        item = self.items[res.task_id]
        self.timing.discard(res.task_id)
        self.log.timed += 1
        self._observe("timing", self.log.timer_intervals[-1])
        assert item.compiled is not None  # only built configs are timed
        self.finish(item, item.compiled.timed(res))

    def on_info(self, res: TaskResult) -> None:
        if not res.ok or not isinstance(res.value, TimerInfo):
            detail = res.detail if not res.ok else str(res.value)[:200]
            raise FlysearchError(
                f"The {self.backend.name} timer could not start ({res.status}: {detail}); a live study "
                "needs the GPU its backend times on.")
        self.meta = self._table_meta(res.value)
        self._sync_table()

    def finish(self, item: _Item, result: Measurement) -> None:
        """Queue one measurement; :meth:`flush` stores it at the end of the loop's pass."""
        self.finished_batch.append((item, result))

    @_spent("flush")
    def flush(self) -> None:
        """Store what this pass measured: compiles finished (one transaction); measurements with
        their claims and trials (one transaction: a measurement is stored with its trial or not at
        all), then their table rows. A pass that had to wait long for the database finds more
        results to store at once, so the writes per config fall as contention grows.

        A claim another worker took over (it found this one dead: a heartbeat older than the
        lease, e.g. a host that stalled) is that worker's now: this worker's measurement of it is
        dropped, and its trial waits for the new owner's, like any trial of a busy claim.
        """
        if self.compiled_batch:
            self.claims.compiled_many(self.compiled_batch, lost_ok=True)  # lost ones: see below
            self.compiled_batch = {}
        if not self.finished_batch:
            return
        batch, self.finished_batch = self.finished_batch, []
        rows: list[Row] = []
        self._store(batch, rows)
        self.unsaved.clear()
        self._add_rows(rows)

    def _store(self, batch: list[tuple[_Item, Measurement]], rows: list[Row]) -> None:
        """Finish *batch*'s claims and write their trials in one transaction (see :meth:`flush`);
        the table rows of the measurements kept are appended to *rows*."""
        with self.claims.writing() as c:
            lost = set(self.claims.finish_many(
                [(item.config.key, measurement_json(result), result.outcome is not Outcome.OK)
                 for item, result in batch],
                conn=c, lost_ok=True))
            for item, result in batch:
                key = item.config.key
                del self.items[key]
                if key in lost:
                    self.waiting.setdefault(key, []).append(item.trial)
                    continue
                self.history.compiles = max(self.history.compiles, item.claim.compile_index)
                self.history.cost_s += result.cost_s
                record = _record_of(item.claim, result)
                record.compile_index = item.claim.compile_index
                record.cost_s = self.history.cost_s
                self.trials.finish(item.trial, record)
                for trial in self.waiting.pop(key, []):
                    self._duplicate(trial, key)
                rows.append(Row.from_measurement(item.config.key, item.config.as_dict(), result))
            add_finished_trials(self.durable, self.unsaved, connection=c)

    def _add_rows(self, rows: list[Row]) -> None:
        if self.meta is None:
            self.rows.extend(rows)
        elif rows:
            self.store.add_rows(self.meta, rows)

    def _table_meta(self, info: TimerInfo) -> TableMeta:
        device = device_label(info.device)
        shape = self.shape
        where = f"{shape.M}x{shape.N}x{shape.K}" if shape is not None else self.space.name
        name = self.live.table or f"live/{self.backend.kernel}/{device}/{where}"
        problem = dict(self.context.problem or {})
        notes = {"study": self.study.study_name, "sampler": self.s.sampler, "backend": self.backend.name}
        return TableMeta(name=name, kernel=self.backend.kernel, arch=self.arch.name if self.arch else "",
                         device=info.device, problem=problem, space=self.space.to_json(),
                         source=f"flysearch live study {self.study.study_name}",
                         versions=dict(info.versions), notes=json.dumps(notes, sort_keys=True))

    def _sync_table(self) -> None:
        """Write buffered rows, and the study's finished claims the table lacks (all workers')."""
        assert self.meta is not None
        have = self.store.done_keys(self.meta.name) if self.meta.name in self.store else set()
        rows = [r for r in self.rows if r.key not in have]
        have |= {r.key for r in rows}
        for claim in self.claims.rows(finished_only=True):
            if claim.key not in have and claim.result is not None:
                config = self.space.decode(claim.params, self.s.encoding)
                rows.append(Row.from_measurement(config.key, config.as_dict(),
                                                 measurement_from_json(claim.result)))
        self.store.add_rows(self.meta, rows)
        self.rows.clear()
        self.log.table, self.log.device = self.meta.name, self.meta.device

    @_spent("pull")
    def pull(self, *, every_s: float = 0.25) -> None:
        """Bring other workers' measurements into the sampler's study (and the history), and
        show it the configs they are evaluating now.

        Measurements come from the claims finished since the last pull (with a margin for clocks
        of other hosts and for commits that waited for a lock): one small query, instead of
        reading other workers' trials (their duplicates and rejections tell this sampler nothing).
        """
        now = time.monotonic()
        if now - self.last_pull < every_s:
            return
        self.last_pull = now
        rows = self.claims.finished_since(self.pulled_to - _PULL_MARGIN_S, others_only=True)
        for row in rows:
            self.pulled_to = max(self.pulled_to, row.finished_at or 0.0)
            if row.key not in self.history.by_key and row.result:
                self.study.add_trial(_trial_of(self, row))
        self._mirror_in_flight()

    def _mirror_in_flight(self) -> None:
        """Show the sampler the configs other workers are evaluating now, as RUNNING trials of its
        study (TPE's constant liar and the model-based samplers then propose something else);
        they are dropped (never written to the shared study) once those claims finish."""
        others = {r.key: r for r in self.claims.in_flight() if r.worker != self.claims.worker}
        for key, row in others.items():
            if key in self.placeholders or key in self.history.by_key or not row.params:
                continue
            self.study.add_trial(optuna.trial.create_trial(
                state=TrialState.RUNNING, params=dict(row.params),
                distributions={k: self.context.distributions[k] for k in row.params}))
            self.placeholders[key] = len(self.study.get_trials(deepcopy=False)) - 1
        for key in [k for k in self.placeholders if k not in others]:
            self.study.tell(self.placeholders.pop(key), state=TrialState.FAIL)

    def _import(self, t: FrozenTrial) -> None:
        record = TrialRecord.from_trial(t)
        if record is None or not t.params:
            return
        self.study.add_trial(t)
        if record.key not in self.history.by_key or record.duplicate_of is None:
            self.history.add(t.number, record)

    @_spent("check_waiting")
    def check_waiting(self) -> None:
        """Answer trials waiting on another worker's claim once it finished; take over a claim
        whose worker died."""
        for key in [k for k in self.waiting if k not in self.items]:
            trials = self.waiting[key]
            row = self.claims.get(key)
            if row is not None and row.finished:
                self._learn(row)
                del self.waiting[key]
                for trial in trials:
                    self._duplicate(trial, key)
                continue
            claim = self.claims.claim(key, budget=self.target, params=dict(trials[0].params),
                                      trial=trials[0].number)
            if claim.status in ("granted", "compiled"):
                assert claim.row is not None
                first = trials.pop(0)
                if not trials:
                    del self.waiting[key]
                self._start(first, self.space.decode(first.params, self.s.encoding), claim.row)
            elif claim.status in ("done", "failed"):
                assert claim.row is not None
                first = trials[0]
                if self._gave_up(claim.row, first, self.space.decode(first.params, self.s.encoding)):
                    trials.pop(0)
                    if not trials:
                        del self.waiting[key]
                    continue
                self._learn(claim.row)
                del self.waiting[key]
                for trial in trials:
                    self._duplicate(trial, key)

    def dispatch_timer(self) -> None:
        """Keep the timer fed: one config timing and up to ``timer_queue - 1`` queued behind it."""
        while len(self.timing) < self.live.timer_queue and self.ready and self.meta is not None:
            key = self.ready.popleft()
            item = self.items[key]
            payload = self.backend.time_payload(item.config, self.shape, self.history.best_ok_ms)
            self.pipe.time(key, payload)
            self.timing.add(key)

    def sample(self) -> None:
        """Add the pipeline's state since the last sample to time-weighted sums (their means are
        :meth:`pipeline_means`)."""
        now = time.monotonic()
        if self._state is not None:
            since, state = self._state
            sums = self._sums
            for key, value in state.items():
                sums[key] = sums.get(key, 0.0) + value * (now - since)
            sums["_s"] = sums.get("_s", 0.0) + now - since
        compiler = self.pipe.compiler
        self._state = (now, {
            "in_flight": self.in_flight,
            "compile_tasks": compiler.pending, "compile_procs_busy": compiler.busy_workers,
            "ready": len(self.ready), "timing": len(self.timing),
        })

    def pipeline_means(self) -> dict[str, float]:
        """Time-weighted means of the samples (see ``LiveReport.pipeline_mean``)."""
        sums = dict(self._sums)
        total = sums.pop("_s", 0.0)
        return {k: round(v / total, 2) for k, v in sums.items()} if total > 0 else {}

    def poll(self, timeout: float) -> None:
        """Block until a compile or a timing finishes (or *timeout* seconds), then handle it."""
        self.pipe.dispatch()
        self.sample()
        built, timed = self.pipe.wait(timeout)
        self.timing.difference_update(res.task_id for res in timed)
        for res, compiled in built:
            self.on_compiled(res, compiled)
        self.dispatch_timer()  # feed the GPU before storing what it measured
        for res in timed:
            self.on_timed(res)
        self.dispatch_timer()
        self.flush()


def _record_of(claim: ClaimRow, result: Measurement) -> TrialRecord:
    outcome = Outcome(result.outcome)
    return TrialRecord(
        claim.key, outcome.value, result.time_ms if outcome is Outcome.OK else None,
        rejected_by=result.detail if outcome is Outcome.REJECTED else None,
        compile_s=result.compile_s, detail=result.detail,
    )


def _trial_of(live: Pipeline, row: ClaimRow) -> FrozenTrial:
    """The finished trial of a claim's measurement (learnt into the history)."""
    assert row.result is not None
    record = _record_of(row, measurement_from_json(row.result))
    record.compile_index = row.compile_index
    live._learn(row)
    value = live.history.value(record)
    done = not math.isnan(value)
    return optuna.trial.create_trial(
        params=dict(row.params), distributions={k: live.context.distributions[k] for k in row.params},
        value=value if done else None, state=TrialState.COMPLETE if done else TrialState.FAIL,
        user_attrs={RECORD_ATTR: record.as_dict(), _WORKER: row.worker},
    )


def recover(live: Pipeline) -> None:
    """Load the shared study's finished trials into the sampler's study and the history; give a
    trial to every measurement a killed worker stored but did not write as a trial; queue the
    configs whose claims dead workers left unfinished."""
    claims = live.claims
    known = {w.worker: w for w in claims.workers()}
    have: set[int] = set()
    for t in live.durable.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL)):
        record = TrialRecord.from_trial(t)
        if record is not None and record.compile_index is not None and record.duplicate_of is None:
            have.add(record.compile_index)
        live._import(t)
    finished = claims.rows(finished_only=True)
    for row in finished:
        if row.compile_index in have or row.result is None or (
            row.worker != claims.worker and claims.alive(row.worker, known=known)
        ):
            continue  # has its trial, or its live worker is about to write it
        trial = _trial_of(live, row)
        add_finished_trial(live.durable, trial)
        live.study.add_trial(trial)
    for row in claims.stale():
        live.study.enqueue_trial(row.params, skip_if_exists=False)
    for row in finished:
        live._learn(row)
    live.history.compiles = max(live.history.compiles, max((r.compile_index for r in finished), default=0))

