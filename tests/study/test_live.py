"""Live studies through the real pipeline (pools, pipes, claims, tables), with a table played back
in real time instead of a GPU; several workers on SQLite and PostgreSQL; SIGKILL at random moments."""

from __future__ import annotations

import collections
import json
import os
import random
import signal
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from flysearch.errors import FlysearchError
from flysearch.evaluators import decide, retime_finalists, simulated_backend
from flysearch.space import get_arch
from flysearch.study import LiveSettings, StudySpec, run_live
from flysearch.study._claims import ClaimStore
from flysearch.study.live._launch import run_jobs, run_worker
from flysearch.study.live._report import busy_seconds
from flysearch.study.live._worker import run_live_study
from flysearch.tables import TableStore, read_table_file, space_for_table

REPO = Path(__file__).resolve().parents[2]
TABLE_FILE = REPO / "lab" / "benchmarks" / "data" / "h200" / "triton_gemm__H200__1x6144x4096.table.json.gz"
TABLE = "triton_gemm/H200/1x6144x4096"
LIVE_TABLE = "live/" + TABLE


@pytest.fixture
def db(tmp_path) -> str:
    path = str(tmp_path / "tables.db")
    store = TableStore(path)
    store.write(*read_table_file(TABLE_FILE))
    store.close()
    return path


def _job(tmp_path, db: str, *, live: LiveSettings | None = None, **kw) -> StudySpec:
    """A simulated study (fast playback, compiles logged); *kw* sets its fields or its playback's
    (``scale``, ``noise``, ``compile_log``)."""
    playback = {"scale": 0.01, "compile_log": str(tmp_path / "compiles.log")}
    playback.update({k: kw.pop(k) for k in ("scale", "noise", "compile_log") if k in kw})
    live = live or LiveSettings(compile_workers=2, finalists=3, rounds=3)
    base = StudySpec(name="live", evaluator="simulated", sampler="tpe", budget=24, table=TABLE,
                     storage=f"sqlite:///{tmp_path}/study.db", db=db, live=replace(live, **playback))
    return replace(base, **kw)


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def _log(tmp_path) -> list[str]:
    path = tmp_path / "compiles.log"
    return [ln.split("\t")[0] for ln in path.read_text().splitlines()] if path.exists() else []


def test_live_study_compiles_ahead_and_lands_every_measurement(tmp_path, db):
    (report,) = run_live(_job(tmp_path, db))
    s = report.summary
    assert s.compiles == 24 and report.compiled == 24 and report.timed == 24
    assert report.claims == {"done": 24}
    compiled = _log(tmp_path)
    assert len(compiled) == len(set(compiled)) == 24
    store = TableStore(db)
    truth, live = store.load(TABLE), store.load(LIVE_TABLE)
    assert set(live.rows) == set(compiled)
    for key, row in live.rows.items():  # noise 0: the played-back times come back exactly
        assert row.time_ms == pytest.approx(truth.rows[key].time_ms)
    best = min(live.ok_rows(), key=lambda r: r.time_ms)
    assert s.best_key == best.key
    final = report.finalists
    assert final["winner"] == best.key and final["winner"] in final["tie_set"]
    assert len(final["finalists"]) == 3 and all(f["rounds"] == 3 for f in final["finalists"])
    assert 0 < report.busy_s <= report.wall_s and 0 <= report.overhead < 1
    # The timer's start-up is not busy time: nothing ran before the first compile started.
    assert report.timer_ready_s > 0 and report.head_s == pytest.approx(report.first_compile_s)
    assert 0 <= report.overhead_after_start <= report.overhead
    # After the GPU was ready: the busy time within [t0 + timer_ready_s, end], over that window.
    assert 0 < report.busy_after_ready_s <= report.busy_s
    rest = report.wall_s - report.timer_ready_s
    assert report.overhead_after_ready == pytest.approx(1 - report.busy_after_ready_s / rest)
    assert 0 <= report.overhead_after_ready < 1
    mean = report.pipeline_mean  # two compile processes, a depth of 2 + 2
    assert 0 < mean["compile_procs_busy"] <= 2 and 0 < mean["in_flight"] <= 4 and mean["timing"] <= 2
    parts = report.loop_parts  # "claim" is a part of "ask"
    assert {"ask", "claim", "flush"} <= set(parts) and parts["claim"] <= parts["ask"]
    assert 0 < sum(v for k, v in parts.items() if k != "claim") <= report.wall_s


