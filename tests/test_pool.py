"""WorkerPool: results, exceptions, crashes and hangs of plain Python functions in spawned workers."""

from __future__ import annotations

import time

from flysearch.evaluators.pool import WorkerPool
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
