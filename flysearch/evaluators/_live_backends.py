"""What a live study compiles and times with: Triton on a CUDA GPU, FlyDSL on an AMD GPU, or a
ground-truth table played back in real time.

A backend is two module-level task functions and the payloads they take, so that the live study
(:mod:`flysearch.study`) can run the compile task in a pool of CPU processes and the timer task in
one process that owns the GPU, each behind a :class:`~flysearch.evaluators.WorkerPool`:

* ``compile_fn(payload) -> {"ok", "compile_s", "detail", "outcome"?, "extra"?}``: builds one config
  (a build failure is ``ok=False``; a binary that cannot run, e.g. it spills, is ``outcome="rejected"``);
* ``timer_fn(payload) -> {...}``: ``{"op": "info"}`` describes the device
  (``{"device", "versions", ...}``); ``{"op": "time", ...}`` validates and times one config and
  answers ``{"outcome", "time_ms", "bench_s", "detail", "extra"}``.

Backends:

* :func:`triton_backend`: :mod:`flysearch.evaluators`'s compile and timer tasks (run on an
  NVIDIA H200).
* :func:`flydsl_backend`: compile-only build in the pool (resources read back, spills rejected), then
  build, validate and time on the AMD GPU in the timer. **Not run on AMD hardware**: no AMD GPU was
  available to this project; the compile side runs in CI for gfx942/gfx950.
* :func:`simulated_backend`: plays a ground-truth table back in real time (sleeps the recorded
  compile and timing seconds, times scaled, with seeded noise), through the same processes and
  pipes. It is how the pipeline, the claims and crash safety are tested without a GPU, and how a
  live study's overhead is measured on any machine.
"""

from __future__ import annotations

import math
import os
import random
import time
import zlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flysearch.evaluators._gpu_bench import DEFAULT_TRITON_FAMILY
from flysearch.tables import Outcome

if TYPE_CHECKING:
    from collections.abc import Callable

    from flysearch.space import Config, Shape
    from flysearch.tables import GroundTruth

__all__ = [
    "GPU_VARS",
    "LiveBackend",
    "compile_worker_init",
    "flydsl_backend",
    "simulated_backend",
    "simulated_compile_task",
    "simulated_timer_task",
    "triton_backend",
    "warm_triton",
]


@dataclass
class LiveBackend:
    """How a live study compiles and times configs (see the module docstring).

    Attributes:
        name: The evaluator's name (``"triton"``, ``"flydsl"``, ``"simulated"`` or one registered).
        kernel: Kernel family, the first part of the table name the measurements land in.
        compile_fn: Module-level compile task.
        timer_fn: Module-level timer task.
        compile_payload: ``(config, shape) -> payload`` for *compile_fn*.
        time_payload: ``(config, shape, best_ms) -> payload`` for *timer_fn*.
        env: Environment of the compile workers and the timer (a shared compiler cache).
        timer_env: Extra environment of the timer only (the GPU it owns).
        compile_timeout_s: Seconds before a compile's worker is killed.
        launch_timeout_s: Seconds before a validate-and-time task's timer is killed.
        info_payload: The timer task that describes the device.
        warmup: Module-level function each compile worker runs once at start (imports).
    """

    name: str
    kernel: str
    compile_fn: Callable[[dict[str, Any]], Any]
    timer_fn: Callable[[dict[str, Any]], Any]
    compile_payload: Callable[[Config, Shape | None], dict[str, Any]]
    time_payload: Callable[[Config, Shape | None, float | None], dict[str, Any]]
    env: dict[str, str] = field(default_factory=dict)
    timer_env: dict[str, str] = field(default_factory=dict)
    compile_timeout_s: float = 120.0
    launch_timeout_s: float = 60.0
    info_payload: dict[str, Any] = field(default_factory=lambda: {"op": "info"})
    warmup: Callable[[], None] | None = None


def compile_worker_init(warmup: Callable[[], None] | None) -> None:
    """Compile workers yield the CPU to the study loop and the timer (which feed and drain the
    pipeline; at nice 10 a compile gets about a tenth of a core the loop or the timer wants), then
    import what the first compile needs while the study starts.

    It lives here, not beside the study loop, because each compile process imports its module
    before its first task (``flysearch.study`` would bring Optuna and SQLAlchemy: a second
    of start-up in each of the processes).
    """
    try:
        os.nice(10)
    except OSError:
        pass
    if warmup is not None:
        warmup()


GPU_VARS = ("CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES")  # read once, when a process starts