def test_resume_with_a_larger_budget_compiles_only_new_configs(tmp_path, db):
    run_live(_job(tmp_path, db, live=LiveSettings(compile_workers=2, finalists=0)))
    (report,) = run_live(_job(tmp_path, db, budget=32, live=LiveSettings(compile_workers=2, finalists=0)))
    compiled = _log(tmp_path)
    assert report.summary.compiles == 32 and report.compiled == 8
    assert len(compiled) == len(set(compiled)) == 32


def test_a_compile_that_kills_its_worker_is_a_recorded_failure(tmp_path, db):
    store = TableStore(db)
    table = store.load(TABLE)
    crash = frozenset(k for k in table.rows if "BLOCK_M=16" in k)
    space = space_for_table(table)
    backend = simulated_backend(table, scale=0.01, crash_keys=crash)
    settings = StudySpec(sampler="random", budget=30, seed=1, space=space.name, table=TABLE,
                         storage=f"sqlite:///{tmp_path}/s.db", db=db,
                         live=LiveSettings(compile_workers=2, finalists=0, table="crashy"))
    report = run_live_study("crashy", space, backend, settings, shape=table.meta.shape(),
                            arch=get_arch(table.meta.arch))
    rows = TableStore(db).load("crashy").rows
    assert report.summary.compiles == 30 == len(rows)
    crashed = [r for r in rows.values() if r.key in crash]
    assert crashed and all(r.outcome == "compile_failed" and "crash" in r.detail for r in crashed)
    assert all(r.outcome == "ok" for r in rows.values() if r.key not in crash)


def test_compile_workers_that_cannot_start_stop_the_study_in_one_error(tmp_path, db):
    from tests import _race_fakes as fakes

    table = TableStore(db).load(TABLE)
    space = space_for_table(table)
    backend = replace(simulated_backend(table, scale=0.01), warmup=fakes.raise_init)
    settings = StudySpec(sampler="random", budget=30, seed=1, space=space.name, table=TABLE,
                         storage=f"sqlite:///{tmp_path}/s.db", db=db,
                         live=LiveSettings(compile_workers=2, finalists=0, table="nostart"))
    with pytest.raises(FlysearchError, match=r"workers in a row failed to start .*libcuda\.so\.1"):
        run_live_study("nostart", space, backend, settings, shape=table.meta.shape(),
                       arch=get_arch(table.meta.arch))
    store = TableStore(db)
    assert "nostart" not in store.names() or not store.load("nostart").rows  # no config blamed


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_two_workers_share_one_study_and_compile_nothing_twice(tmp_path, db, backend, request):
    storage = (f"sqlite:///{tmp_path}/study.db" if backend == "sqlite"
               else request.getfixturevalue("postgres_url"))
    # Compiles slow enough (~0.1 s) that the second worker, seconds to start, usually joins the
    # first (a late start is allowed, see below).
    job = _job(tmp_path, db, budget=40, storage=storage, scale=0.3,
               live=LiveSettings(compile_workers=1, finalists=3, rounds=2))
    seen: list[int] = []
    # Both workers ended cleanly: run_live raises when one fails or its process dies.
    reports = run_live(job, replace(job.live, gpus=("0", "1")),
                       progress=lambda done, total: seen.append(done))
    # Who compiles what is not asserted: on a loaded machine the second process may start after
    # the first worker spent the whole budget, and then rightly compile nothing. What must hold
    # is that together they compiled the budget, each config once.
    compiled = _log(tmp_path)
    assert len(compiled) == len(set(compiled)) == 40
    assert set(TableStore(db).load(LIVE_TABLE).rows) == set(compiled)
    # The first worker ran in this process (and reported progress), the second in its own.
    assert len(reports) == 2
    pids = [r.worker.split(":")[1] for r in reports]
    assert pids[0] == str(os.getpid()) != pids[1]
    assert seen and max(seen) <= 40 and seen == sorted(seen)
    assert sum(r.compiled for r in reports) == 40  # the union of their compiles: the budget, once
    # As the last worker to stop saw them (which one that is, is not asserted either).
    assert {"done": 40} in [r.claims for r in reports]
    assert max(r.summary.compiles for r in reports) == 40
    assert sum(1 for r in reports if r.finalists) >= 1  # the last worker to finish re-timed
    study = optuna.load_study(study_name="live", storage=storage)
    assert not [t for t in study.get_trials() if t.state == TrialState.RUNNING]


