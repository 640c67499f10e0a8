"""Stand-ins for the GPU task functions, for CPU tests of the pool and of the race scheduler.

They are module-level so that spawned workers can import them. Their behaviour is a fixed function of
the config, so a test knows which configs fail, crash or hang. The race's stand-ins take the tasks
and answer the typed messages that :func:`flysearch.evaluators.compile_task` and
:func:`flysearch.evaluators.timer_task` do.
"""

from __future__ import annotations

import dataclasses
import os
import sys
import time
from typing import Any

from flysearch.evaluators import (
    CompileResult,
    InfoTask,
    Measurement,
    Outcome,
    TimerInfo,
    TimerTask,
    TimeTask,
    TritonCompileTask,
)

CRASH_COMPILE = {"BLOCK_N": 64, "BLOCK_K": 32, "SPLIT_K": 1, "num_stages": 2, "num_warps": 4}
HANG_COMPILE = {"BLOCK_N": 64, "BLOCK_K": 32, "SPLIT_K": 1, "num_stages": 3, "num_warps": 4}
CRASH_TIMER = {"BLOCK_N": 32, "BLOCK_K": 64, "SPLIT_K": 2, "num_stages": 2, "num_warps": 4}


def _matches(config: dict[str, Any], pattern: dict[str, Any]) -> bool:
    return all(config.get(k) == v for k, v in pattern.items())


def square(x: int) -> int:
    return x * x


def crash(x: int) -> int:
    os._exit(3)


def hang(x: float) -> float:
    time.sleep(x)
    return x


def sleep_or_crash(x: float) -> float:
    """Sleep *x* seconds and answer it; a negative *x* kills the worker."""
    if x < 0:
        os._exit(3)
    time.sleep(x)
    return x


def whoami(op: Any) -> Any:
    """A served-worker probe: ``"pid"``, ``"env:NAME"`` (a variable), ``"warm"`` (how often
    :func:`slow_init` ran here), ``("sleep", s)``, ``"crash"``."""
    if op == "pid":
        return os.getpid()
    if op == "warm":
        return int(os.environ.get("FAKE_INIT_RUNS", "0"))
    if op == "crash":
        os._exit(3)
    if isinstance(op, tuple):
        time.sleep(op[1])
        return op[1]
    return os.environ.get(op.split(":", 1)[1])


def slow_init() -> None:
    """An initializer that takes a second (a framework's imports) and counts its runs."""
    time.sleep(1.0)
    os.environ["FAKE_INIT_RUNS"] = str(int(os.environ.get("FAKE_INIT_RUNS", "0")) + 1)


def die_init() -> None:
    """An initializer that always fails (a worker whose framework is not installed)."""
    sys.exit(3)


def fail(x: int) -> int:
    raise ValueError(f"bad input {x}")


def fake_compile(task: TritonCompileTask) -> CompileResult:
    config = task.config
    if _matches(config, CRASH_COMPILE):
        os._exit(11)
    if _matches(config, HANG_COMPILE):
        time.sleep(600)
    if config["BLOCK_K"] == 256 and config["num_stages"] == 4:
        return CompileResult(False, 0.01, "out of resources: shared memory", notes={"shared": 1})
    return CompileResult(True, 0.001 * config["BLOCK_K"], "", notes={"shared": 0})


def fake_time_ms(config: dict[str, Any]) -> float:
    return 1.0 + 0.001 * config["BLOCK_N"] + 0.01 * config["num_stages"] + 0.1 / config["SPLIT_K"]


def fake_timer(task: TimerTask) -> TimerInfo | Measurement:
    if isinstance(task, InfoTask):
        return TimerInfo("NVIDIA H200", {"driver": "fake", "cuda": "fake", "torch": "fake", "triton": "fake"},
                         {"sms": 132, "l2_bytes": 60 * 2**20})
    if not isinstance(task, TimeTask):  # the vendor's GEMM
        return Measurement(Outcome.OK, 1.05, None, 0.0)
    config = task.config
    if _matches(config, CRASH_TIMER):
        os._exit(7)
    if config["SPLIT_K"] == 16:
        return Measurement(Outcome.WRONG_RESULT, None, None, 0.0, "relative error 0.5 > 0.01",
                           {"rel_err": 0.5})
    return Measurement(Outcome.OK, fake_time_ms(config), None, 0.001)


