"""The worker server: warm processes handed to pools of other processes, which use them exactly as
their own spawned workers (timeouts, crashes, the environment), and fall back to spawning."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import optuna
import pytest

from flysearch.evaluators import WorkerPool
from flysearch.evaluators._worker_server import (
    WorkerServer,
    WorkerSpec,
    connect_worker,
    server_status,
    serving,
    wait_warm,
)
from tests import _race_fakes as fakes
from tests.conftest import REPO
from tests.processes import PROC, alive, descendants, gone_within, kill_all, spawned, survivors
from tests.study.test_live import TABLE, db  # noqa: F401 (the fixture: a table database)

pytestmark = pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="a worker server needs Linux pidfds")

SPEC = WorkerSpec(fakes.whoami, fakes.slow_init, {"FAKE_GPU": "0"}, ("FAKE_PIN",), "warm", spares=2,
                  name="probe")


@pytest.fixture
def sock(tmp_path):
    return str(tmp_path / "w.sock")


@pytest.fixture
def own_tmp(tmp_path, monkeypatch) -> Path:
    """A temporary folder for this test and the processes it starts alone, so that what it finds
    there is theirs, not that of a test running beside it (pytest-xdist)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def _pool(sock: str, **kw) -> WorkerPool:
    args = {"workers": 2, "timeout_s": 30, "initializer": fakes.slow_init, "server": sock,
            "env": {"FAKE_GPU": "0", "FAKE_CACHE": "/study/cache"}}
    return WorkerPool(fakes.whoami, **{**args, **kw})


def _run(pool: WorkerPool, *ops) -> list:
    for i, op in enumerate(ops):
        pool.submit(i, op)
    return [r for r in sorted(pool.drain(timeout=30), key=lambda r: r.task_id)]


def test_a_pool_takes_warm_workers_that_serve_it_as_its_own(sock):
    with serving([SPEC], sock) as server:
        status = wait_warm(sock, timeout_s=30)
        assert status["kinds"]["probe"] == {"spares": 2, "warm": 2}
        start = time.monotonic()
        with _pool(sock) as pool:
            pool.start()
            assert pool.served == 2
            # Already initialized (once, at the server), and answering at once.
            results = _run(pool, "warm", "warm", "env:FAKE_CACHE", "env:FAKE_GPU")
            assert time.monotonic() - start < 0.9  # a spawned worker's initializer alone takes 1 s
        assert [r.status for r in results] == ["ok"] * 4
        assert [r.value for r in results] == [1, 1, "/study/cache", "0"]  # the pool's environment
        assert server.served == 2
        wait_warm(sock, timeout_s=30)  # the spares it handed out were replaced


def test_a_served_worker_is_killed_on_timeout_and_a_crash_is_a_result(sock):
    with serving([SPEC], sock):
        wait_warm(sock, timeout_s=30)
        with _pool(sock, workers=1) as pool:
            (first,) = _run(pool, "pid")
            pool.submit("hung", ("sleep", 10.0), timeout_s=0.5)
            (hung,) = pool.drain(timeout=30)
            assert hung.status == "timeout"
            with pytest.raises(ProcessLookupError):  # killed, not left running
                for _ in range(50):
                    os.kill(first.value, 0)
                    time.sleep(0.05)
            (crashed,) = _run(pool, "crash")
            assert crashed.status == "crash"
            (after,) = _run(pool, "pid")
            assert after.ok and after.value != first.value
            assert pool.restarts == 2 and pool.served >= 2


def test_no_server_or_no_matching_spare_means_the_pool_spawns_its_own(sock, tmp_path):
    with _pool(str(tmp_path / "none.sock"), workers=1) as pool:
        assert [r.value for r in _run(pool, "warm")] == [1]
        assert pool.served == 0
    with serving([SPEC], sock):
        wait_warm(sock, timeout_s=30)
        assert connect_worker(sock, fakes.whoami, fakes.slow_init, {"FAKE_GPU": "1"}) is None  # other GPU
        assert connect_worker(sock, fakes.square, None, {"FAKE_GPU": "0"}) is None  # other function
        with _pool(sock, workers=1, env={"FAKE_GPU": "1"}) as pool:
            assert [r.value for r in _run(pool, "env:FAKE_GPU")] == ["1"]
            assert pool.served == 0