def test_run_jobs_reports_a_failed_worker_in_one_line_after_the_others_finish(tmp_path, db):
    # The first job (run in this process) names a table that is not there; the second is fine.
    bad = _job(tmp_path, db, name="bad", table="no/such/table", storage=f"sqlite:///{tmp_path}/bad.db",
               compile_log=None)
    good = _job(tmp_path, db, name="good", budget=8, storage=f"sqlite:///{tmp_path}/good.db",
                compile_log=None, live=LiveSettings(compile_workers=1, finalists=0, table="good"))
    with pytest.raises(FlysearchError, match=r"^GPU 0: .*no/such/table") as info:
        run_jobs([(bad, "0"), (good, "1")])
    assert "\n" not in str(info.value) and "GPU 1" not in str(info.value)
    assert len(TableStore(db).load("good").rows) == 8  # the other worker ran to its end


def test_run_jobs_runs_separate_studies_at_once_and_times_them(tmp_path, db):
    live = [LiveSettings(compile_workers=1, finalists=0, table=f"solo{i}") for i in range(2)]
    # Compiles of ~0.3 s: the first study (in this process) lasts long enough for the second,
    # seconds to spawn, to start before it ends.
    jobs = [(_job(tmp_path, db, name=f"solo{i}", budget=12, storage=f"sqlite:///{tmp_path}/solo{i}.db",
                  compile_log=None, scale=1.0, live=live[i]), str(i)) for i in range(2)]
    reports = run_jobs(jobs)
    assert [r.study_name for r in reports] == ["solo0", "solo1"]
    for r in reports:
        assert r.compiled == 12 and r.claims == {"done": 12}  # neither saw the other's claims
        assert r.ended_at - r.started_at == pytest.approx(r.wall_s)
        assert 0 < r.startup_s <= r.first_compile_s < r.wall_s
    assert max(r.started_at for r in reports) < min(r.ended_at for r in reports)  # they overlapped


def _study_state(storage: str, db: str) -> tuple[dict[int, tuple], dict[str, float | None]]:
    try:
        study = optuna.load_study(study_name="live", storage=storage)
    except KeyError:
        return {}, {}
    finished = {t.number: (t.state, t.value, json.dumps(t.user_attrs.get("flysearch"), sort_keys=True))
                for t in study.get_trials() if t.state in (TrialState.COMPLETE, TrialState.FAIL)}
    store = TableStore(db)
    rows = {k: r.time_ms for k, r in store.load(LIVE_TABLE).rows.items()} if LIVE_TABLE in store else {}
    store.close()
    return finished, rows