def gpu_env(gpu: str | int | None) -> dict[str, str]:
    """Environment that gives a timer process exactly one GPU (CUDA and ROCm)."""
    if gpu is None or gpu == "":
        return {}
    return dict.fromkeys(GPU_VARS, str(gpu))


# -- Triton ---------------------------------------------------------------------------------------


def warm_triton() -> None:
    """Import Triton and the kernel in a compile worker before its first task."""
    import triton  # noqa: F401

    import flysearch.kernels  # noqa: F401  (the kernel module; its Triton source is imported by the compile)


def triton_backend(*, arch: str = "sm_90", cache_dir: str | None = None, gpu: str | int | None = None,
                   protocol: Any = None, family: str = DEFAULT_TRITON_FAMILY) -> LiveBackend:
    """A Triton family's GEMM (:func:`flysearch.kernels.triton_families`; the split-K one by
    default), compiled by ``triton.compile`` in CPU workers, timed on one GPU."""
    from flysearch.evaluators._triton import (
        COMPILE_TIMEOUT_S,
        LAUNCH_TIMEOUT_S,
        compile_task,
        timer_task,
        timing_payload,
    )
    from flysearch.evaluators._triton import compile_payload as triton_compile_payload

    def compile_payload(config: Config, shape: Shape | None) -> dict[str, Any]:
        assert shape is not None, "the Triton backend needs a GEMM shape"
        return triton_compile_payload(config, shape, arch, family)

    def time_payload(config: Config, shape: Shape | None, best_ms: float | None) -> dict[str, Any]:
        assert shape is not None, "the Triton backend needs a GEMM shape"
        return timing_payload(config, shape, arch, protocol, best_ms, family)

    from flysearch.kernels import table_kernel, triton_compiler

    triton_compiler(family)  # an unknown family fails here, not in every compile worker
    env = {"TRITON_CACHE_DIR": cache_dir} if cache_dir else {}
    return LiveBackend("triton", table_kernel(family), compile_task, timer_task, compile_payload,
                       time_payload, env, gpu_env(gpu), COMPILE_TIMEOUT_S, LAUNCH_TIMEOUT_S,
                       warmup=warm_triton)


# -- FlyDSL ---------------------------------------------------------------------------------------


def flydsl_compile_task(payload: dict[str, Any]) -> dict[str, Any]:
    """Compile-only build for the AMD arch in a subprocess; resources read back (CPU worker)."""
    from flysearch.evaluators._flydsl import FlydslCompileEvaluator
    from flysearch.space import Config, Shape

    ev = FlydslCompileEvaluator(payload["factory"], payload["arch"],
                                timeout_s=payload.get("timeout_s", 120.0))
    compiled = ev.compile(Config.from_dict(payload["config"]), Shape(**payload["shape"]))
    extra = ev.resources(compiled)
    if compiled.outcome is Outcome.OK:
        return {"ok": True, "compile_s": compiled.compile_s, "detail": "", "extra": extra}
    return {"ok": False, "compile_s": compiled.compile_s, "detail": compiled.detail,
            "outcome": compiled.outcome.value, "extra": extra}


def flydsl_timer_task(payload: dict[str, Any]) -> dict[str, Any]:
    """Build on the AMD GPU, validate against the torch reference and time (the timer process).

    Not run on AMD hardware (see the module docstring).
    """
    import torch

    if payload["op"] == "info":
        import flydsl

        return {"device": torch.cuda.get_device_name(0), "versions": {
            "torch": torch.__version__, "flydsl": getattr(flydsl, "__version__", ""),
            "hip": str(getattr(torch.version, "hip", ""))}}
    from flysearch.evaluators._base import Compiled
    from flysearch.evaluators._flydsl import FlydslLiveEvaluator
    from flysearch.space import Config, Shape

    ev = FlydslLiveEvaluator(payload["factory"], payload["arch"])
    config, shape = Config.from_dict(payload["config"]), Shape(**payload["shape"])
    checked = Compiled(config, shape, Outcome.OK, payload.get("compile_s"), [])
    try:
        compiled = ev._compile_on_device(config, shape, checked)
    except Exception as exc:  # a build that fails on the device is a recorded failure
        return {"outcome": Outcome.COMPILE_FAILED.value, "time_ms": None, "bench_s": 0.0,
                "detail": str(exc)[:200], "extra": {}}
    m = ev.time(compiled)
    return {"outcome": m.outcome.value, "time_ms": m.time_ms, "bench_s": m.bench_s, "detail": m.detail,
            "extra": m.extra}


