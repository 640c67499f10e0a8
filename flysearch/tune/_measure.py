"""Compile and time a user's kernel in this process: the :class:`~flysearch.evaluators.Evaluator`
a tuning study runs.

A kernel is reached through a *launcher*, which knows how to build one config and run it:

* :class:`TritonLauncher` for a ``@triton.jit`` function: ``build`` compiles the config without
  launching it (``fn.warmup``; Triton's cache makes a config compiled before, by any process on
  this machine, cost a cache read), ``run`` launches it as ``fn[grid](**arguments, **config)``
  would. Under ``TRITON_INTERPRET=1`` nothing is compiled and runs are interpreted on the CPU.
* :class:`CallLauncher` for any other callable (a FlyDSL ``@flyc.jit`` function, a CuPy or
  TileLang kernel, a CPU function): the config's values are passed as keyword arguments; ``build``
  is the first call (a JIT compiles then), ``run`` every later one.

Each compiled config is run once on a checked run (outputs against the reference, see
:class:`~flysearch.tune._workload.Workload`) and then timed: with CUDA events
(:func:`flysearch.evaluators.time_launches`) when an argument is a CUDA tensor, else with the host
clock, in batches whose median mean is the time. A config that fails to build is
``compile_failed``; one that raises while running is ``runtime_failed``; a wrong output is
``wrong_result``: recorded, never chosen. On an AMD GPU a config whose build spills, needs more LDS
than a CU has or fits no wave is ``rejected`` before it runs.

:meth:`Launcher.compile_for` compiles a config for an AMD arch on any machine, launching nothing
(what ``flysearch tune check`` runs; see :meth:`flysearch.tune.Tuner.check`).
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable
from typing import Any, Protocol

from flysearch.errors import AutotuneError
from flysearch.evaluators import (
    Compiled,
    KernelResources,
    Measurement,
    Outcome,
    TimingProtocol,
    amd_build,
    amd_verdict,
    compile_flydsl_for_amd,
    compile_triton_for_amd,
    flydsl_resources,
    is_flydsl_jit,
    time_launches,
)
from flysearch.space import ArchProfile, Config
from flysearch.tune._workload import Workload

__all__ = ["CallLauncher", "KernelEvaluator", "Launcher", "TritonLauncher", "time_host"]


class Launcher(Protocol):
    """Builds and runs one config of a kernel on a workload's arguments."""

    def build(self, config: dict[str, Any]) -> Any:
        """Compile *config* (raise if it cannot be built); the handle :meth:`run` takes."""

    def run(self, handle: Any, config: dict[str, Any]) -> None:
        """Run the built config once (asynchronously on a GPU)."""

    def resources(self, handle: Any) -> dict[str, Any]:
        """What the compiler reports of the built config (registers, spills, shared memory)."""

    def amd_resources(self, handle: Any) -> list[KernelResources]:
        """The built config's kernels' resources when it was built for an AMD GPU, else empty."""

    def compile_for(self, arch: str, config: dict[str, Any]) -> list[KernelResources]:
        """Compile *config* for the AMD *arch* without a GPU (nothing runs); its kernels' resources.
        Raises what the compiler raises for a config it cannot build."""


class TritonLauncher:
    """Builds and launches configs of a ``@triton.jit`` function on one call's arguments."""

    def __init__(self, fn: Any, grid: Any, arguments: dict[str, Any]) -> None:
        self.fn, self.grid, self.arguments = fn, grid, arguments
        self.interpreted = type(fn).__name__ == "InterpretedFunction"

    def build(self, config: dict[str, Any]) -> Any:
        if self.interpreted:
            return None
        return self.fn.warmup(grid=self.grid, **self.arguments, **config)

    def run(self, handle: Any, config: dict[str, Any]) -> None:
        self.fn.run(grid=self.grid, warmup=False, **self.arguments, **config)

    def resources(self, handle: Any) -> dict[str, Any]:
        if handle is None:
            return {}
        out = {"n_regs": getattr(handle, "n_regs", None), "n_spills": getattr(handle, "n_spills", None)}
        shared = getattr(getattr(handle, "metadata", None), "shared", None)
        if shared is not None:
            out["shared"] = shared
        return {k: v for k, v in out.items() if v is not None}

    def amd_resources(self, handle: Any) -> list[KernelResources]:
        asm = getattr(handle, "asm", None)
        return amd_build(handle).resources if isinstance(asm, dict) and "amdgcn" in asm else []

    def compile_for(self, arch: str, config: dict[str, Any]) -> list[KernelResources]:
        return compile_triton_for_amd(self.fn, arch, {**self.arguments, **config}).resources


