"""The live Triton evaluator: compile in CPU worker processes, validate and time on the GPU.

Two kinds of process do the work, each behind a :class:`~flysearch.evaluators.WorkerPool`, so
that a compile or a launch that crashes or hangs is killed after its timeout and recorded as a
failure while the race goes on:

* **compile workers** (:func:`compile_task`) run ``triton.compile`` for a named target, with no GPU,
  and leave the binary in the Triton cache directory they share with the timer;
* **the timer** (:func:`timer_task`, one process that owns the GPU) loads each binary from that cache,
  checks it against an fp32 torch reference and times it (:mod:`flysearch.evaluators`).

Their tasks are frozen dataclasses (:class:`TritonCompileTask`, and the timer's ``TimeTask``,
``VendorTask`` and :class:`InfoTask`) and their answers the typed messages of
:mod:`flysearch.evaluators` (:class:`CompileResult`, :class:`TimerInfo`, :class:`Measurement`).
:class:`TritonEvaluator` is the one-config-at-a-time form of the :class:`Evaluator` contract (compile,
then time); :mod:`flysearch.race` and a live study drive the same two task functions as a pipeline.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from flysearch.evaluators._base import Compiled, Measurement
from flysearch.evaluators._gpu_bench import DEFAULT_TRITON_FAMILY, TimerTask, TimeTask
from flysearch.evaluators._messages import CompileResult, InfoTask, TimerInfo, measurement_from_json
from flysearch.evaluators._pool import WorkerPool
from flysearch.evaluators._worker_process import Retire
from flysearch.tables import Outcome

if TYPE_CHECKING:
    from flysearch.evaluators._gpu_bench import TimingProtocol
    from flysearch.space import Config, Shape

__all__ = [
    "COMPILE_TIMEOUT_S",
    "LAUNCH_TIMEOUT_S",
    "TritonCompileTask",
    "TritonEvaluator",
    "compile_request",
    "compile_task",
    "timer_task",
    "timing_request",
]

# NOTE(flysearch): the slowest compile seen for this kernel family (256x256 tiles, 4 stages) takes a
# few seconds; a minute means ptxas or the compiler is stuck. A timing task validates and times one
# config in well under a second, plus a few seconds of CUDA start-up on a fresh timer.
COMPILE_TIMEOUT_S = 120.0
LAUNCH_TIMEOUT_S = 60.0

# The H100/H200 limit Triton checks at load time (227 KiB); a binary over it can never launch.
_DEFAULT_MAX_SMEM = 227 * 1024


def compile_task(task: TritonCompileTask) -> CompileResult:
    """Compile one config into the Triton cache (runs in a CPU worker).

    A compiler exception, or a binary that needs more shared memory than ``task.max_smem``, is
    ``ok=False`` with the reason. The answer's notes hold the binary's shared memory
    (``shared``) and, for a build, whether Triton's cache held it (``cache_hit``).
    """
    import triton

    from flysearch.kernels import triton_compiler

    compile_config = triton_compiler(task.family)
    seen: dict[str, bool] = {}
    triton.knobs.compilation.listener = lambda **kw: seen.update(cache_hit=bool(kw.get("cache_hit")))
    start = time.perf_counter()
    try:
        kernel = compile_config(task.config, task.spec, task.arch)
    except Exception as exc:  # a config the compiler rejects is a result, not an error
        detail = f"{type(exc).__name__}: {str(exc).strip().splitlines()[-1] if str(exc).strip() else ''}"
        return CompileResult(False, time.perf_counter() - start, detail[:300], notes={"shared": 0})
    elapsed = time.perf_counter() - start
    shared = int(kernel.metadata.shared)
    if shared > task.max_smem:
        detail = f"out of resources: shared memory {shared} > {task.max_smem} bytes"
        return CompileResult(False, elapsed, detail, notes={"shared": shared})
    return CompileResult(True, elapsed, "", notes={"shared": shared,
                                                   "cache_hit": seen.get("cache_hit", False)})


def timer_task(task: TimerTask) -> TimerInfo | Measurement | Retire:
    """Run one GPU operation in the timer process (see :func:`gpu_bench.run_op`): describe the
    device (an :class:`InfoTask`), or validate and time a config or the vendor's GEMM (a
    measurement, its ``compile_s`` unset).

    A CUDA error can leave the context unusable, so after a failed launch the timer answers and
    then exits (:class:`Retire`); the pool starts a fresh one for the next task.
    """
    from flysearch.evaluators import _gpu_bench as gpu_bench

    start = time.perf_counter()
    answer = gpu_bench.run_op(task)
    # The GPU side answers dicts; here, at the process's edge, they become the typed messages.
    if isinstance(task, InfoTask):
        return TimerInfo.from_json({**answer, "bench_s": time.perf_counter() - start})  # the GPU's start-up
    measured = measurement_from_json(answer)
    return Retire(measured) if answer.get("fatal") else measured


class TritonEvaluator:
    """Compiles and times configs of a Triton family (the split-K one by default) one at a time.

    The compile runs in a worker process and the timing in a GPU timer process, each killed after
    its timeout; use :func:`flysearch.race.run_race` to race many configs in a pipeline.

    Args:
        arch: The target (``"sm_90"``).
        cache_dir: Triton cache directory shared by the workers and the timer (default: Triton's).
        protocol: The timing protocol (default :class:`gpu_bench.TimingProtocol`).
        compile_timeout_s: Seconds a compile may take before its worker is killed.
        launch_timeout_s: Seconds a validate-and-time task may take before the timer is killed.
        family: The Triton family (:func:`flysearch.kernels.triton_families`).
    """

    name = "triton"

    def __init__(
        self, *, arch: str = "sm_90", cache_dir: str | None = None,
        protocol: TimingProtocol | None = None, compile_timeout_s: float = COMPILE_TIMEOUT_S,
        launch_timeout_s: float = LAUNCH_TIMEOUT_S, family: str = DEFAULT_TRITON_FAMILY,
    ) -> None:
        from flysearch.kernels import triton_compiler

        triton_compiler(family)  # an unknown family fails here, not in a worker
        self.family = family
        self.arch = arch
        self.cache_dir = cache_dir
        self.protocol = protocol
        self.compile_timeout_s = compile_timeout_s
        self.launch_timeout_s = launch_timeout_s
        self._compiler: WorkerPool | None = None
        self._timer: WorkerPool | None = None
        self._n = 0

    def _env(self) -> dict[str, str]:
        return {"TRITON_CACHE_DIR": self.cache_dir} if self.cache_dir else {}

    def _pools(self) -> tuple[WorkerPool, WorkerPool]:
        if self._compiler is None or self._timer is None:
            if self.cache_dir:
                os.makedirs(self.cache_dir, exist_ok=True)
            self._compiler = WorkerPool(
                compile_task, workers=1, timeout_s=self.compile_timeout_s, env=self._env()
            )
            self._timer = WorkerPool(timer_task, workers=1, timeout_s=self.launch_timeout_s, env=self._env())
        return self._compiler, self._timer

    def close(self) -> None:
        for pool in (self._compiler, self._timer):
            if pool is not None:
                pool.close()
        self._compiler = self._timer = None

    def __enter__(self) -> TritonEvaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def compile(self, config: Config, shape: Shape | None) -> Compiled:
        if shape is None:
            raise ValueError("The Triton evaluator needs a GEMM shape.")
        compiler, _ = self._pools()
        self._n += 1
        spec = family_spec(self.family, shape, self.arch)
        compiler.submit(self._n, compile_request(config, shape, self.arch, self.family))
        (res,) = compiler.drain()
        built = CompileResult.of_task(res)
        if not built.ok:
            return Compiled(config, shape, Outcome.COMPILE_FAILED, built.compile_s, spec, built.detail)
        return Compiled(config, shape, Outcome.OK, built.compile_s, spec)

    def time(self, compiled: Compiled, *, best_ms: float | None = None) -> Measurement:
        if compiled.outcome is not Outcome.OK:
            return Measurement(compiled.outcome, None, compiled.compile_s, 0.0, compiled.detail)
        assert compiled.shape is not None
        _, timer = self._pools()
        self._n += 1
        timer.submit(self._n, timing_request(compiled.config, compiled.shape, self.arch, self.protocol,
                                             best_ms, self.family))
        (res,) = timer.drain()
        return CompileResult(True, compiled.compile_s).timed(res)


def family_spec(family: str, shape: Shape, arch: str, sms: int | None = None) -> str:
    """Which binary of Triton *family* *shape* needs on *arch* with *sms* SMs (``None``: the SMs of
    *arch*'s default device)."""
    from flysearch.kernels import triton_family
    from flysearch.space import get_arch

    return triton_family(family).spec_key(shape, sms or get_arch(arch).compute_units)


@dataclass(frozen=True)
class TritonCompileTask:
    """The compile task that builds one config of a Triton family (:func:`compile_task`).

    Attributes:
        config: The config's parameters.
        spec: Which binary of the family the shape needs (:func:`family_spec`).
        arch: The target.
        family: The Triton family.
        max_smem: Bytes of shared memory the target has (a binary that needs more is a failure).
    """

    config: dict[str, Any]
    spec: str
    arch: str = "sm_90"
    family: str = DEFAULT_TRITON_FAMILY
    max_smem: int = _DEFAULT_MAX_SMEM


def compile_request(
    config: Config, shape: Shape, arch: str, family: str = DEFAULT_TRITON_FAMILY, sms: int | None = None
) -> TritonCompileTask:
    """The compile task that builds *config* of Triton *family* for *shape*'s specialization on
    *arch* with *sms* SMs (:func:`family_spec`)."""
    return TritonCompileTask(config.as_dict(), family_spec(family, shape, arch, sms), arch, family)


def timing_request(
    config: Config, shape: Shape, arch: str, protocol: TimingProtocol | None, best_ms: float | None,
    family: str = DEFAULT_TRITON_FAMILY, sms: int | None = None,
) -> TimeTask:
    """The timer task that validates and times *config* of Triton *family* on *shape*."""
    return TimeTask(shape.as_dict(), config.as_dict(), family_spec(family, shape, arch, sms), arch,
                    asdict(protocol) if protocol is not None else None, best_ms, family)