def flydsl_backend(factory: str, arch: str, *, gpu: str | int | None = None) -> LiveBackend:
    """A FlyDSL kernel factory (``module:function``) for an AMD arch (``gfx942``, ``gfx950``)."""

    def compile_payload(config: Config, shape: Shape | None) -> dict[str, Any]:
        assert shape is not None, "the FlyDSL backend needs a GEMM shape"
        return {"factory": factory, "arch": arch, "config": config.as_dict(), "shape": shape.as_dict()}

    def time_payload(config: Config, shape: Shape | None, best_ms: float | None) -> dict[str, Any]:
        return {"op": "time", **compile_payload(config, shape)}

    return LiveBackend("flydsl", factory.rsplit(":", 1)[-1], flydsl_compile_task, flydsl_timer_task,
                       compile_payload, time_payload, {}, gpu_env(gpu))


# -- a table played back in real time ------------------------------------------------------------


def simulated_compile_task(payload: dict[str, Any]) -> dict[str, Any]:
    """Sleep the recorded compile time (scaled); append the key to the compile log, if any.

    ``payload["crash"]`` ends the process abruptly (a compiler that segfaults).
    """
    if payload.get("crash"):
        os._exit(139)
    time.sleep(max(0.0, (payload.get("compile_s") or 0.0) * payload.get("scale", 1.0)))
    log = payload.get("log")
    if log:
        line = f"{payload['key']}\t{os.getpid()}\t{time.time():.6f}\n".encode()
        fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    if payload.get("outcome") == Outcome.COMPILE_FAILED.value:
        return {"ok": False, "compile_s": payload.get("compile_s"), "detail": payload.get("detail", "")}
    return {"ok": True, "compile_s": payload.get("compile_s"), "detail": ""}


def simulated_timer_task(payload: dict[str, Any]) -> dict[str, Any]:
    """Answer from the table row: sleep its timing seconds (scaled) and return its time with
    multiplicative log-normal noise seeded by (key, round)."""
    if payload["op"] == "info":
        return {"device": payload.get("device", "simulated"), "versions": {"simulated": "1"}, "bench_s": 0.0}
    time.sleep(max(0.0, (payload.get("bench_s") or 0.0) * payload.get("scale", 1.0)))
    outcome = payload["outcome"]
    time_ms = payload.get("time_ms")
    sigma = payload.get("noise", 0.0)
    if outcome == Outcome.OK.value and time_ms is not None and sigma > 0:
        seed = zlib.crc32(f"{payload['key']}|{payload.get('round', 0)}".encode())
        time_ms = time_ms * math.exp(random.Random(seed).gauss(0.0, sigma))
    return {"outcome": outcome, "time_ms": time_ms if outcome == Outcome.OK.value else None,
            "bench_s": payload.get("bench_s"), "detail": payload.get("detail", ""), "extra": {}}


def simulated_backend(table: GroundTruth, *, scale: float = 1.0, noise: float = 0.0,
                      compile_log: str | None = None, crash_keys: frozenset[str] = frozenset(),
                      default_bench_s: float = 0.02, gpu: str | None = None) -> LiveBackend:
    """Play *table* back in real time: a compile sleeps ``compile_s * scale``, a timing
    ``bench_s * scale`` (``default_bench_s`` when the table has none), and times get log-normal
    noise of *noise* (sigma). Configs in *crash_keys* kill their compile worker. The timer gets
    *gpu*'s variables as a device timer would (it uses no GPU): pools and worker servers treat it
    as that GPU's."""
    rounds: dict[str, int] = {}

    def compile_payload(config: Config, shape: Shape | None) -> dict[str, Any]:
        row = table.row(config.key)
        return {"key": config.key, "compile_s": row.compile_s or 0.0, "outcome": row.outcome,
                "detail": row.detail, "scale": scale, "log": compile_log, "crash": config.key in crash_keys}

    def time_payload(config: Config, shape: Shape | None, best_ms: float | None) -> dict[str, Any]:
        row = table.row(config.key)
        rounds[config.key] = rounds.get(config.key, -1) + 1
        return {"op": "time", "key": config.key, "outcome": row.outcome, "time_ms": row.time_ms,
                "bench_s": row.bench_s if row.bench_s is not None else default_bench_s, "scale": scale,
                "noise": noise, "round": rounds[config.key], "detail": row.detail}

    return LiveBackend("simulated", table.meta.kernel or "table", simulated_compile_task,
                       simulated_timer_task, compile_payload, time_payload, timer_env=gpu_env(gpu),
                       info_payload={"op": "info", "device": table.meta.device or "simulated"})
