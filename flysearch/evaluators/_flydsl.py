"""FlyDSL evaluators: compile-only for AMD targets on any CPU, and live on an AMD GPU.

A kernel is given as a factory ``module:function`` with the contract::

    factory(shape: Shape, device: str = "cpu") -> call
    call.fn          the @flyc.jit launcher
    call.args        its positional arguments (tensors on *device*, ints)
    call.output      the tensor the kernel writes
    call.reference   () -> the torch reference of the output

The space's parameters reach the kernel through ``flydsl.Config`` (see
:mod:`flysearch.kernels`): ``num_warps`` and the tile constexprs as keywords,
``waves_per_eu`` as a compiler option. Every compile runs in its own subprocess with a timeout, so
a hang or an LLVM abort is a recorded ``COMPILE_FAILED``. The compiled artifact's resources (VGPR,
AGPR, SGPR, LDS, scratch, spills) are read back; a config that spills or overflows LDS is
``REJECTED`` before any timing, counted like a constraint rejection (``detail`` names the reason).

What ran where: the compile-only path runs in CI on x86-64 CPUs for gfx942 and gfx950. The live
path (:class:`FlydslLiveEvaluator`'s GPU calls: launching, validating and timing with flydsl's own
``do_bench``) has **not run on AMD hardware**: no AMD GPU was available to this project.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flysearch._lifeline import for_subprocess
from flysearch.evaluators._base import Compiled, Measurement, compile_only_measurement
from flysearch.evaluators._flydsl_worker import MARKER, load_factory
from flysearch.evaluators._resources import (
    KernelResources,
    occupancy,
    parse_kernel_metadata,
    resource_reject_reason,
)
from flysearch.evaluators._toolchain import compile_env
from flysearch.kernels import ConfigMappingError, FlydslConfigSpec, to_flydsl_config
from flysearch.space import get_arch
from flysearch.tables import Outcome

if TYPE_CHECKING:
    from flysearch.space import Config, Shape

__all__ = [
    "CompileResult",
    "FlydslCompileEvaluator",
    "FlydslLiveEvaluator",
    "compile_flydsl_for_amd",
    "compile_in_subprocess",
    "flydsl_resources",
    "is_flydsl_jit",
    "relative_error",
]


@dataclass(frozen=True)
class CompileResult:
    """One subprocess compile: success, wall time, resources per kernel, or the error line."""

    ok: bool
    compile_s: float
    resources: list[KernelResources] = field(default_factory=list)
    error: str = ""


def compile_in_subprocess(
    factory: str, shape: Shape, spec: FlydslConfigSpec, arch: str, *, timeout_s: float = 120.0,
    check_params: list[str] | None = None, compile_only: bool = True,
) -> CompileResult:
    """Compile one config of *factory*'s kernel for *arch* in a fresh subprocess."""
    with tempfile.TemporaryDirectory(prefix="flysearch-flydsl-") as cache_dir:
        request = {
            "factory": factory, "shape": shape.as_dict(), "kwargs": spec.kwargs,
            "num_warps": spec.num_warps, "waves_per_eu": spec.waves_per_eu,
            "check_params": check_params, "cache_dir": cache_dir,
        }
        env = compile_env(arch, cache_dir, compile_only=compile_only)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [*sys.path, env.get("PYTHONPATH", "")]))
        lifeline, fds = for_subprocess()  # the compile ends with this process, however it ends
        start = time.perf_counter()
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "flysearch.evaluators._flydsl_worker"], input=json.dumps(request),
                capture_output=True, text=True, timeout=timeout_s, env={**env, **lifeline}, pass_fds=fds,
            )
        except subprocess.TimeoutExpired:
            return CompileResult(False, time.perf_counter() - start, error=f"timeout after {timeout_s:g} s")
        wall = time.perf_counter() - start
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith(MARKER)]
    if not lines:
        tail = (proc.stderr.strip().splitlines() or [f"exit code {proc.returncode}"])[-1]
        return CompileResult(False, wall, error=f"compiler process died (exit {proc.returncode}): {tail}")
    result = json.loads(lines[-1][len(MARKER):])
    if not result["ok"]:
        return CompileResult(False, wall, error=result["error"])
    return CompileResult(True, result["compile_s"], [KernelResources(**r) for r in result["resources"]])