@pytest.mark.slow
def test_kill_and_resume_twenty_times_loses_nothing_and_compiles_nothing_twice(tmp_path, db):
    """SIGKILL the whole study (process group) 20 times at random moments, then let it finish."""
    storage = f"sqlite:///{tmp_path}/study.db"
    log = tmp_path / "compiles.log"
    budget = 120  # enough work that most of the 20 runs are killed before they finish
    cmd = [sys.executable, "-m", "flysearch", "study", "run", "--evaluator", "simulated", "--table", TABLE,
           "--db", db, "--storage", storage, "--name", "live", "--budget", str(budget), "--scale", "0.03",
           "--compile-workers", "2", "--finalists", "0", "--compile-log", str(log)]
    env = {**os.environ, "FLYSEARCH_DEBUG": "1"}  # a refused run's message carries its traceback
    rng = random.Random(20261129)
    before: tuple[dict[int, tuple], dict[str, float | None]] = ({}, {})
    kills = 0
    for _ in range(20):
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                start_new_session=True, env=env)
        try:
            proc.wait(timeout=rng.uniform(0.8, 4.0))
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            kills += 1
        else:
            assert proc.returncode == 0, proc.stderr.read().decode()[-6000:]
        now = _study_state(storage, db)
        for number, state in before[0].items():
            assert now[0].get(number) == state, f"finished trial {number} changed or was lost"
        for key, time_ms in before[1].items():
            assert now[1].get(key) == time_ms, f"table row {key} was lost"
        before = now
    assert kills >= 10  # most runs were interrupted
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    assert done.returncode == 0, done.stderr[-6000:]
    finished, rows = _study_state(storage, db)
    claims = ClaimStore(storage, "live")
    try:
        final = {r.key: r for r in claims.rows()}
    finally:
        claims.close()
    assert len(final) == budget and all(r.finished for r in final.values())
    assert set(rows) == set(final)  # every finished claim is a table row, and nothing else
    records = [json.loads(r[2]) for r in finished.values() if r[2] != "null"]
    indices = [rec["compile_index"] for rec in records if rec and rec.get("compile_index") is not None]
    assert sorted(set(indices)) == list(range(1, budget + 1))
    # Compiles: at most one per claim attempt, and never after the config's measurement was stored.
    counts = collections.Counter()
    for line in log.read_text().splitlines():
        key, _pid, stamp = line.split("\t")
        counts[key] += 1
        assert float(stamp) <= final[key].finished_at + 1e-3, f"{key} compiled after it was finished"
    assert all(counts[k] <= final[k].attempts for k in counts)
    assert set(counts) <= set(final)
    # A config is given up only after its claim outlived max_attempts (5) workers.
    for row in final.values():
        if row.state == "failed":
            assert row.attempts >= 5 and "died" in row.result["detail"]


def test_finalists_tie_set_and_failures():
    report = decide({"a": [1.0, 1.0], "b": [1.02, 1.02], "c": [1.005, 1.006]}, noise_floor=0.01)
    assert report.winner == "a" and report.tie_set == ["a", "c"]
    times = {"a": iter([2.0, 2.1, 2.0]), "b": iter([1.0, None])}
    report = retime_finalists(["a", "b"], lambda k: next(times[k]), rounds=3, seed=0)
    assert report.winner == "a" and "b" in report.failed
    with pytest.raises(ValueError, match="No finalist"):
        decide({"x": []})


def test_busy_seconds_is_the_union():
    assert busy_seconds([(0, 2), (1, 3), (5, 6)]) == 4
    assert busy_seconds([]) == 0
    assert busy_seconds([(0, 2), (1, 3), (5, 6)], since=2.5) == 1.5
    assert busy_seconds([(0, 2)], since=4) == 0


