"""Launch live studies: one worker per GPU, the first in this process and each other one in a
process of its own.

A live study is a :class:`~flysearch.study.StudySpec` (plain data: it crosses process boundaries)
whose evaluator is a live one (:func:`flysearch.evaluators.evaluator_names`): ``triton`` (a GEMM shape
and a CUDA arch), ``flydsl`` (a GEMM shape, an AMD arch and the space's kernel factory),
``simulated`` (a ground-truth table played back in real time), or one registered with
:func:`flysearch.evaluators.register_evaluator`.
:func:`run_live` runs one or several (one per shape); :func:`run_workers` starts one worker per GPU;
all of them join the same study through its database, so the same job can also be started by hand on
several hosts against one PostgreSQL URL. :func:`run_shapes` deals several studies to the GPUs, and
each GPU runs its share one after another on pools started once (:func:`run_sequence`), the GPUs at
once (:func:`run_jobs`).

Example (one H200, three-quarters of the CPU cores compiling)::

    from flysearch.study import StudySpec, run_live
    job = StudySpec(name="tpe-4096", evaluator="triton", sampler="tpe", budget=64,
                    shape="4096x4096x4096", storage="sqlite:///live.db")
    (report,) = run_live(job)
"""

from __future__ import annotations

import functools
import multiprocessing as mp
import os
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from queue import Empty
from typing import TYPE_CHECKING, Any

from flysearch._lifeline import Lifeline
from flysearch.errors import FlysearchError, InputFormatError
from flysearch.evaluators import evaluator_entry, evaluator_names, main_module_hidden
from flysearch.study._launch import evaluator_setup, searched
from flysearch.study._spec import LiveSettings, StudySpec
from flysearch.study._storage_template import prepare_storage
from flysearch.study.live._report import LiveReport
from flysearch.study.live._worker import run_live_study
from flysearch.tables import DEFAULT_DB

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from flysearch.evaluators import CompilePipeline, LiveBackend, WorkerSpec

__all__ = [
    "backend_to_serve",
    "prepare_live",
    "run_jobs",
    "run_live",
    "run_on_server",
    "run_sequence",
    "run_shapes",
    "run_worker",
    "run_workers",
    "served_specs",
    "specs_to_serve",
]


def run_live(spec: StudySpec | Sequence[StudySpec], settings: LiveSettings | None = None, *,
             progress: Callable[[int, int], None] | None = None) -> list[LiveReport]:
    """Run a live study, or several: compile in a pool of processes, time on one or more GPUs.

    *spec* is one study, or one per shape (or per played-back table) when it lists several,
    comma-separated (:meth:`StudySpec.live_studies`), or a sequence of studies. *settings* (by
    default each spec's own ``live``) say how the workers run: on each GPU of ``settings.gpus``
    (default: the one this process sees) one worker, and, given several studies, the studies are
    dealt to the GPUs and each GPU runs its share one after another on pools started once. With
    ``settings.server`` (``""``: the default socket) the studies run in a warm study process of that
    worker server (``flysearch serve``), here when it has none. *progress* is called as
    ``progress(compiles, budget)`` by the first GPU's studies, run here.

    Returns:
        One report per worker (one study on several GPUs) or per study (several studies), in the
        order of the studies.

    Raises:
        FlysearchError: a spec is malformed, or a worker failed (its error, with its GPU).
    """
    jobs = spec.live_studies() if isinstance(spec, StudySpec) else list(spec)
    if settings is not None:
        jobs = [replace(job, live=settings) for job in jobs]
    if not jobs:
        return []
    live = jobs[0].live
    if live.server == "":
        from flysearch.evaluators import default_socket

        live = replace(live, server=default_socket())
        jobs = [replace(job, live=replace(job.live, server=live.server)) for job in jobs]
    gpus = list(live.gpus) or None
    if live.server:
        reports = run_on_server(live.server, jobs, gpus)
        if reports is not None:
            return reports
    return run_workers(jobs[0], gpus, progress) if len(jobs) == 1 else run_shapes(jobs, gpus, progress)