def test_a_server_for_two_gpus_hands_each_pool_its_gpus_worker(sock):
    gpu1 = replace(SPEC, env={"FAKE_GPU": "1"}, spares=1, name="probe:1")
    with serving([replace(SPEC, spares=1, name="probe:0"), gpu1], sock) as server:
        wait_warm(sock, timeout_s=30)
        for gpu in ("1", "0"):
            with _pool(sock, workers=1, env={"FAKE_GPU": gpu}) as pool:
                assert [r.value for r in _run(pool, "warm", "env:FAKE_GPU")] == [1, gpu]
                assert pool.served == 1
        assert server.served == 2
        wait_warm(sock, timeout_s=30)  # each GPU's spare was replaced by its own spec
        kinds = server.status()["kinds"]
        assert kinds == {"probe:0": {"spares": 1, "warm": 1}, "probe:1": {"spares": 1, "warm": 1}}
        with _pool(sock, workers=1, env={"FAKE_GPU": "2"}) as pool:  # no spare for that GPU
            assert [r.value for r in _run(pool, "env:FAKE_GPU")] == ["2"] and pool.served == 0


def test_a_served_worker_has_the_pools_environment_and_its_start_up_variables(sock, monkeypatch):
    monkeypatch.setenv("SERVER_ONLY", "1")  # the server's spares start with it
    with serving([SPEC], sock):
        wait_warm(sock, timeout_s=30)
        monkeypatch.delenv("SERVER_ONLY")
        monkeypatch.setenv("CLIENT_ONLY", "2")
        with _pool(sock, workers=1) as pool:
            values = [r.value for r in _run(pool, "env:SERVER_ONLY", "env:CLIENT_ONLY")]
            assert pool.served == 1 and values == [None, "2"]  # as a worker spawned here would see
        # FAKE_PIN is read at start-up: the spares started without it, so a pool with it spawns.
        with _pool(sock, workers=1, env={"FAKE_GPU": "0", "FAKE_PIN": "1"}) as pool:
            assert [r.value for r in _run(pool, "env:FAKE_PIN")] == ["1"] and pool.served == 0
        monkeypatch.setenv("FAKE_PIN", "1")  # also when it comes from this process's environment
        with _pool(sock, workers=1) as pool:
            assert [r.value for r in _run(pool, "env:FAKE_PIN")] == ["1"] and pool.served == 0


def test_workers_outlive_the_server_that_handed_them_out(sock):
    with _pool(sock, workers=1) as pool:
        with serving([SPEC], sock):
            wait_warm(sock, timeout_s=30)
            (first,) = _run(pool, "pid")
            assert pool.served == 1
        assert not os.path.exists(sock)
        (again,) = _run(pool, "pid")
        assert again.ok and again.value == first.value


def test_one_server_per_socket_and_a_stale_socket_is_replaced(sock):
    with serving([replace(SPEC, spares=0)], sock):
        with pytest.raises(OSError, match="already listening"):
            WorkerServer([SPEC], sock).start()
    open(sock, "w").close()  # what a killed server leaves
    with serving([replace(SPEC, spares=0)], sock) as server:
        assert server.status()["served"] == 0


def test_a_live_study_takes_its_timer_and_compile_processes_from_the_server(tmp_path, db):  # noqa: F811
    from flysearch.evaluators import simulated_backend
    from flysearch.study import LiveSettings, StudySpec, run_live
    from flysearch.study.live._launch import served_specs
    from flysearch.tables import TableStore

    sock = str(tmp_path / "w.sock")
    store = TableStore(db)
    backend = simulated_backend(store.load(TABLE))
    store.close()
    live = LiveSettings(compile_workers=2, finalists=0)
    with serving(served_specs(backend, live.workers()), sock):
        wait_warm(sock, timeout_s=60)
        job = StudySpec(name="served", evaluator="simulated", sampler="tpe", budget=16, table=TABLE,
                        storage=f"sqlite:///{tmp_path}/s.db", db=db,
                        live=replace(live, server=sock, scale=0.01))
        (report,) = run_live(job)
    assert report.served_workers == 3  # the timer and both compile processes
    assert report.summary.compiles == 16 and report.claims == {"done": 16}


