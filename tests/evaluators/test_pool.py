"""WorkerPool: results, exceptions, crashes and hangs of plain Python functions in spawned workers."""

from __future__ import annotations

import time

import pytest

from flysearch.evaluators._pool import WorkerPool, WorkerStartupError
from tests import _race_fakes as fakes


def test_results_come_back_by_task_id() -> None:
    with WorkerPool(fakes.square, workers=2, timeout_s=60) as pool:
        pool.submit_many((i, i) for i in range(6))
        results = {r.task_id: r for r in pool.drain(timeout=60)}
    assert {k: r.value for k, r in results.items()} == {i: i * i for i in range(6)}
    assert all(r.ok and r.elapsed_s >= 0 for r in results.values())


def test_an_exception_is_an_error_result_and_the_worker_lives_on() -> None:
    with WorkerPool(fakes.fail, workers=1, timeout_s=60) as pool:
        pool.submit_many([(1, 1), (2, 2)])
        results = pool.drain(timeout=60)
        assert pool.restarts == 0
    assert [r.status for r in results] == ["error", "error"]
    assert "bad input 1" in results[0].detail


def test_a_crashing_worker_is_recorded_and_replaced() -> None:
    with WorkerPool(fakes.crash, workers=1, timeout_s=60) as pool:
        pool.submit_many([("a", 0), ("b", 0)])
        results = pool.drain(timeout=60)
        assert pool.restarts == 2
    assert [(r.task_id, r.status) for r in results] == [("a", "crash"), ("b", "crash")]
    assert "exit code 3" in results[0].detail


def test_a_hanging_task_is_killed_after_its_timeout_and_the_rest_go_on() -> None:
    with WorkerPool(fakes.hang, workers=2, timeout_s=8.0) as pool:
        pool.submit("slow", 600.0)
        pool.submit_many((i, 0.01) for i in range(4))
        t0 = time.monotonic()
        results = {r.task_id: r for r in pool.drain(timeout=60)}
        wall = time.monotonic() - t0
    assert results["slow"].status == "timeout"
    assert all(results[i].ok for i in range(4))
    assert wall < 30


def test_per_task_timeout_overrides_the_pool_timeout() -> None:
    with WorkerPool(fakes.hang, workers=1, timeout_s=600) as pool:
        pool.submit("t", 600.0, timeout_s=8.0)
        (result,) = pool.drain(timeout=60)
    assert result.status == "timeout"


def test_each_result_says_when_the_worker_ran_it() -> None:
    with WorkerPool(fakes.hang, workers=1, timeout_s=60) as pool:
        before = time.monotonic()
        pool.submit_many([("a", 0.2), ("b", 0.2)])
        a, b = pool.drain(timeout=60)
        after = time.monotonic()
    assert a.ran is not None and b.ran is not None
    assert before <= a.ran[0] and a.ran[1] <= b.ran[0] and b.ran[1] <= after
    assert 0.2 <= a.ran[1] - a.ran[0] < 1.0


def test_a_prefetching_worker_starts_the_next_task_without_waiting_for_the_parent() -> None:
    with WorkerPool(fakes.hang, workers=1, timeout_s=60, prefetch=1) as pool:
        pool.submit_many([("a", 0.3), ("b", 0.3), ("c", 0.0)])
        pool.poll(0)
        assert pool.running == 2 and pool.queued == 1
        time.sleep(1.0)  # the parent reads nothing while both run back to back
        results = pool.drain(timeout=60)
    assert [r.task_id for r in results] == ["a", "b", "c"]
    a, b = results[0].ran, results[1].ran
    assert a is not None and b is not None
    assert b[0] - a[1] < 0.1  # b started as soon as a ended, not when the parent woke up


def test_tasks_prefetched_behind_a_crash_run_on_a_fresh_worker() -> None:
    with WorkerPool(fakes.sleep_or_crash, workers=1, timeout_s=60, prefetch=2) as pool:
        pool.submit_many([("a", 0.0), ("boom", -1.0), ("b", 0.0), ("c", 0.0)])
        results = {r.task_id: r for r in pool.drain(timeout=60)}
        assert pool.restarts == 1
    assert results["boom"].status == "crash"
    assert all(results[k].ok for k in "abc")


def test_a_prefetched_task_times_out_from_its_own_start() -> None:
    with WorkerPool(fakes.hang, workers=1, timeout_s=600, prefetch=1) as pool:
        pool.submit("first", 3.0)
        pool.submit("stuck", 600.0, timeout_s=5.0)
        pool.submit("after", 0.0)
        t0 = time.monotonic()
        results = {r.task_id: r for r in pool.drain(timeout=60)}
        wall = time.monotonic() - t0
    assert results["first"].ok and results["after"].ok
    assert results["stuck"].status == "timeout"
    assert 8.0 <= wall < 30  # 3 s of "first", then 5 s of "stuck"


def test_workers_start_without_the_parents_main_module_unless_they_need_it() -> None:
    import functools
    import sys
    import types

    from flysearch.evaluators import main_module_hidden

    real = sys.modules["__main__"]
    with main_module_hidden(fakes.square, functools.partial(fakes.hang, 0.0)):
        assert sys.modules["__main__"] is not real and not hasattr(sys.modules["__main__"], "__file__")
    assert sys.modules["__main__"] is real
    fake_main = types.ModuleType("__main__")
    exec("def f(x):\n    return x\n", fake_main.__dict__)
    with main_module_hidden(functools.partial(fakes.square, fake_main.f)):
        assert sys.modules["__main__"] is real  # a worker needs f from __main__: nothing hidden


def test_dispatch_sends_tasks_and_leaves_their_answers_to_poll():
    with WorkerPool(abs, workers=1, timeout_s=30) as pool:
        pool.start()
        pool.submit("a", -2)
        pool.dispatch()
        assert pool.queued == 0 and pool.running == 1
        time.sleep(0.5)  # answered by now; only a poll reads it
        assert pool.pending == 1
        assert [(r.task_id, r.value) for r in pool.drain(timeout=30)] == [("a", 2)]


@pytest.mark.parametrize("init", [fakes.raise_init, fakes.die_init])
def test_workers_that_fail_to_start_stop_the_pool_instead_of_failing_every_task(init) -> None:
    with WorkerPool(fakes.square, workers=2, timeout_s=60, initializer=init) as pool:
        pool.submit_many((i, i) for i in range(20))
        with pytest.raises(WorkerStartupError,
                           match=r"3 workers in a row failed to start \(tests\._race_fakes"):
            pool.drain(timeout=60)
        assert pool.pending == 20  # no task was answered as failed: none ran
        with pytest.raises(WorkerStartupError):
            pool.poll()


def test_a_worker_that_fails_to_start_once_hands_its_task_to_a_fresh_one(tmp_path) -> None:
    env = {"FAKE_FLAKY_FILE": str(tmp_path / "ran")}
    with WorkerPool(fakes.square, workers=1, timeout_s=60, initializer=fakes.flaky_init, env=env) as pool:
        pool.submit_many((i, i) for i in range(3))
        results = pool.drain(timeout=60)
        assert pool.restarts == 1
    assert sorted((r.task_id, r.status, r.value) for r in results) == [
        (0, "ok", 0), (1, "ok", 1), (2, "ok", 4)]