def raise_init() -> None:
    """An initializer that always raises (a framework that cannot load its driver library)."""
    raise ImportError("libcuda.so.1: cannot open shared object file")


def flaky_init() -> None:
    """An initializer that fails in the first worker only (``$FAKE_FLAKY_FILE`` marks it ran)."""
    marker = os.environ["FAKE_FLAKY_FILE"]
    if not os.path.exists(marker):
        open(marker, "w").close()
        raise RuntimeError("device busy")


LUCKY = {"BLOCK_N": 32, "BLOCK_K": 64, "SPLIT_K": 8, "num_stages": 3, "num_warps": 4}


def fake_timer_lucky(task: TimerTask) -> TimerInfo | Measurement:
    """:func:`fake_timer`, except that the race's one timing of :data:`LUCKY` (a call that passes
    the best time so far) comes out 20% fast, as a single timing near the top sometimes does; every
    re-timing of it (``best_ms`` ``None``) gives its true time."""
    answer = fake_timer(task)
    if isinstance(task, TimeTask) and task.best_ms is not None and _matches(task.config, LUCKY):
        assert isinstance(answer, Measurement) and answer.time_ms is not None
        answer = dataclasses.replace(answer, time_ms=0.8 * answer.time_ms)
    return answer


VENDOR_CALLS_ENV = "FLYSEARCH_TEST_VENDOR_CALLS"


def fake_timer_warm_vendor(task: TimerTask) -> TimerInfo | Measurement:
    """:func:`fake_timer_lucky`, except that cuBLAS is fast (1.05 ms) only the first time it is
    timed and 1.10 ms after, as on a GPU that idled before the race's first timing. Calls are counted
    in the file named by :data:`VENDOR_CALLS_ENV` (a timer restarted after a crash keeps the count)."""
    answer = fake_timer_lucky(task)
    if not isinstance(task, (InfoTask, TimeTask)):  # the vendor's GEMM
        counter = os.environ[VENDOR_CALLS_ENV]
        calls = int(open(counter).read() or 0) if os.path.exists(counter) else 0
        with open(counter, "w") as f:
            f.write(str(calls + 1))
        if calls:
            answer = dataclasses.replace(answer, time_ms=1.10)
    return answer


def fake_compile_family(task: TritonCompileTask) -> CompileResult:
    """:func:`fake_compile` for the fused split-K family only: any other family fails to compile."""
    if task.family != "triton_gemm_splitk_fused":
        return CompileResult(False, 0.0, f"family {task.family}", notes={"shared": 0})
    return fake_compile(task)


def fake_timer_family(task: TimerTask) -> TimerInfo | Measurement:
    """:func:`fake_timer`, its answers to configs naming the family it was asked to launch."""
    answer = fake_timer(task)
    if isinstance(task, TimeTask):
        assert isinstance(answer, Measurement)
        answer = dataclasses.replace(answer, extra={**answer.extra, "family": task.family})
    return answer


def fake_compile_spec(task: TritonCompileTask) -> CompileResult:
    """A compile of any family's config that always succeeds, its binary found in Triton's cache."""
    return CompileResult(True, 0.001, "", notes={"shared": 0, "cache_hit": True})


def fake_timer_spec(task: TimerTask) -> TimerInfo | Measurement:
    """:func:`fake_timer` for any family's configs (no SPLIT_K needed): its answers name the family
    and spec it was asked to launch."""
    if not isinstance(task, TimeTask):
        return fake_timer(task)
    config = task.config
    block_n = config.get("BLOCK_N", config.get("BLOCK_SIZE_N"))  # aiter's name for it
    return Measurement(Outcome.OK, 1.0 + 0.001 * block_n + 0.01 * config["num_stages"], None, 0.001,
                       "", {"family": task.family, "spec": task.spec})


def fake_timer_a100(task: TimerTask) -> TimerInfo | Measurement:
    """:func:`fake_timer_spec` on an A100 (sm_80: no TMA)."""
    answer = fake_timer_spec(task)
    if isinstance(answer, TimerInfo):
        return dataclasses.replace(answer, device="NVIDIA A100-SXM4-80GB",
                                   details={**answer.details, "sms": 108})
    return answer
