"""CompilePipeline: a compile pool and a GPU timer pool waited on together (CPU stand-ins)."""

from __future__ import annotations

import time

import pytest

from flysearch.evaluators import CompilePipeline, CompileResult, WorkerPool
from tests import _race_fakes as fakes


def test_time_alone_answers_its_timing_and_loses_no_compile_answered_meanwhile() -> None:
    pipe = CompilePipeline(WorkerPool(fakes.crash, workers=1, timeout_s=60),
                           WorkerPool(fakes.square, workers=1, timeout_s=60))
    try:
        pipe.compile("k", 0)
        assert pipe.pending == 1
        res, built = pipe.time_alone("info", 3)
        assert (res.task_id, res.value) == ("info", 9)
        deadline = time.monotonic() + 60
        while not built and time.monotonic() < deadline:  # the compile may answer after the timing
            built.extend(pipe.wait(1.0)[0])
        ((task, compiled),) = built
        assert task.task_id == "k" and isinstance(compiled, CompileResult)
        assert not compiled.ok and "compile crash" in (compiled.detail or "")
        assert pipe.pending == 0
    finally:
        pipe.close(grace_s=0.0)


def test_time_alone_refuses_a_timer_that_holds_another_task() -> None:
    pipe = CompilePipeline(WorkerPool(fakes.square, workers=1, timeout_s=60),
                           WorkerPool(fakes.square, workers=1, timeout_s=60))
    pipe.time("first", 2)  # queued, not sent: no process starts
    with pytest.raises(RuntimeError, match="idle timer"):
        pipe.time_alone("second", 3)
    assert pipe.timer.pending == 1
    pipe.close(grace_s=0.0)