def test_the_cli_says_in_one_line_when_no_server_listens(tmp_path):
    out = subprocess.run([sys.executable, "-m", "flysearch", "serve", "--status", "--socket",
                          str(tmp_path / "none.sock")], capture_output=True, text=True)
    assert out.returncode == 2 and "No worker server is listening" in out.stderr
    assert "Traceback" not in out.stderr


def test_a_spare_that_refills_after_is_replaced_once_its_pool_closed_it(sock):
    with serving([replace(SPEC, spares=1, refill="after")], sock) as server:
        wait_warm(sock, timeout_s=30)
        with _pool(sock, workers=1) as pool:
            assert [r.value for r in _run(pool, "warm")] == [1] and pool.served == 1
            time.sleep(0.5)
            assert server.status()["kinds"]["probe"]["spares"] == 0  # not while the study runs
        assert wait_warm(sock, timeout_s=30)["kinds"]["probe"] == {"spares": 1, "warm": 1}


def test_a_server_whose_workers_die_warming_up_stops_instead_of_restarting_them(sock):
    from flysearch.errors import FlysearchError
    from flysearch.evaluators._worker_server import MAX_COLD_DEATHS

    broken = WorkerSpec(fakes.whoami, fakes.die_init, spares=1, name="broken")
    deadline = time.monotonic() + 60
    server = WorkerServer([broken], sock)
    server.start()
    try:
        with pytest.raises(FlysearchError, match=f"{MAX_COLD_DEATHS} broken workers in a row died"):
            server.serve_forever(lambda: time.monotonic() > deadline)
    finally:
        server.close()
    assert time.monotonic() < deadline


def test_serving_raises_what_stopped_its_thread_when_the_block_ends(sock, monkeypatch):
    from flysearch.errors import FlysearchError

    def stops(self, stop, tick_s=0.2):  # type: ignore[no-untyped-def]
        raise FlysearchError("the server's thread stopped")

    monkeypatch.setattr(WorkerServer, "serve_forever", stops)
    with pytest.raises(FlysearchError, match="thread stopped"), serving([SPEC], sock):
        pass


def test_a_commands_studies_run_in_the_servers_warm_study_process(tmp_path, db, monkeypatch, own_tmp):  # noqa: F811
    from flysearch.errors import FlysearchError
    from flysearch.evaluators import simulated_backend
    from flysearch.study import LiveSettings, StudySpec
    from flysearch.study.live._launch import run_on_server, served_specs
    from flysearch.tables import TableStore

    sock = str(tmp_path / "w.sock")
    store = TableStore(db)
    backend = simulated_backend(store.load(TABLE))
    store.close()
    live = LiveSettings(compile_workers=2, finalists=0, server=sock)
    job = StudySpec(name="in-server", evaluator="simulated", sampler="tpe", budget=12, table=TABLE,
                    storage="sqlite:///study.db", db=db, live=replace(live, scale=0.01))
    assert run_on_server(sock, [job]) is None  # no server: the caller runs it itself
    monkeypatch.chdir(tmp_path)
    with serving(served_specs(backend, live.workers()), sock):
        wait_warm(sock, timeout_s=120)
        (report,) = run_on_server(sock, [job])
        assert int(report.worker.split(":")[1]) != os.getpid()  # it ran in the server's process
        assert report.summary.compiles == 12 and report.served_workers == 3
        assert (tmp_path / "study.db").exists()  # a relative path is the command's
        wait_warm(sock, timeout_s=120)
        with pytest.raises(FlysearchError, match="No table 'nope'"):
            run_on_server(sock, [replace(job, name="bad", table="nope")])
    # Each study process made an empty study database to copy; none is left behind.
    assert not any(own_tmp.glob("flysearch-template-*"))