def test_a_live_report_computes_itself_from_the_workers_log_and_the_stored_study(tmp_path, db):
    from flysearch.study import LiveReport
    from flysearch.study.live._report import WorkerLog

    storage = f"sqlite:///{tmp_path}/study.db"
    (ran,) = run_live(_job(tmp_path, db, storage=storage, live=LiveSettings(compile_workers=1, finalists=0)))
    study = optuna.load_study(study_name="live", storage=storage)
    # Compiles at 1-3 s and 2-6 s, timings at 4-5 s and 7-8 s of a run from 0 s to 10 s; the timer
    # was ready at 3.5 s, the first compile sent at 0.5 s.
    log = WorkerLog("live", "host:1:gpu0", t0=100.0, started_at=5000.0, end=110.0,
                    compile_intervals=[(101.0, 103.0), (102.0, 106.0)],
                    timer_intervals=[(104.0, 105.0), (107.0, 108.0)], first_sent=100.5, timer_ready=103.5,
                    compiled=2, timed=2, table="t", device="d", n_feasible=7, stopped="budget",
                    loop_parts={"ask": 0.5}, setup_parts={"pools": 0.1})
    r = LiveReport.of(log, study, {"done": 24})
    assert (r.wall_s, r.busy_s, r.compile_busy_s, r.timer_busy_s, r.compile_sum_s) == (10, 6, 5, 2, 6)
    assert (r.head_s, r.tail_s, r.first_compile_s, r.startup_s, r.timer_ready_s) == (1, 2, 1, 0.5, 3.5)
    assert r.busy_after_ready_s == 3.5 and (r.started_at, r.ended_at) == (5000, 5010)
    assert r.overhead == pytest.approx(0.4) and r.overhead_after_ready == pytest.approx(1 - 3.5 / 6.5)
    # The study's counts and best come from the stored study, as the run's own report had them.
    assert r.summary.compiles == ran.summary.compiles == 24 and r.summary.best_key == ran.summary.best_key
    assert (r.summary.n_feasible, r.summary.stopped, r.claims) == (7, "budget", {"done": 24})
    # The JSON `study run --json` writes: the same keys as before the report computed itself.
    assert list(ran.as_dict()) == list(r.as_dict()) == [
        "study_name", "worker", "summary", "table", "device", "wall_s", "busy_s", "busy_after_ready_s",
        "compile_busy_s", "timer_busy_s", "compile_sum_s", "head_s", "tail_s", "loop_s", "loop_parts",
        "pipeline_mean", "served_workers", "setup_parts", "startup_s", "first_compile_s", "timer_ready_s",
        "started_at", "ended_at", "compiled", "timed", "claims", "finalists", "stopped", "overhead",
        "overhead_after_start", "overhead_after_ready"]
    assert ran.summary.n_feasible > 0 and ran.stopped == ran.summary.stopped and ran.table == LIVE_TABLE


def test_a_gpu_bound_worker_keeps_few_trials_in_flight():
    from types import SimpleNamespace

    from flysearch.study.live._pipeline import Pipeline

    def limit(compile_s, timing_s, **live):
        fake = SimpleNamespace(live=LiveSettings(compile_workers=14, **live), mean_s={})
        if compile_s:
            fake.mean_s = {"compile": compile_s, "timing": timing_s}
        return Pipeline.in_flight_limit(fake)

    assert limit(None, None) == 21  # nothing measured yet: the full depth
    assert limit(0.4, 0.01) == 21  # compile-bound: one per compile process and half again
    assert limit(0.33, 0.4) == 5  # GPU-bound: the GPU's next configs, compiling or ready
    assert limit(3.0, 0.1) == 21  # 14 processes compile 4.7 configs/s, the GPU times 10/s
    assert limit(3.0, 0.5) == 10  # ...and here only 2/s
    assert limit(0.33, 0.4, depth=4) == 4  # never more than the depth asked for


def test_the_cli_reports_the_time_spent_asking_the_sampler(tmp_path, db):
    cmd = [sys.executable, "-m", "flysearch", "study", "run", "--evaluator", "simulated", "--table", TABLE,
           "--db", db, "--storage", f"sqlite:///{tmp_path}/study.db", "--name", "ask", "--budget", "12",
           "--scale", "0.01", "--compile-workers", "1", "--finalists", "0", "--sampler", "random"]
    wide = {**os.environ, "COLUMNS": "300"}  # rich wraps at the terminal's width
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=wide)
    assert done.returncode == 0, done.stderr[-2000:]
    line = next(ln for ln in done.stdout.splitlines() if "worker" in ln and "asking the sampler" in ln)
    assert "12 compiled, 12 timed" in line and "the GPU was ready after" in line


