"""Evaluators turn configs into measurements: replayed from tables, or compiled and timed live
(Triton, FlyDSL), in pools of killable worker processes; re-timing in interleaved rounds.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flysearch.evaluators._base import Compiled, Evaluator, Measurement
    from flysearch.evaluators._flydsl import FlydslCompileEvaluator, FlydslLiveEvaluator
    from flysearch.evaluators._gpu_bench import TimingProtocol, protocol_dict
    from flysearch.evaluators._live_backends import (
        GPU_VARS,
        LiveBackend,
        compile_worker_init,
        flydsl_backend,
        gpu_env,
        simulated_backend,
        triton_backend,
    )
    from flysearch.evaluators._pool import TaskResult, WorkerPool
    from flysearch.evaluators._replay import ReplayEvaluator
    from flysearch.evaluators._retime import (
        FinalistReport,
        RetimeSettings,
        decide,
        interleaved_rounds,
        retime_finalists,
        top_rows,
        with_rounds,
    )
    from flysearch.evaluators._toolchain import LLD_MIN, find_lld, flydsl_version, lld_fix
    from flysearch.evaluators._triton import (
        COMPILE_TIMEOUT_S,
        LAUNCH_TIMEOUT_S,
        compile_payload,
        compile_task,
        timer_task,
        timing_payload,
    )
    from flysearch.evaluators._worker_process import main_module_hidden
    from flysearch.evaluators._worker_server import (
        ServedProcess,
        WorkerServer,
        WorkerSpec,
        connect_worker,
        default_socket,
        server_status,
        wait_warm,
    )
    from flysearch.tables import Outcome

__all__ = [
    "COMPILE_TIMEOUT_S",
    "GPU_VARS",
    "LAUNCH_TIMEOUT_S",
    "LLD_MIN",
    "Compiled",
    "Evaluator",
    "FinalistReport",
    "FlydslCompileEvaluator",
    "FlydslLiveEvaluator",
    "LiveBackend",
    "Measurement",
    "Outcome",
    "ReplayEvaluator",
    "RetimeSettings",
    "ServedProcess",
    "TaskResult",
    "TimingProtocol",
    "WorkerPool",
    "WorkerServer",
    "WorkerSpec",
    "compile_payload",
    "compile_task",
    "compile_worker_init",
    "connect_worker",
    "decide",
    "default_socket",
    "find_lld",
    "flydsl_backend",
    "flydsl_version",
    "gpu_env",
    "interleaved_rounds",
    "lld_fix",
    "main_module_hidden",
    "protocol_dict",
    "retime_finalists",
    "server_status",
    "simulated_backend",
    "timer_task",
    "timing_payload",
    "top_rows",
    "triton_backend",
    "wait_warm",
    "with_rounds",
]

# Imported when first used, so that a worker process that imports one evaluator module pays for
# that module alone.
_HOME = {
    "wait_warm": "_worker_server",
    "FinalistReport": "_retime",
    "decide": "_retime",
    "retime_finalists": "_retime",
    "COMPILE_TIMEOUT_S": "_triton",
    "Compiled": "_base",
    "Evaluator": "_base",
    "FlydslCompileEvaluator": "_flydsl",
    "FlydslLiveEvaluator": "_flydsl",
    "GPU_VARS": "_live_backends",
    "LAUNCH_TIMEOUT_S": "_triton",
    "LLD_MIN": "_toolchain",
    "LiveBackend": "_live_backends",
    "Measurement": "_base",
    "Outcome": "flysearch.tables",
    "ReplayEvaluator": "_replay",
    "RetimeSettings": "_retime",
    "ServedProcess": "_worker_server",
    "TaskResult": "_pool",
    "TimingProtocol": "_gpu_bench",
    "WorkerPool": "_pool",
    "WorkerServer": "_worker_server",
    "WorkerSpec": "_worker_server",
    "compile_payload": "_triton",
    "compile_task": "_triton",
    "compile_worker_init": "_live_backends",
    "connect_worker": "_worker_server",
    "default_socket": "_worker_server",
    "find_lld": "_toolchain",
    "flydsl_backend": "_live_backends",
    "flydsl_version": "_toolchain",
    "gpu_env": "_live_backends",
    "interleaved_rounds": "_retime",
    "lld_fix": "_toolchain",
    "main_module_hidden": "_worker_process",
    "protocol_dict": "_gpu_bench",
    "server_status": "_worker_server",
    "simulated_backend": "_live_backends",
    "timer_task": "_triton",
    "timing_payload": "_triton",
    "top_rows": "_retime",
    "triton_backend": "_live_backends",
    "with_rounds": "_retime",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    home = _HOME[name]
    return getattr(importlib.import_module(home if "." in home else f"{__name__}.{home}"), name)