def specs_to_serve(evaluator: str, *, arch: str | None = None, gpus: Sequence[str] = (),
                   table: str | None = None, db: str = DEFAULT_DB, compile_workers: int | None = None,
                   timers: int = 1, priors: Sequence[str] = ()) -> list[WorkerSpec]:
    """What a worker server (``flysearch serve``) keeps warm for live studies of *evaluator*: GPU
    timers (*timers* for each of *gpus*, or for the GPU this process sees), compile processes
    (*compile_workers*, default as a study's: :meth:`LiveSettings.workers`) and study processes
    (loading the cost-model files *priors*), for the backend a study of *evaluator* uses (one that
    plays a table back: *table* from *db*); see :func:`served_specs`.

    Raises:
        FlysearchError: *evaluator* is not a live one, or needs a table not given.
    """
    backend = backend_to_serve(evaluator, arch=arch, gpu=gpus[0] if gpus else None, table=table, db=db)
    workers = LiveSettings(compile_workers=compile_workers).workers() if compile_workers != 0 else 0
    return served_specs(backend, workers, timers=timers, gpus=gpus if len(gpus) > 1 else (), priors=priors)



def run_worker(spec: StudySpec, gpu: str | None = None,
               progress: Callable[[int, int], None] | None = None) -> LiveReport:
    """Run the live study *spec* as one worker, timing on *gpu* (a compile cache made for it is
    removed at the end; name ``spec.live.cache_dir`` to keep the binaries)."""
    made = None if spec.live.cache_dir else tempfile.mkdtemp(prefix=_CACHE_PREFIX)
    try:
        backend, kwargs = prepare_live(_with_cache(spec, made), gpu)
        return run_live_study(backend=backend, progress=progress, **kwargs)
    finally:
        _remove_cache(made)


def prepare_live(spec: StudySpec, gpu: str | None = None) -> tuple[LiveBackend, dict[str, Any]]:
    """The backend that compiles and times *spec* on *gpu*, and the other arguments of
    :func:`~flysearch.study.live._worker.run_live_study` for it."""
    spec.validate()
    if not evaluator_entry(spec.evaluator).live:
        raise InputFormatError(f"A live study needs a live evaluator ({_live_names()}); {spec.evaluator} "
                               "answers in process.")
    spec, setup = evaluator_setup(spec, gpu)
    assert setup.backend is not None, f"the {spec.evaluator} evaluator built no live backend"
    live = replace(spec.live, gpu=gpu)
    if setup.table is not None and live.table is None:  # a table played back lands beside it
        live = replace(live, table=f"live/{setup.table.name}")
    settings = replace(searched(spec, setup), live=live)
    prior = functools.partial(_load_prior, spec.prior) if spec.prior else None
    return setup.backend, {"study_name": spec.study_name, "space": setup.space, "settings": settings,
                           "shape": setup.shape, "arch": setup.arch, "problem": setup.problem, "prior": prior}


def _live_names() -> str:
    return ", ".join(evaluator_names(live=True))


def backend_to_serve(evaluator: str, *, arch: str | None = None, space: str | None = None,
                     gpu: str | None = None, table: str | None = None, db: str = DEFAULT_DB) -> LiveBackend:
    """The backend whose workers a worker server (``flysearch serve``) keeps warm: the one a live
    study of *evaluator* on *gpu* uses (for one that plays a table back, *table* from *db*)."""
    entry = evaluator_entry(evaluator)
    if not entry.live:
        raise InputFormatError(f"A worker server serves a live evaluator ({_live_names()}); {evaluator} "
                               "answers in process.")
    if entry.target == "table" and not table:
        raise InputFormatError(f"A {evaluator} worker server needs --table (the table it plays back).")
    job = StudySpec(evaluator=evaluator, arch=arch, space=space, table=table, db=db)
    _, setup = evaluator_setup(job, gpu)
    assert setup.backend is not None, f"the {evaluator} evaluator built no live backend"
    return setup.backend