def is_flydsl_jit(fn: Any) -> bool:
    """Whether *fn* is a FlyDSL ``@flyc.jit`` function."""
    kind = type(fn)
    return kind.__module__.startswith("flydsl.") and kind.__name__ == "JitFunction"


@contextlib.contextmanager
def _compile_only_env(arch: str) -> Iterator[None]:
    """This process's environment set for a FlyDSL compile-only build for *arch* (see
    :func:`compile_env`) inside the block, restored after it."""
    with tempfile.TemporaryDirectory(prefix="flysearch-flydsl-") as cache_dir:
        before = dict(os.environ)
        os.environ.update(compile_env(arch, cache_dir, compile_only=True))
        try:
            yield
        finally:
            os.environ.clear()
            os.environ.update(before)


def flydsl_resources(fn: Any) -> list[KernelResources]:
    """The resources of the last specialization the ``@flyc.jit`` *fn* compiled (or found in its
    cache) in this process; empty when it compiled none."""
    # NOTE(flysearch): flydsl 0.5 keeps the last artifact on the JitFunction (_last_compiled) and its
    # IR text on the artifact (_ir_text, what its disk cache pickles); neither is public API.
    last = getattr(fn, "_last_compiled", None)
    ir_text = getattr(last[1], "_ir_text", "") if last else ""
    return parse_kernel_metadata(ir_text)


def compile_flydsl_for_amd(fn: Any, arch: str, arguments: dict[str, Any]) -> list[KernelResources]:
    """Compile the ``@flyc.jit`` *fn* for the AMD *arch* in this process, on any machine: called
    with *arguments* (its arguments and constexprs by name) under ``COMPILE_ONLY=1`` it traces and
    compiles but launches nothing (tensors may live on the CPU). Its kernels' resources.

    Raises:
        ToolchainError: no ld.lld >= 19 on this machine.
        Exception: whatever flydsl raises for a config it cannot build.
    """
    with _compile_only_env(arch):
        fn(**arguments)
    resources = flydsl_resources(fn)
    if not resources:
        raise RuntimeError("the compile left no kernel metadata")
    return resources


class FlydslCompileEvaluator:
    """Compiles configs of a FlyDSL kernel for an AMD arch on the CPU and reads their resources.

    Args:
        factory: The kernel factory, ``"module:function"``.
        arch: ``"gfx942"`` or ``"gfx950"`` (any AMD arch profile).
        space_params: The space's parameter names; the first compile checks that each reaches the
            kernel or the compiler and raises :class:`ConfigMappingError` if one does not.
        timeout_s: Seconds a compile may take before it is killed and recorded as failed.
    """

    name = "flydsl-compile"

    def __init__(self, factory: str, arch: str, *, space_params: list[str] | None = None,
                 timeout_s: float = 120.0) -> None:
        self.factory = factory
        self.arch = get_arch(arch)
        if self.arch.vendor != "amd":
            raise ConfigMappingError(f"FlyDSL targets AMD archs; {arch!r} is {self.arch.vendor}.")
        self.space_params = space_params
        self.timeout_s = timeout_s
        self._checked = space_params is None

    def compile(self, config: Config, shape: Shape | None) -> Compiled:
        if shape is None:
            raise ValueError("A FlyDSL GEMM compile needs a shape.")
        spec = to_flydsl_config(config)
        check = None if self._checked else list(self.space_params or [])
        result = compile_in_subprocess(self.factory, shape, spec, self.arch.name,
                                       timeout_s=self.timeout_s, check_params=check)
        for kind in ("mapping: ", "factory: "):  # the kernel cannot take the space's configs at all
            if result.error.startswith(kind):
                raise ConfigMappingError(result.error.removeprefix(kind))
        self._checked = self._checked or result.ok
        if not result.ok:
            return Compiled(config, shape, Outcome.COMPILE_FAILED, result.compile_s, [], result.error)
        reason = resource_reject_reason(result.resources, self.arch)
        outcome = Outcome.OK if reason is None else Outcome.REJECTED
        return Compiled(config, shape, outcome, result.compile_s, result.resources,
                        f"resource:{reason}" if reason else "")

    def resources(self, compiled: Compiled) -> dict[str, Any]:
        """The first kernel's resources plus its occupancy (waves per SIMD)."""
        if not compiled.artifact:
            return {}
        res: KernelResources = compiled.artifact[0]
        return {**res.as_dict(), "occupancy": occupancy(res, self.arch)}

    def time(self, compiled: Compiled) -> Measurement:
        """Compile-only: there is no GPU to time on; the measurement carries the resources."""
        return compile_only_measurement(compiled, self.resources(compiled))