def test_a_study_on_two_gpus_takes_a_warm_timer_for_each_from_the_server(tmp_path, db, monkeypatch):  # noqa: F811
    from flysearch.study import LiveSettings, StudySpec, specs_to_serve
    from flysearch.study.live._launch import run_on_server

    sock = str(tmp_path / "w.sock")
    specs = specs_to_serve("simulated", gpus=["0", "1"], table=TABLE, db=db, compile_workers=2)
    kinds = [(s.name, s.spares) for s in specs]
    assert kinds == [("study", 2), ("timer:0", 1), ("timer:1", 1), ("compile", 2)]
    live = LiveSettings(compile_workers=1, finalists=0, server=sock)
    job = StudySpec(name="two-gpus", evaluator="simulated", sampler="random", budget=16, table=TABLE,
                    storage="sqlite:///study.db", db=db, live=replace(live, scale=0.01))
    monkeypatch.chdir(tmp_path)
    with serving(specs, sock) as server:
        wait_warm(sock, timeout_s=120)
        reports = run_on_server(sock, [job], ["0", "1"])
        assert server.served == 6  # a study process, a timer and a compile process for each worker
    assert [r.served_workers for r in reports] == [2, 2]  # each worker: its GPU's timer, a compile process
    assert sum(r.compiled for r in reports) == 16 and {"done": 16} in [r.claims for r in reports]