def test_a_missing_prior_is_one_line_before_any_study_is_made(tmp_path, db):
    cmd = [sys.executable, "-m", "flysearch", "study", "run", "--evaluator", "simulated", "--table", TABLE,
           "--db", db, "--storage", f"sqlite:///{tmp_path}/study.db", "--sampler", "costmodel",
           "--prior", str(tmp_path / "absent.joblib"), "--compile-workers", "1"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "absent.joblib does not exist" in done.stderr
    assert "Traceback" not in done.stderr and not (tmp_path / "study.db").exists()


def test_a_claim_taken_over_while_this_worker_measured_it_is_left_to_its_new_owner(tmp_path, db):
    """A stalled worker (presumed dead) finds that its claim was taken over: it keeps going, drops
    its own measurement of that config, and answers the trial with the claim's final result."""
    import sqlalchemy as sa

    store = TableStore(db)
    table = store.load(TABLE)
    store.close()
    space = space_for_table(table)
    storage = f"sqlite:///{tmp_path}/s.db"
    stolen: list[str] = []

    def steal(compiles: int, _budget: int) -> None:
        if stolen or compiles < 5:
            return
        watcher = ClaimStore(storage, "stolen")
        try:
            flying = [r for r in watcher.in_flight() if r.worker != watcher.worker]
            if flying:  # hand one to a worker that is gone at once (so this one re-takes it)
                with watcher.writing() as c:
                    c.execute(sa.text("update flysearch_claims set worker = 'elsewhere:1:ghost' "
                                      "where study = 'stolen' and key = :k"), {"k": flying[0].key})
                stolen.append(flying[0].key)
        finally:
            watcher.close()

    settings = StudySpec(sampler="random", budget=20, seed=3, space=space.name, table=TABLE, storage=storage,
                         db=db, live=LiveSettings(compile_workers=2, finalists=0, table="stolen"))
    report = run_live_study("stolen", space, simulated_backend(table, scale=0.05), settings,
                            shape=table.meta.shape(), arch=get_arch(table.meta.arch), progress=steal)
    assert stolen and report.summary.compiles == 20 and report.claims == {"done": 20}
    claims = ClaimStore(storage, "stolen")
    try:
        row = claims.get(stolen[0])
    finally:
        claims.close()
    assert row.state == "done" and row.attempts == 2  # re-taken from the vanished owner, measured
    study = optuna.load_study(study_name="stolen", storage=storage)
    indices = [t.user_attrs["flysearch"].get("compile_index") for t in study.trials
               if t.user_attrs.get("flysearch") and t.user_attrs["flysearch"].get("duplicate_of") is None]
    assert sorted(i for i in indices if i is not None) == list(range(1, 21))  # one trial per compile


SECOND_FILE = REPO / "lab/benchmarks/data/h200/triton_gemm__H200__4096x4096x4096.table.json.gz"
SECOND = "triton_gemm/H200/4096x4096x4096"


def test_a_sequence_of_studies_runs_on_pools_started_once(tmp_path, db, monkeypatch):
    """Studies of several shapes in one worker share its compile pool and GPU timer: the pools
    start once, each study asks the (warm) timer for its device, and each lands its own rows."""
    import flysearch.study.live._pipeline as pipeline_module
    import flysearch.study.live._worker as live_module
    from flysearch.study.live._launch import run_sequence

    store = TableStore(db)
    store.write(*read_table_file(SECOND_FILE))
    store.close()
    started = []
    real_start = pipeline_module.start_pipeline

    def counting(*args, **kwargs):
        started.append(kwargs.get("ask", True))
        return real_start(*args, **kwargs)

    def forbidden(*args, **kwargs):
        raise AssertionError("a study of the sequence started pools of its own")

    monkeypatch.setattr(pipeline_module, "start_pipeline", counting)
    monkeypatch.setattr(live_module, "start_pipeline", forbidden)
    settings = LiveSettings(compile_workers=2, finalists=2, rounds=2)
    jobs = [_job(tmp_path, db, name=f"seq-{t}", table=t, budget=12, live=settings, compile_log=None)
            for t in (TABLE, SECOND)]
    reports = run_sequence(jobs)
    assert started == [False]
    assert [r.summary.study_name for r in reports] == ["seq-" + TABLE, "seq-" + SECOND]
    assert all(r.compiled == 12 and r.timed == 12 and r.timer_ready_s > 0 for r in reports)
    assert all(r.finalists and r.finalists["winner"] for r in reports)
    store = TableStore(db)
    assert len(store.load(LIVE_TABLE).rows) == 12 and len(store.load("live/" + SECOND).rows) == 12


def test_studies_of_several_shapes_are_dealt_to_the_gpus(tmp_path, db):
    store = TableStore(db)
    store.write(*read_table_file(SECOND_FILE))
    store.close()
    settings = LiveSettings(compile_workers=1, finalists=0)
    jobs = [_job(tmp_path, db, name=f"deal{i}", table=t, budget=8, live=settings, compile_log=None)
            for i, t in enumerate((TABLE, SECOND, TABLE))]
    reports = run_live(jobs, replace(jobs[0].live, gpus=("0", "1")))
    assert [r.summary.study_name for r in reports] == ["deal0", "deal1", "deal2"]
    assert all(r.compiled == 8 for r in reports)
    # GPU 0 ran the first and the third (one after another, in this process), GPU 1 the second.
    assert reports[0].worker.split(":")[1] == reports[2].worker.split(":")[1] == str(os.getpid())
    assert reports[1].worker.split(":")[1] != str(os.getpid())


def test_pools_given_to_a_study_must_be_idle(tmp_path, db):
    from flysearch.study.live._pipeline import start_pipeline

    store = TableStore(db)
    table = store.load(TABLE)
    store.close()
    backend = simulated_backend(table, scale=0.01)
    settings = LiveSettings(compile_workers=1, finalists=0)
    pipeline = start_pipeline(backend, settings)  # the timer holds its device question: not idle
    try:
        with pytest.raises(FlysearchError, match="must be idle"):
            spec = StudySpec(sampler="random", budget=4, seed=0, storage=f"sqlite:///{tmp_path}/s.db",
                             db=db, live=settings)
            run_live_study("busy", space_for_table(table), backend, spec, pipeline=pipeline)
    finally:
        pipeline.close(grace_s=0.0)


def test_the_cli_runs_one_study_per_listed_table_on_one_set_of_pools(tmp_path, db):
    store = TableStore(db)
    store.write(*read_table_file(SECOND_FILE))
    store.close()
    cmd = [sys.executable, "-m", "flysearch", "study", "run", "--evaluator", "simulated",
           "--table", f"{TABLE},{SECOND}", "--db", db, "--storage", f"sqlite:///{tmp_path}/study.db",
           "--budget", "8", "--scale", "0.01", "--compile-workers", "1", "--finalists", "0",
           "--sampler", "random"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "COLUMNS": "300"})
    assert done.returncode == 0, done.stderr[-2000:]
    for table in (TABLE, SECOND):
        assert f"simulated:{table}:random:seed0" in done.stdout
    workers = [ln for ln in done.stdout.splitlines() if "compiled" in ln and "worker" in ln]
    assert len(workers) == 2 and all("8 compiled, 8 timed" in ln for ln in workers)