def run_sequence(jobs: Sequence[StudySpec], gpu: str | None = None,
                 progress: Callable[[int, int], None] | None = None) -> list[LiveReport]:
    """Run *jobs* one after another in this process, as one worker timing on *gpu*, on one compile
    pool and one GPU timer while their backends allow it (studies of one kernel on several shapes).

    A live study's GPU process starts up once (importing torch and creating the device's context
    took 3.2-5.5 s on the H200 hosts): each study after the first finds it, and the compile
    processes, ready. Jobs without a ``cache_dir`` share one compile cache, so that their compile
    processes match; it is removed at the end. *progress* is called for each study in turn.
    """
    from flysearch.study.live._pipeline import pools_key, start_pipeline

    if not jobs:
        return []
    cache = tempfile.mkdtemp(prefix=_CACHE_PREFIX) if any(not j.live.cache_dir for j in jobs) else None
    jobs = [_with_cache(j, cache) for j in jobs]
    reports: list[LiveReport] = []
    pipeline: CompilePipeline | None = None
    key: tuple[Any, ...] | None = None
    try:
        for job in jobs:
            backend, kwargs = prepare_live(job, gpu)
            live = kwargs["settings"].live
            needed = pools_key(backend, live)
            if pipeline is None or needed != key:
                if pipeline is not None:
                    pipeline.close(grace_s=0.0)
                # The study asks the timer for its device; its process starts up meanwhile.
                pipeline, key = start_pipeline(backend, live, ask=False), needed
            reports.append(run_live_study(backend=backend, progress=progress, pipeline=pipeline, **kwargs))
    finally:
        if pipeline is not None:
            pipeline.close(grace_s=0.0)
        _remove_cache(cache)
    return reports


_CACHE_PREFIX = "flysearch-cache-"


def _with_cache(spec: StudySpec, cache: str | None) -> StudySpec:
    """*spec* compiling into *cache* (a folder made for its run), unless it names its own."""
    if spec.live.cache_dir or not cache:
        return spec
    return replace(spec, live=replace(spec.live, cache_dir=cache))


def _remove_cache(path: str | None) -> None:
    """Remove a compile cache folder made for a run (its binaries are in no table)."""
    if path and os.path.basename(path).startswith(_CACHE_PREFIX):
        shutil.rmtree(path, ignore_errors=True)


def warm_study() -> None:
    """Bring a process up to where a live study starts at once (a worker server's ``study``
    spare): import the study's machinery (Optuna and its database layer, the samplers, the cost
    model), run the cost model once, and create a throwaway study database, claim table and table
    store."""
    import optuna

    import flysearch.costmodel
    import flysearch.samplers
    from flysearch.study._claims import ClaimStore
    from flysearch.study._storage_template import make_template
    from flysearch.study._study import open_storage
    from flysearch.tables import TableStore

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    # The cost model's first fit and prediction find the process's thread pools (once).
    flysearch.costmodel.CostModel(max_iter=1).fit([[0.0], [1.0]], [1.0, 2.0]).predict([[0.5]])
    template = make_template()  # a new SQLite study starts as a copy of it
    with tempfile.TemporaryDirectory(prefix="flysearch-warm-") as tmp:
        url = f"sqlite:///{tmp}/study.db"
        shutil.copyfile(template, f"{tmp}/study.db")
        open_storage(url)  # opening an existing study database, as a study does
        ClaimStore(url, "warm").close()
        TableStore(os.path.join(tmp, "tables.db")).close()


@dataclass(frozen=True)
class StudyTask:
    """A command's live studies, for a served ``study`` process: run *jobs* on *gpus* in *cwd*."""

    jobs: list[StudySpec]
    gpus: list[str] | None
    cwd: str


@dataclass(frozen=True)
class LoadPriors:
    """A served ``study`` process's warm-up task: load the cost-model files *priors*."""

    priors: list[str]


@dataclass(frozen=True)
class StudyAnswer:
    """What a served ``study`` process answers: the reports, or a user's mistake."""

    reports: list[LiveReport] = field(default_factory=list)
    error: str | None = None


def served_study(task: StudyTask | LoadPriors) -> StudyAnswer:
    """Run a command's live studies in a worker server's warm ``study`` process (see
    :func:`run_on_server`): their reports, or the message of a user's mistake.

    The server's warm-up task, :class:`LoadPriors`, loads the priors it serves instead, so that
    a study that names one of them finds it loaded (``flysearch serve --prior``)."""
    if isinstance(task, LoadPriors):
        for path in task.priors:
            _load_prior(path)
        return StudyAnswer()
    os.chdir(task.cwd)  # it ends with its command (a served worker ends with its client)
    jobs, gpus = task.jobs, task.gpus
    try:
        reports = run_workers(jobs[0], gpus) if len(jobs) == 1 else run_shapes(jobs, gpus)
    except FlysearchError as exc:
        return StudyAnswer(error=str(exc))
    return StudyAnswer(reports)