def test_a_served_costmodel_study_uses_the_prior_the_server_loaded(tmp_path, db, monkeypatch):  # noqa: F811
    from flysearch.costmodel import fit_prior
    from flysearch.study import LiveSettings, StudySpec, specs_to_serve
    from flysearch.study.live._launch import run_on_server
    from flysearch.tables import TableStore

    store = TableStore(db)
    prior_file = tmp_path / "prior.joblib"
    fit_prior([store.load(TABLE)], max_iter=5).save(prior_file)
    store.close()
    sock = str(tmp_path / "w.sock")
    specs = specs_to_serve("simulated", table=TABLE, db=db, compile_workers=1, priors=[str(prior_file)])
    live = LiveSettings(compile_workers=1, finalists=0, server=sock)
    job = StudySpec(name="with-prior", evaluator="simulated", sampler="costmodel", budget=6, table=TABLE,
                    storage="sqlite:///study.db", db=db, prior="prior.joblib", live=replace(live, scale=0.01))
    monkeypatch.chdir(tmp_path)
    with serving(specs, sock):
        wait_warm(sock, timeout_s=120)
        # Garble the file, keeping its size and time: only a prior loaded before this still works.
        stat = prior_file.stat()
        prior_file.write_bytes(b"\0" * stat.st_size)
        os.utime(prior_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
        (report,) = run_on_server(sock, [job])
    assert report.summary.compiles == 6 and int(report.worker.split(":")[1]) != os.getpid()


def test_the_cli_serves_a_study_run_by_another_command_and_stops_cleanly(tmp_path, db, own_tmp):  # noqa: F811
    sock = str(tmp_path / "cli.sock")
    server = subprocess.Popen([sys.executable, "-m", "flysearch", "serve", "--evaluator", "simulated",
                               "--table", TABLE, "--db", db, "--socket", sock, "--compile-workers", "1"],
                              stderr=subprocess.PIPE, text=True)
    try:
        wait_warm(sock, timeout_s=120)
        out = subprocess.run(
            [sys.executable, "-m", "flysearch", "study", "run", "--evaluator", "simulated", "--table", TABLE,
             "--db", db, "--storage", "sqlite:///s.db", "--budget", "8", "--scale", "0.01",
             "--compile-workers", "1", "--finalists", "0", "--server", sock, "--json", "r.json"],
            capture_output=True, text=True, cwd=tmp_path, timeout=300)
        assert out.returncode == 0, out.stderr
        (report,) = json.loads((tmp_path / "r.json").read_text())
        assert report["served_workers"] == 2 and report["summary"]["compiles"] == 8
        assert "processes taken warm from the worker server" in " ".join(out.stdout.split())
    finally:
        server.terminate()
        _out, err = server.communicate(timeout=60)
    assert server.returncode == 0 and "stopped; served 3 workers" in err
    assert not os.path.exists(sock)
    assert not any(own_tmp.glob("flysearch-template-*"))  # none left


@pytest.mark.parametrize("gpus", [None, "0,1"])
def test_a_served_study_stops_when_its_command_is_killed(tmp_path, db, gpus):  # noqa: F811
    """Also on two GPUs, where the study's second worker runs in another of the server's study
    processes: every served process stops."""
    sock = str(tmp_path / "kill.sock")
    on_gpus = ["--gpu", gpus] if gpus else []
    server = subprocess.Popen([sys.executable, "-m", "flysearch", "serve", "--evaluator", "simulated",
                               "--table", TABLE, "--db", db, "--socket", sock, "--compile-workers", "2",
                               *on_gpus], stderr=(tmp_path / "server.err").open("w"))
    try:
        wait_warm(sock, timeout_s=120)
        command = subprocess.Popen(
            [sys.executable, "-m", "flysearch", "study", "run", "--evaluator", "simulated", "--table", TABLE,
             "--db", db, "--storage", "sqlite:///s.db", "--budget", "200", "--scale", "1.0",
             "--compile-workers", "1", "--server", sock, *(["--gpus", gpus] if gpus else [])],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=tmp_path)
        deadline = time.monotonic() + 60
        workers = 3 * (2 if gpus else 1)  # per worker: a study process, a timer, a compile process
        while server_status(sock)["serving"] < workers and time.monotonic() < deadline:
            time.sleep(0.1)
        assert server_status(sock)["serving"] == workers
        while not _completed(tmp_path / "s.db") and time.monotonic() < deadline + 60:
            time.sleep(0.2)  # killed once something was measured (however slow this machine is)
        command.kill()  # SIGKILL: the command cannot tell anyone
        command.wait()
        deadline = time.monotonic() + 20
        while server_status(sock)["serving"] and time.monotonic() < deadline:
            time.sleep(0.1)
        # the study process and its workers stopped (a served process's stderr is the server's)
        assert server_status(sock)["serving"] == 0, (tmp_path / "server.err").read_text()[-4000:]
    finally:
        server.terminate()
        server.wait(timeout=60)
    assert _completed(tmp_path / "s.db")  # what was measured is kept


_SERVER = """
import sys
from flysearch.evaluators import WorkerServer, WorkerSpec
from tests import _race_fakes as fakes
with WorkerServer([WorkerSpec(fakes.whoami, fakes.slow_init, spares=2, name="probe")], sys.argv[1]) as server:
    server.serve_forever()
"""

_CLIENT = """
import os, sys
from flysearch.evaluators import connect_worker
from tests import _race_fakes as fakes
process, conn = connect_worker(sys.argv[1], fakes.whoami, fakes.slow_init, dict(os.environ))
conn.send((0, "pid"))  # answered: the worker serves this client (no longer ends with the server)
conn.recv()
conn.send((1, ("sleep", 3600.0)))  # a task that lasts (a worker_main message)
print(process.pid, flush=True)
sys.stdin.read()
"""


@pytest.mark.skipif(not PROC, reason="reads processes from /proc")
def test_spares_end_with_a_killed_server_and_a_served_worker_with_its_killed_client(sock):
    """kill -9 of the server ends its spares within 5 s, but not a worker it served, which serves
    its client until the client ends, however it ends (kill -9 too): within 5 s."""
    server = subprocess.Popen([sys.executable, "-c", _SERVER, sock], cwd=REPO, start_new_session=True)
    client = None
    below: dict[int, str] = {}
    try:
        wait_warm(sock, timeout_s=120)
        client = subprocess.Popen([sys.executable, "-c", _CLIENT, sock], cwd=REPO, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True, start_new_session=True)
        served = int(client.stdout.readline())  # type: ignore[union-attr]
        below = descendants(server.pid)  # the spares, the served worker, multiprocessing's tracker
        spares = {pid: below[pid] for pid in spawned(below) if pid != served}
        assert served in below and spares
        start = time.monotonic()
        server.kill()
        server.wait()
        took = gone_within(spares, 30, start)
        bound = _bound_s(5.0)
        assert not survivors(spares) and took < bound, (
            f"spares still there {took:.1f} s after the server's kill (bound {bound:.1f} s)")
        assert alive(served, below[served])  # its client still runs
        start = time.monotonic()
        client.kill()
        client.wait()
        took = gone_within(below, 30, start)
        bound = _bound_s(5.0)
        assert not survivors(below) and took < bound, (
            f"{survivors(below)} still there {took:.1f} s after (bound {bound:.1f} s)")
    finally:
        for proc in (server, client):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait()
        kill_all(below)


def _bound_s(seconds: float) -> float:
    """*seconds* on a machine with a core per runnable process; scaled by the 1-minute load per core
    when it is more (a suite on every core, beside other jobs), at most 4x."""
    per_core = os.getloadavg()[0] / (os.cpu_count() or 1)
    return seconds * min(4.0, max(1.0, per_core))


def _completed(path: Path) -> int:
    """Complete trials of the killed study's database (0 while it has none)."""
    if not path.exists():
        return 0
    storage = f"sqlite:///{path}"
    names = optuna.get_all_study_names(storage)  # one, named after the default sampler; none yet
    return sum(t.state == optuna.trial.TrialState.COMPLETE
               for name in names for t in optuna.load_study(study_name=name, storage=storage).trials)


def test_typed_tasks_and_answers_cross_the_server_socket_and_round_trip_as_json(sock, db):  # noqa: F811
    """A served simulated timer and compile worker take the live backend's typed tasks over the
    server's socket and answer typed results, whose JSON (what a claim stores) reads back equal."""
    from flysearch.evaluators import (
        CompileResult,
        Measurement,
        Outcome,
        TimerInfo,
        measurement_from_json,
        measurement_json,
        simulated_backend,
    )
    from flysearch.space import Config
    from flysearch.tables import TableStore

    store = TableStore(db)
    table = store.load(TABLE)
    store.close()
    backend = simulated_backend(table, scale=0.0)
    row = next(r for r in table.rows.values() if r.ok)
    config = Config.from_dict(row.params)
    specs = [WorkerSpec(backend.timer_fn, None, warm=backend.info_payload, name="timer"),
             WorkerSpec(backend.compile_fn, None, name="compile")]
    with serving(specs, sock):
        wait_warm(sock, timeout_s=30)
        with WorkerPool(backend.timer_fn, workers=1, timeout_s=30, server=sock) as timer, \
                WorkerPool(backend.compile_fn, workers=1, timeout_s=30, server=sock) as compiler:
            info, timed = _run(timer, backend.info_payload, backend.time_payload(config, None, None))
            (built,) = _run(compiler, backend.compile_payload(config, None))
            assert (timer.served, compiler.served) == (1, 1)
    assert info.value == TimerInfo(table.meta.device, {"simulated": "1"}, {"bench_s": 0.0})
    assert timed.value == Measurement(Outcome.OK, row.time_ms, None, row.bench_s or 0.02, row.detail, {})
    assert built.value == CompileResult(True, row.compile_s or 0.0, "")
    spills = CompileResult(False, 2.0, "spills", Outcome.REJECTED, {"vgpr": 256})
    assert spills.failure() == Measurement(Outcome.REJECTED, None, 2.0, 0.0, "spills", {"vgpr": 256})
    for answer in (built.value, spills, CompileResult.from_json(
            {"ok": True, "compile_s": 1.5, "detail": "", "shared": 1024, "cache_hit": False})):
        doc = json.loads(json.dumps(answer.to_json()))
        assert CompileResult.from_json(doc) == answer and doc == answer.to_json()
    stored = measurement_json(timed.value)
    assert measurement_from_json(json.loads(json.dumps(stored))) == timed.value
    assert sorted(stored) == ["bench_s", "compile_s", "detail", "extra", "outcome", "time_ms"]
    assert TimerInfo.from_json(json.loads(json.dumps(info.value.to_json()))) == info.value
