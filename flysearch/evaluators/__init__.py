"""Evaluators turn configs into measurements: replayed from tables, or compiled and timed live
(Triton, FlyDSL), in pools of killable worker processes; re-timing in interleaved rounds.

The public names come in nine groups (``__all__`` lists them in this order): what answers a config
(:class:`Evaluator` and its results, :class:`ReplayEvaluator`, Triton's and FlyDSL's evaluators);
the evaluators a study names, found by name (:func:`register_evaluator` adds one); the live
backends a live study's pipeline runs; Triton's task functions and the timing protocol; aiter's
Triton GEMM compiled for AMD on a CPU; the worker processes (pools, the compile pool -> GPU
pipeline, and a server that keeps them warm); re-timing; a user's kernel compiled for an AMD
arch; and the FlyDSL toolchain.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from flysearch._lazy import lazy_names

if TYPE_CHECKING:
    from flysearch.evaluators._base import Compiled, Evaluator, measure
    from flysearch.evaluators._compile_pipeline import CompilePipeline
    from flysearch.evaluators._flydsl import (
        FlydslCompileEvaluator,
        FlydslLiveEvaluator,
        compile_flydsl_for_amd,
        flydsl_resources,
        is_flydsl_jit,
    )
    from flysearch.evaluators._gpu_bench import (
        DEFAULT_TRITON_FAMILY,
        TimerTask,
        TimeTask,
        TimingProtocol,
        VendorTask,
        device_info,
        protocol_dict,
        shape_bench,
        time_launches,
    )
    from flysearch.evaluators._live_backends import (
        GPU_VARS,
        LiveBackend,
        compile_worker_init,
        flydsl_backend,
        gpu_env,
        simulated_backend,
        triton_backend,
        warm_triton,
    )
    from flysearch.evaluators._messages import (
        CompileResult,
        InfoTask,
        TimerInfo,
        measurement_from_json,
        measurement_json,
    )
    from flysearch.evaluators._pool import TaskResult, WorkerPool
    from flysearch.evaluators._registry import (
        EvaluatorEntry,
        EvaluatorRequest,
        EvaluatorSetup,
        build_evaluator,
        evaluator_entry,
        evaluator_names,
        register_evaluator,
    )
    from flysearch.evaluators._replay import ReplayEvaluator
    from flysearch.evaluators._resources import KernelResources, amd_verdict, resource_extra
    from flysearch.evaluators._retime import (
        FinalistReport,
        RetimeSettings,
        decide,
        interleaved_rounds,
        retime_finalists,
        rounds_record,
        top_rows,
        with_rounds,
    )
    from flysearch.evaluators._toolchain import LLD_MIN, find_lld, flydsl_version, lld_fix
    from flysearch.evaluators._triton import (
        COMPILE_TIMEOUT_S,
        LAUNCH_TIMEOUT_S,
        TritonCompileTask,
        TritonEvaluator,
        compile_request,
        compile_task,
        family_spec,
        timer_task,
        timing_request,
    )
    from flysearch.evaluators._triton_amd import (
        AMD_COMPILE_TIMEOUT_S,
        AmdBuild,
        TritonAmdCompileEvaluator,
        amd_build,
        amd_compile_fix,
        amd_compile_task,
        compile_triton_for_amd,
        smoke_compile,
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
    from flysearch.tables import Measurement, Outcome

__all__ = [  # noqa: RUF022 - grouped by role, as the docstring says
    # What answers a config: the protocol, its results, one measured config, a replayed table,
    # FlyDSL's and Triton's evaluators.
    "Compiled",
    "Evaluator",
    "Measurement",
    "Outcome",
    "measure",
    "ReplayEvaluator",
    "FlydslCompileEvaluator",
    "FlydslLiveEvaluator",
    "TritonEvaluator",
    "TritonAmdCompileEvaluator",
    # Evaluators by name: what a study's evaluator names, and how a new one is registered.
    "EvaluatorEntry",
    "EvaluatorRequest",
    "EvaluatorSetup",
    "build_evaluator",
    "evaluator_entry",
    "evaluator_names",
    "register_evaluator",
    # Live backends: what a live study's pool compiles and its GPU process times, and the typed
    # messages their processes exchange.
    "GPU_VARS",
    "LiveBackend",
    "CompileResult",
    "InfoTask",
    "TimerInfo",
    "measurement_from_json",
    "measurement_json",
    "compile_worker_init",
    "flydsl_backend",
    "gpu_env",
    "simulated_backend",
    "triton_backend",
    "warm_triton",
    # Triton task functions and their typed tasks (run in worker processes), and the timing protocol.
    "COMPILE_TIMEOUT_S",
    "DEFAULT_TRITON_FAMILY",
    "LAUNCH_TIMEOUT_S",
    "TimeTask",
    "TimerTask",
    "TimingProtocol",
    "TritonCompileTask",
    "VendorTask",
    "compile_request",
    "family_spec",
    "compile_task",
    "protocol_dict",
    "shape_bench",
    "time_launches",
    "device_info",
    "timer_task",
    "timing_request",
    # aiter's Triton GEMM compiled for AMD on a CPU: its task function, and what this Python lacks.
    "AMD_COMPILE_TIMEOUT_S",
    "amd_compile_fix",
    "amd_compile_task",
    "smoke_compile",
    # Killable worker processes: pools, the compile pool -> GPU timer pipeline a race and a live
    # study run, and a server that keeps them warm between commands.
    "CompilePipeline",
    "ServedProcess",
    "TaskResult",
    "WorkerPool",
    "WorkerServer",
    "WorkerSpec",
    "connect_worker",
    "default_socket",
    "main_module_hidden",
    "server_status",
    "wait_warm",
    # Re-timing the top configs in interleaved rounds.
    "FinalistReport",
    "RetimeSettings",
    "decide",
    "interleaved_rounds",
    "retime_finalists",
    "rounds_record",
    "top_rows",
    "with_rounds",
    # A user's kernel compiled for an AMD arch (on any machine, or found on an AMD GPU), its
    # resources read and judged.
    "AmdBuild",
    "KernelResources",
    "amd_build",
    "amd_verdict",
    "compile_flydsl_for_amd",
    "compile_triton_for_amd",
    "flydsl_resources",
    "is_flydsl_jit",
    "resource_extra",
    # The FlyDSL toolchain (lld).
    "LLD_MIN",
    "find_lld",
    "flydsl_version",
    "lld_fix",
]

# Imported when first used, so that a worker process that imports one evaluator module pays for
# that module alone.
_HOME = {
    "EvaluatorEntry": "_registry",
    "EvaluatorRequest": "_registry",
    "EvaluatorSetup": "_registry",
    "build_evaluator": "_registry",
    "evaluator_entry": "_registry",
    "evaluator_names": "_registry",
    "register_evaluator": "_registry",
    "wait_warm": "_worker_server",
    "FinalistReport": "_retime",
    "decide": "_retime",
    "retime_finalists": "_retime",
    "rounds_record": "_retime",
    "COMPILE_TIMEOUT_S": "_triton",
    "DEFAULT_TRITON_FAMILY": "_gpu_bench",
    "Compiled": "_base",
    "CompilePipeline": "_compile_pipeline",
    "Evaluator": "_base",
    "FlydslCompileEvaluator": "_flydsl",
    "FlydslLiveEvaluator": "_flydsl",
    "GPU_VARS": "_live_backends",
    "LAUNCH_TIMEOUT_S": "_triton",
    "LLD_MIN": "_toolchain",
    "LiveBackend": "_live_backends",
    "CompileResult": "_messages",
    "InfoTask": "_messages",
    "TimerInfo": "_messages",
    "measurement_from_json": "_messages",
    "measurement_json": "_messages",
    "Measurement": "flysearch.tables",
    "measure": "_base",
    "Outcome": "flysearch.tables",
    "ReplayEvaluator": "_replay",
    "RetimeSettings": "_retime",
    "ServedProcess": "_worker_server",
    "TaskResult": "_pool",
    "TimingProtocol": "_gpu_bench",
    "WorkerPool": "_pool",
    "WorkerServer": "_worker_server",
    "WorkerSpec": "_worker_server",
    "compile_request": "_triton",
    "family_spec": "_triton",
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
    "shape_bench": "_gpu_bench",
    "time_launches": "_gpu_bench",
    "device_info": "_gpu_bench",
    "server_status": "_worker_server",
    "simulated_backend": "_live_backends",
    "timer_task": "_triton",
    "timing_request": "_triton",
    "TimeTask": "_gpu_bench",
    "TimerTask": "_gpu_bench",
    "VendorTask": "_gpu_bench",
    "TritonCompileTask": "_triton",
    "top_rows": "_retime",
    "triton_backend": "_live_backends",
    "with_rounds": "_retime",
    "TritonEvaluator": "_triton",
    "TritonAmdCompileEvaluator": "_triton_amd",
    "AMD_COMPILE_TIMEOUT_S": "_triton_amd",
    "amd_compile_fix": "_triton_amd",
    "amd_compile_task": "_triton_amd",
    "smoke_compile": "_triton_amd",
    "warm_triton": "_live_backends",
    "AmdBuild": "_triton_amd",
    "KernelResources": "_resources",
    "amd_build": "_triton_amd",
    "amd_verdict": "_resources",
    "compile_flydsl_for_amd": "_flydsl",
    "compile_triton_for_amd": "_triton_amd",
    "flydsl_resources": "_flydsl",
    "is_flydsl_jit": "_flydsl",
    "resource_extra": "_resources",
}


__getattr__ = lazy_names(__name__, _HOME)