def run_on_server(server: str, jobs: Sequence[StudySpec],
                  gpus: list[str] | None = None) -> list[LiveReport] | None:
    """Run *jobs* (one study's workers on *gpus*, or one study per job as :func:`run_shapes` does)
    in a warm study process taken from the worker server at *server*, in this process's working
    directory and environment; ``None`` when the server has no such process (run them here).

    The study process has its study machinery imported and takes its GPU timer and compile
    processes from the same server, so a command's study starts without any start-up of its own.
    A study on several GPUs runs its other workers in more of the server's study processes, when
    it has them (:func:`run_jobs`).

    Raises:
        FlysearchError: a study failed, or the study process died.
    """
    run = _ServedRun.start(server, jobs, gpus)
    return None if run is None else run.result()


class _ServedRun:
    """Jobs running in a warm study process of a worker server (:func:`served_study`)."""

    def __init__(self, process: Any, conn: Any) -> None:
        self.process, self.conn = process, conn

    @classmethod
    def start(cls, server: str, jobs: Sequence[StudySpec], gpus: list[str] | None) -> _ServedRun | None:
        """Hand *jobs* to a study process of *server*; ``None`` when it has none."""
        from flysearch.evaluators import connect_worker

        served = connect_worker(server, served_study, warm_study, dict(os.environ))
        if served is None:
            return None
        run = cls(*served)
        try:
            run.conn.send((0, StudyTask(list(jobs), gpus, os.getcwd())))
        except OSError:
            run.conn.close()
            raise FlysearchError(f"The worker server's study process (pid {run.process.pid}) died.") from None
        return run

    def result(self) -> list[LiveReport]:
        """Wait for the reports. Interrupted, the study stops, unwinding (its pools closed, its
        transaction rolled back); a rerun resumes it.

        Raises:
            FlysearchError: the study failed, or its process died.
        """
        from multiprocessing.connection import wait

        died = f"The worker server's study process (pid {self.process.pid}) died."
        try:
            while not self.conn.poll():
                if self.process.sentinel in wait([self.conn, self.process.sentinel]) and not self.conn.poll():
                    raise FlysearchError(died)
            _task, status, value, detail, _retire, _ran = self.conn.recv()
        except (EOFError, OSError):
            raise FlysearchError(died) from None
        except FlysearchError:
            raise
        except BaseException:
            self.stop()
            raise
        finally:
            self.conn.close()
        if status != "ok":
            raise FlysearchError(f"The study failed on the worker server: {detail}")
        if value.error is not None:
            raise FlysearchError(value.error)
        return value.reports

    def stop(self) -> None:
        """Stop the study (SIGTERM: it unwinds), killing it after 10 s."""
        self.process.terminate()
        self.process.join(10.0)
        if self.process.is_alive():
            self.process.kill()


def _start_served(job: StudySpec | Sequence[StudySpec], gpu: str, queue: Any,
                  index: int) -> _ServedRun | None:
    """Start *job* (or a sequence) on *gpu* in a study process of the job's worker server, if it
    names one that has a spare; a thread puts its result in *queue* as a spawned worker would."""
    import threading

    first = job if isinstance(job, StudySpec) else job[0]
    if not first.live.server:
        return None
    try:
        run = _ServedRun.start(first.live.server, [job] if isinstance(job, StudySpec) else job, [gpu])
    except FlysearchError:
        return None
    if run is None:
        return None

    def wait_for_it() -> None:
        try:
            queue.put((index, gpu, run.result(), None))
        except FlysearchError as exc:
            queue.put((index, gpu, None, str(exc)))

    threading.Thread(target=wait_for_it, daemon=True, name=f"flysearch-served-worker-{index}").start()
    return run


def _worker_main(job: StudySpec | Sequence[StudySpec], index: int, gpu: str, queue: Any) -> None:
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    queue.put((index, gpu, *_run_here(job, gpu, None)))  # the parent reports a failure with its GPU