def test_a_malformed_shape_in_a_list_fails_before_any_study_runs(tmp_path, db):
    from flysearch.errors import InputFormatError

    good = StudySpec(name="a", evaluator="triton", shape="64x64x64", storage=f"sqlite:///{tmp_path}/s.db",
                     db=db)
    with pytest.raises(InputFormatError, match="not of the form"):
        run_live([good, replace(good, name="b", shape="64xbad")])
    with pytest.raises(InputFormatError, match="not of the form"):
        run_live(replace(good, shape="64x64x64,64xbad"))
    assert not (tmp_path / "s.db").exists()


def test_timer_queue_sets_what_the_timer_holds(db):
    from flysearch.study.live._pipeline import pools_key, start_pipeline

    with pytest.raises(FlysearchError, match="timer_queue"):
        LiveSettings(timer_queue=0)
    store = TableStore(db)
    backend = simulated_backend(store.load(TABLE), scale=0.01)
    store.close()
    assert pools_key(backend, LiveSettings(timer_queue=2)) != pools_key(backend, LiveSettings(timer_queue=8))
    pipeline = start_pipeline(backend, LiveSettings(compile_workers=1, timer_queue=4), ask=False)
    try:
        assert pipeline.timer.prefetch == 3  # one timing, three queued in its pipe
    finally:
        pipeline.close(grace_s=0.0)