class CallLauncher:
    """Builds and runs configs of a plain callable: ``fn(**arguments, **config)``."""

    def __init__(self, fn: Callable[..., Any], arguments: dict[str, Any]) -> None:
        self.fn, self.arguments = fn, arguments

    def build(self, config: dict[str, Any]) -> Any:
        self.fn(**self.arguments, **config)
        return None

    def run(self, handle: Any, config: dict[str, Any]) -> None:
        self.fn(**self.arguments, **config)

    def resources(self, handle: Any) -> dict[str, Any]:
        return {}

    def amd_resources(self, handle: Any) -> list[KernelResources]:
        return flydsl_resources(self.fn) if is_flydsl_jit(self.fn) else []

    def compile_for(self, arch: str, config: dict[str, Any]) -> list[KernelResources]:
        if not is_flydsl_jit(self.fn):
            name = getattr(self.fn, "__name__", type(self.fn).__name__)
            raise AutotuneError(f"{name} is neither a @triton.jit nor a FlyDSL @flyc.jit kernel, so it "
                                "cannot be compiled for an AMD arch without a GPU; check only those kernels.")
        return compile_flydsl_for_amd(self.fn, arch, {**self.arguments, **config})


def time_host(launch: Callable[[int], Any], protocol: TimingProtocol, sync: Callable[[], None]) -> tuple[
        float, dict[str, Any]]:
    """The time (ms) of ``launch(i)`` by the host clock: batches of repetitions lasting at least
    ``protocol.min_batch_ms`` each, the median of their means (for kernels that are not on a CUDA
    device: CPU functions, or devices whose runs *sync* waits for)."""
    t0 = time.perf_counter()
    for i in range(protocol.warmup):
        launch(i)
    sync()
    est_ms = max((time.perf_counter() - t0) * 1e3 / max(protocol.warmup, 1), 1e-4)
    reps = max(1, min(math.ceil(protocol.min_batch_ms / est_ms), protocol.max_launches // protocol.batches))
    means = []
    for _ in range(protocol.batches):
        t0 = time.perf_counter()
        for i in range(reps):
            launch(i)
        sync()
        means.append((time.perf_counter() - t0) * 1e3 / reps)
    median = statistics.median(means)
    return median, {"reps": reps, "batches": protocol.batches,
                    "spread": round((max(means) - min(means)) / median, 4) if median > 0 else 0.0}


class KernelEvaluator:
    """The evaluator of a tuning study: builds, checks and times configs of one kernel on one call.

    Built handles are kept by config key, so the finalists can be timed again without a compile.
    """

    def __init__(self, launcher: Launcher, workload: Workload, protocol: TimingProtocol,
                 arch: ArchProfile | None = None) -> None:
        self.launcher, self.workload, self.protocol, self.arch = launcher, workload, protocol, arch
        self.handles: dict[str, Any] = {}
        self.graphs: dict[str, tuple[Callable[[], Any], int] | None] = {}
        self.graphed = 0

    def compile(self, config: Config, shape: Any) -> Compiled:
        t0 = time.perf_counter()
        params = config.as_dict()
        try:
            handle = self.launcher.build(params)
        except Exception as exc:  # a config that does not build is an outcome, not an error
            return Compiled(config, None, Outcome.COMPILE_FAILED, time.perf_counter() - t0,
                            detail=_reason(exc))
        compile_s = time.perf_counter() - t0
        if self.arch is not None and self.arch.vendor == "amd":  # built on an AMD GPU: judge it first
            reason = amd_verdict(self.launcher.amd_resources(handle), self.arch)
            if reason is not None:
                return Compiled(config, None, Outcome.REJECTED, compile_s, detail=f"resource:{reason}")
        self.handles[config.key] = handle
        return Compiled(config, None, Outcome.OK, compile_s, artifact=handle)

    def time(self, compiled: Compiled) -> Measurement:
        params, handle = compiled.config.as_dict(), compiled.artifact
        t0 = time.perf_counter()
        extra = self.launcher.resources(handle)
        try:
            self.workload.before_check()
            self.launcher.run(handle, params)
            wrong = self.workload.check()
            if wrong:
                return Measurement(Outcome.WRONG_RESULT, None, compiled.compile_s,
                                   time.perf_counter() - t0, wrong, extra)
            ms, info = self.time_ms(handle, params)
        except Exception as exc:
            return Measurement(Outcome.RUNTIME_FAILED, None, compiled.compile_s, time.perf_counter() - t0,
                               _reason(exc), extra)
        finally:
            self.workload.restore()
        extra.update(info)
        return Measurement(Outcome.OK, ms, compiled.compile_s, time.perf_counter() - t0, extra=extra)

    def time_ms(self, handle: Any, params: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """Time a built config (no check): the median ms and how it was timed."""
        workload, run = self.workload, self.launcher.run

        def launch(_i: int) -> None:
            workload.zero()
            run(handle, params)

        if workload.on_gpu:
            return time_launches(launch, self.protocol)
        return time_host(launch, self.protocol, workload.sync)

    def done(self) -> None:
        """Leave the call's arguments as ``triton.autotune`` does after tuning: ``restore_value``
        ones as they were and ``reset_to_zero`` ones zeroed, so the launch that follows starts as a
        timed run does (an accumulating kernel adds to zeros, not to the last timed run's sum)."""
        self.workload.restore()
        self.workload.zero()

    def time_again(self, key: str, params: dict[str, Any]) -> float | None:
        """One more timing of a config built before (a finalist's round); ``None`` if it fails.

        On a CUDA device a finalist's launches are captured once in a CUDA graph of enough launches
        to fill a batch, and each round times replays of that graph, so that the host's launch cost
        and its jitter leave the comparison; a kernel that cannot be captured is timed as in the
        search."""
        try:
            if key not in self.handles:
                self.handles[key] = self.launcher.build(params)
            handle = self.handles[key]
            if self.workload.on_gpu:
                if key not in self.graphs:
                    self.graphs[key] = self._capture(handle, params)
                graph = self.graphs[key]
                if graph is not None:
                    replay, n = graph
                    return time_launches(lambda _i: replay(), self.protocol)[0] / n
            return self.time_ms(handle, params)[0]
        except Exception:
            return None
        finally:
            self.workload.restore()

    def _capture(self, handle: Any, params: dict[str, Any]) -> tuple[Callable[[], Any], int] | None:
        """A CUDA graph of *n* runs of a built config and *n* (``None`` if it cannot be captured)."""
        import torch

        workload, run = self.workload, self.launcher.run
        est_ms, _ = self.time_ms(handle, params)
        n = max(1, min(64, math.ceil(self.protocol.min_batch_ms / max(est_ms, 1e-4))))
        graph = torch.cuda.CUDAGraph()
        try:
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                workload.zero()
                run(handle, params)
            torch.cuda.current_stream().wait_stream(side)
            torch.cuda.synchronize()
            with torch.cuda.graph(graph):
                for _ in range(n):
                    workload.zero()
                    run(handle, params)
            torch.cuda.synchronize()
        except Exception:
            with contextlib.suppress(Exception):
                torch.cuda.synchronize()
            return None
        self.graphed += 1
        return graph.replay, n


def _reason(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".splitlines()
    return (text[0] if text else type(exc).__name__)[:300]