def run_workers(job: StudySpec, gpus: list[str] | None = None,
                progress: Callable[[int, int], None] | None = None) -> list[LiveReport]:
    """Run *job* with one worker per GPU in *gpus*: the first in this process, the others in
    processes of their own.

    With several GPUs, each worker gets an equal share of the CPU cores for its compile pool
    (unless the job sets ``compile_workers``), and *progress* follows the study through the first
    worker (its count is the study-wide index of its latest compile, so it counts the others'). A
    worker that fails is reported in one line; set ``FLYSEARCH_DEBUG=1`` to have it print its
    traceback too.

    Raises:
        FlysearchError: a worker failed (its error, with its GPU).
    """
    job.validate()
    gpus = list(gpus or [""])
    if len(gpus) == 1:
        return [run_worker(job, gpus[0] or None, progress)]
    (job,) = _prepare_processes([job], len(gpus))
    return run_jobs([(replace(job, live=replace(job.live, worker_index=i)), gpu)
                     for i, gpu in enumerate(gpus)], progress=progress)


def _prepare_processes(jobs: Sequence[StudySpec], n_gpus: int) -> list[StudySpec]:
    """Before workers start in processes of their own: create the jobs' study storages and table
    databases once (rather than have the workers race to create them), and give each job without
    ``compile_workers`` an equal share of the CPU cores per GPU."""
    from flysearch.tables import TableStore

    for url in sorted({job.storage for job in jobs}):
        prepare_storage(url)
    for db in sorted({job.db for job in jobs}):
        TableStore(db).close()
    share = max(1, ((os.cpu_count() or 2) - n_gpus) // n_gpus)
    return [job if job.live.compile_workers is not None
            else replace(job, live=replace(job.live, compile_workers=share)) for job in jobs]


def run_shapes(jobs: Sequence[StudySpec], gpus: list[str] | None = None,
               progress: Callable[[int, int], None] | None = None) -> list[LiveReport]:
    """Run several studies (one job each, typically one per shape of one kernel) and return their
    reports in the order of *jobs*.

    On one GPU they run one after another on one compile pool and one timer
    (:func:`run_sequence`). On several, the jobs are dealt out round-robin and each GPU runs its
    share in sequence, all GPUs at once, each with an equal share of the CPU cores for compiling
    (unless the jobs set ``compile_workers``); *progress* follows the first GPU's studies.

    Raises:
        FlysearchError: a worker failed (its error, with its GPU).
    """
    for job in jobs:
        job.validate()
    gpus = list(gpus or [""])
    if len(gpus) == 1:
        return run_sequence(jobs, gpus[0] or None, progress)
    jobs = _prepare_processes(jobs, len(gpus))
    dealt: list[tuple[StudySpec | Sequence[StudySpec], str]] = [
        (tuple(jobs[g::len(gpus)]), gpu) for g, gpu in enumerate(gpus) if jobs[g::len(gpus)]]
    # run_jobs returns GPU 0's reports, then GPU 1's...: put each back at its job's place.
    placed: list[LiveReport | None] = [None] * len(jobs)
    order = (i for g in range(len(dealt)) for i in range(g, len(jobs), len(gpus)))
    for i, report in zip(order, run_jobs(dealt, progress=progress), strict=True):
        placed[i] = report
    return placed  # type: ignore[return-value]


def run_jobs(jobs: list[tuple[StudySpec | Sequence[StudySpec], str]],
             progress: Callable[[int, int], None] | None = None) -> list[LiveReport]:
    """Run each ``(job, gpu)`` at once: the first in this process (reporting to *progress*), each
    other one in a process of its own; return their reports in the order given. The jobs may be
    workers of one study (:func:`run_workers` prepares its storage first) or different studies; a
    sequence of jobs in place of a job runs them one after another on that GPU
    (:func:`run_sequence`), each with its report.

    The first job starts as soon as the others' processes are spawned, without waiting for them
    to import and set up (seconds a study would otherwise spend with no GPU busy).

    Raises:
        FlysearchError: a worker failed (its error, with its GPU).
    """
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    served = {i: run for i, (job, gpu) in enumerate(jobs) if i > 0
              and (run := _start_served(job, gpu, queue, i)) is not None}
    # each ends with this process, however this one ends
    procs = {i: ctx.Process(target=Lifeline(_worker_main), args=(job, i, gpu, queue))
             for i, (job, gpu) in enumerate(jobs) if i > 0 and i not in served}
    with main_module_hidden(jobs[0][0]):
        for p in procs.values():
            p.start()
    results: dict[int, tuple[str, list[LiveReport] | None, str | None]] = {}
    try:
        job, gpu = jobs[0]
        results[0] = (gpu, *_run_here(job, gpu, progress))
        while len(results) < len(jobs):
            try:
                i, gpu, report, err = queue.get(timeout=1.0)
                results[i] = (gpu, report, err)
            except Empty:
                for i, p in procs.items():
                    if i not in results and not p.is_alive() and queue.empty():
                        results[i] = (jobs[i][1], None, f"worker died (exit code {p.exitcode})")
    except BaseException:
        for p in procs.values():  # interrupted: the other workers stop too (a rerun resumes)
            p.terminate()
        for run in served.values():
            run.stop()
        raise
    finally:
        for p in procs.values():
            p.join()
    errors = [f"GPU {gpu}: {err}" for gpu, _r, err in (results[i] for i in sorted(results)) if err]
    if errors:
        raise FlysearchError("; ".join(errors))
    return [report for i in range(len(jobs)) for report in results[i][1] or ()]


def _run_here(job: StudySpec | Sequence[StudySpec], gpu: str,
              progress: Callable[[int, int], None] | None) -> tuple[list[LiveReport] | None, str | None]:
    """Run *job* (or a sequence of jobs) in this process: the reports, or the failure in one line
    (a worker process runs its job through this too)."""
    try:
        if isinstance(job, StudySpec):
            return [run_worker(job, gpu, progress)], None
        return run_sequence(job, gpu, progress), None
    except Exception as exc:
        if os.environ.get("FLYSEARCH_DEBUG"):
            import traceback

            traceback.print_exc()
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"


def _load_prior(path: str) -> Any:
    """The prior in *path*, reused while the file is unchanged if this process (a server's study
    process, or a command running several studies) loaded it before."""
    from flysearch.costmodel import load_prior

    return load_prior(path, reuse=True)


def served_specs(backend: LiveBackend, compile_workers: int, *, timers: int = 1,
                 gpus: Sequence[str] = (), priors: Sequence[str] = ()) -> list[WorkerSpec]:
    """What a worker server (``flysearch serve``) keeps warm for studies of *backend*: *timers*
    GPU timers (brought up by the backend's ``info`` task) and *compile_workers* compile processes,
    the same processes :func:`~flysearch.study.live._pipeline.start_pipeline` would start (kinds with no
    spare are left out). A
    study's own environment (the compiler's cache) is set when it takes them; the GPU a timer owns
    must be the study's. A timer handed out is replaced at once (its start-up is seconds of one
    core), compile processes once the study that took them has closed them (so that a dozen
    processes importing the compiler do not slow it).
    A ``study`` process, with the study's machinery imported, runs a command's studies
    (:func:`run_on_server`).

    With *gpus* (GPU ids), the server keeps *timers* timers for each GPU (kinds ``timer:<GPU>``:
    *backend*'s timer with that GPU's variables) instead of *backend*'s, and a study process for
    each: a study on several GPUs (``--gpus``) runs each worker in a warm study process, with a
    warm timer. The study processes load the cost-model files *priors* (absolute paths) while they
    warm up, so that a ``costmodel`` study naming one of them does not load it."""
    from flysearch.evaluators import GPU_VARS, WorkerSpec, gpu_env
    from flysearch.study.live._pipeline import compile_initializer

    def timer(env: dict[str, str], name: str) -> WorkerSpec:
        return WorkerSpec(backend.timer_fn, None, env=env, pinned=GPU_VARS, warm=backend.info_payload,
                          spares=timers, name=name, refill="now")

    timer_specs = [timer({**backend.timer_env, **gpu_env(g)}, f"timer:{g}") for g in gpus]
    specs = [
        WorkerSpec(served_study, warm_study, warm=LoadPriors(list(priors)) if priors else None,
                   spares=max(1, len(gpus)), name="study", refill="now"),
        *(timer_specs or [timer(dict(backend.timer_env), "timer")]),
        WorkerSpec(backend.compile_fn, compile_initializer(backend), spares=compile_workers, name="compile",
                   refill="after"),
    ]
    return [spec for spec in specs if spec.spares > 0]