@pytest.mark.skipif(_has_cuda(), reason="checks the run that fails for want of a GPU")
def test_a_triton_cache_made_for_a_run_is_removed_when_it_ends(tmp_path, db, monkeypatch):
    import tempfile

    from flysearch.study.live._launch import run_sequence

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where mkdtemp makes the caches
    job = StudySpec(name="t", evaluator="triton", sampler="random", budget=4, shape="64x64x64",
                    storage=f"sqlite:///{tmp_path}/s.db", db=db,
                    live=LiveSettings(compile_workers=1, finalists=0))
    for run in (lambda: run_worker(job), lambda: run_sequence([job, replace(job, name="u")])):
        # No GPU here (or no Triton at all): the run fails.
        with pytest.raises(FlysearchError, match=r"timer could not start|needs the triton package"):
            run()
        assert list(tmp_path.glob("flysearch-cache-*")) == []


def test_a_study_file_describes_a_live_study_and_flags_override_it(tmp_path, db):
    from flysearch.study import load_study_file

    folder = tmp_path / "studies"
    folder.mkdir()
    study_file = folder / "live.toml"
    study_file.write_text(
        f'[study]\nname = "filed"\nevaluator = "simulated"\ntable = "{TABLE}"\ndb = "{db}"\n'
        'storage = "sqlite:///study.db"\nsampler = "random"\nbudget = 12\n\n'
        '[live]\ngpus = ["0"]\ncompile_workers = 1\nfinalists = 2\nrounds = 2\nscale = 0.01\n'
        'compile_log = "compiles.log"\n')
    spec = load_study_file(study_file)
    assert spec.evaluator == "simulated" and spec.live.gpus == ("0",) and spec.live.finalists == 2
    assert spec.live.compile_log == str(folder / "compiles.log")  # read from the file's folder
    out = tmp_path / "reports.json"
    cmd = [sys.executable, "-m", "flysearch", "study", "run", str(study_file), "--budget", "6",
           "--rounds", "3", "--json", str(out)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    (report,) = json.loads(out.read_text())
    assert report["study_name"] == "filed" and report["summary"]["compiles"] == 6  # --budget won
    assert report["finalists"] and {f["rounds"] for f in report["finalists"]["finalists"]} == {3}  # --rounds
    assert len((folder / "compiles.log").read_text().splitlines()) == 6 and (folder / "study.db").exists()


@pytest.mark.parametrize(("live", "message"), [
    ("gpu_count = 2", "unknown keys ['gpu_count'] in [live]; allowed: ['cache_dir', 'compile_log'"),
    ("compile_workers = 0", "[live] compile_workers must be a positive integer, got 0"),
    ("scale = -1", "[live] scale must be a number >= 0"),
    ('gpus = "0,0"', "distinct"),
    ("server = 3", "[live] server must be a string"),
])
def test_a_bad_live_table_is_one_error_line_and_exit_code_2(tmp_path, live, message):
    from click.testing import CliRunner

    from flysearch.cli import main

    study_file = tmp_path / "bad.toml"
    study_file.write_text(f'[study]\nevaluator = "simulated"\ntable = "{TABLE}"\n\n[live]\n{live}\n')
    result = CliRunner().invoke(main, ["study", "run", str(study_file)])
    assert result.exit_code == 2 and message in result.output, result.output
    errors = [ln for ln in result.output.splitlines() if ln.startswith("Error:")]
    assert "Traceback" not in result.output and len(errors) == 1 and message in errors[0]


def test_a_live_table_needs_a_live_evaluator(tmp_path):
    from flysearch.errors import InputFormatError
    from flysearch.study import load_study_file

    study_file = tmp_path / "replayed.toml"
    study_file.write_text(f'[study]\ntable = "{TABLE}"\n\n[live]\nfinalists = 0\n')
    with pytest.raises(InputFormatError, match=r"\[live\] table but its evaluator 'replay' is not live"):
        load_study_file(study_file)