def relative_error(output: Any, reference: Any) -> float:
    """``max|out - ref| / max|ref|`` in float64; NaN or Inf anywhere in *output* gives ``inf``."""
    import torch

    out = output.detach().to(torch.float64)
    ref = reference.detach().to(torch.float64)
    if out.shape != ref.shape or not torch.isfinite(out).all():
        return float("inf")
    scale = ref.abs().max().item() or 1.0
    return (out - ref).abs().max().item() / scale


class FlydslLiveEvaluator(FlydslCompileEvaluator):
    """Compiles, validates and times FlyDSL configs on an AMD GPU (the arch comes from the device).

    Validation poisons the output with NaN, launches once and compares with the factory's
    reference by :func:`relative_error`; a config above *rtol* is ``WRONG_RESULT`` and can never
    win. Timing uses ``flydsl.autotune.do_bench`` with *warmup* and *rep*.

    Not run on AMD hardware yet (see the module docstring).
    """

    name = "flydsl"

    def __init__(self, factory: str, arch: str, *, space_params: list[str] | None = None,
                 timeout_s: float = 120.0, rtol: float = 2e-2, warmup: int = 10, rep: int = 100) -> None:
        super().__init__(factory, arch, space_params=space_params, timeout_s=timeout_s)
        self.rtol, self.warmup, self.rep = rtol, warmup, rep

    def compile(self, config: Config, shape: Shape | None) -> Compiled:
        checked = super().compile(config, shape)  # resources and rejection, in a subprocess
        if checked.outcome is not Outcome.OK:
            return checked
        try:
            return self._compile_on_device(config, shape, checked)
        except Exception as exc:  # a build that fails here is a recorded failure
            return Compiled(config, shape, Outcome.COMPILE_FAILED, checked.compile_s, [], str(exc)[:200])

    def _compile_on_device(self, config: Config, shape: Shape | None, checked: Compiled) -> Compiled:
        import flydsl.compiler as flyc

        spec = to_flydsl_config(config)
        call = load_factory(self.factory)(shape, device="cuda")
        built = spec.build()
        opts = built.compiler_opts()
        compiler = flyc.compile[opts] if opts else flyc.compile
        fn = compiler(call.fn, *call.args, **built.all_kwargs())
        return Compiled(config, shape, Outcome.OK, checked.compile_s, (fn, call, checked.artifact))

    def time(self, compiled: Compiled) -> Measurement:
        if compiled.outcome is not Outcome.OK:
            return super().time(compiled)
        import torch
        from flydsl.autotune import do_bench

        fn, call, resources = compiled.artifact
        extra = self.resources(Compiled(compiled.config, compiled.shape, artifact=resources))
        start = time.perf_counter()
        try:
            call.output.fill_(float("nan"))
            fn(*call.args)
            torch.cuda.synchronize()
            err = relative_error(call.output, call.reference())
            if err > self.rtol:
                return Measurement(Outcome.WRONG_RESULT, None, compiled.compile_s,
                                   time.perf_counter() - start, f"relative error {err:.3g}", extra)
            ms = float(do_bench(lambda: fn(*call.args), warmup=self.warmup, rep=self.rep))
        except Exception as exc:
            return Measurement(Outcome.RUNTIME_FAILED, None, compiled.compile_s,
                               time.perf_counter() - start, str(exc)[:200], extra)
        return Measurement(Outcome.OK, ms, compiled.compile_s, time.perf_counter() - start, "",
                           {**extra, "rel_err": err})
