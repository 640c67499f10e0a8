"""``triton-amd-compile``: aiter's Triton GEMM compiled for an AMD target on any CPU, resources read.

Triton 3.6 from PyPI compiles for ``gfx942`` and ``gfx950`` with no GPU and no external linker
(``triton.compile(..., target=GPUTarget("hip", arch, 64))``). What is compiled is aiter's
``_gemm_a16_w16_kernel`` (``aiter.ops.triton._triton_kernels.gemm_a16w16``, the kernel behind
``aiter.ops.triton.gemm_a16w16``) as that launch would compile it for a (config, shape):

* the constexprs aiter's ``_get_config`` derives: ``SPLITK_BLOCK_SIZE = cdiv(K, NUM_KSPLIT)``, and a
  ``BLOCK_SIZE_K`` wider than one split clamped to the split's power of two (a quarter of it when
  that overshoots), at least 16 (:func:`flysearch.kernels.aiter_triton_launch_constexprs`, the
  clamp the space's record of aiter's shipped configs applies too);
* ``EVEN_K`` and ``GRID_MN`` from the kernel's own ``@triton.heuristics``, called;
* the signature, constants and attributes from Triton's own launch binder, given stand-ins for the
  tensors the launch passes (``x[M, K]``, ``w[N, K]`` transposed, and ``y[M, N]`` or, with split-K,
  the fp32 partials ``[NUM_KSPLIT, M, N]``): strides of 1 become constants, ints and pointers
  divisible by 16 get ``tt.divisibility``, buffers under 2 GiB the 32-bit pointer range. This
  matters: the same config compiled with plain ``i32`` strides can spill where the launch does not;
* the compiler options ``num_warps``, ``num_stages``, ``waves_per_eu``, ``matrix_instr_nonkdim``
  and ``kpack`` from the config.

Split-K's second kernel (the reduction of the partials) is small and is not compiled.

Each compile runs in a worker process of a :class:`~flysearch.evaluators.WorkerPool` with a timeout,
against a Triton cache of its own that is always recompiled and deleted on :meth:`close`: an
exception is a recorded ``COMPILE_FAILED``, and so is a compile that hangs (killed after its
timeout) or kills its process. The resources (VGPR, AGPR, SGPR, LDS, scratch, spills) are read from
the compiled code object's notes (:func:`~flysearch.evaluators._resources.parse_amdgcn_metadata`),
with a digest of the code itself (:func:`code_digest`: two configs with the same digest compile to
the same instructions);
a config that spills, needs more LDS than the arch has, or fits no wave on a SIMD is ``REJECTED``
(``detail`` ``resource:<reason>``) and never reaches a timer.

Example:
    >>> from flysearch.evaluators import TritonAmdCompileEvaluator
    >>> from flysearch.space import Config, Shape
    >>> cfg = Config.from_dict(dict(BLOCK_SIZE_M=64, BLOCK_SIZE_N=128, BLOCK_SIZE_K=128,
    ...     GROUP_SIZE_M=1, NUM_KSPLIT=1, num_warps=4, num_stages=2, waves_per_eu=2,
    ...     matrix_instr_nonkdim=16, kpack=1, cache_modifier=".cg"))  # doctest: +SKIP
    >>> with TritonAmdCompileEvaluator("gfx942") as ev:  # doctest: +SKIP
    ...     ev.resources(ev.compile(cfg, Shape(16, 4096, 4096)))["vgpr"]
    214
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flysearch.errors import ToolchainError
from flysearch.evaluators._base import Compiled, Measurement, compile_only_measurement
from flysearch.evaluators._pool import WorkerPool
from flysearch.evaluators._resources import (
    KernelResources,
    amd_verdict,
    parse_amdgcn_metadata,
    reported_occupancy,
    resource_extra,
)
from flysearch.kernels import (
    ConfigMappingError,
    aiter_triton_kernel,
    aiter_triton_launch_constexprs,
    aiter_triton_source,
    triton_bound_source,
)
from flysearch.space import get_arch
from flysearch.tables import Outcome

if TYPE_CHECKING:
    from flysearch.space import Config, Shape

__all__ = [
    "AMD_COMPILE_TIMEOUT_S",
    "AmdBuild",
    "TritonAmdCompileEvaluator",
    "amd_build",
    "amd_compile_fix",
    "amd_compile_task",
    "bound_source",
    "code_digest",
    "compile_triton_for_amd",
    "smoke_compile",
]

# NOTE(flysearch): aiter's GEMM compiles for AMD in 0.1-2.7 s on one CPU core (median 0.2-0.5 s,
# lab/benchmarks/amd_triton_resources.py); a minute means LLVM is stuck (the other evaluators' limit).
AMD_COMPILE_TIMEOUT_S = 120.0
_TRITON_SERIES = "3.6"
# The smallest config of aiter's GEMM (one wave, one stage) on a shape of one tile: ~0.2 s a compile.
SMOKE_CONFIG = {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 16, "BLOCK_SIZE_K": 32, "num_warps": 1, "num_stages": 1}
SMOKE_SHAPE = {"M": 16, "N": 16, "K": 32, "dtype": "bf16"}


def code_digest(asm: str) -> str:
    """sha256 (hex) of the amdgcn *asm* without its comment lines and without the lines that name
    the waves-per-EU hint (``amdgpu-waves-per-eu`` attributes and notes): equal digests mean the
    same instructions, whatever ``waves_per_eu`` was asked for.

    Example:
        >>> a = "v_add_f32 v0, v1, v2\\n; Occupancy: 4\\n.amdgpu_waves_per_eu 2"
        >>> code_digest(a) == code_digest("v_add_f32 v0, v1, v2\\n; Occupancy: 2")
        True
    """
    code = "\n".join(line for line in asm.splitlines()
                     if not line.lstrip().startswith(";") and "waves" not in line)
    return hashlib.sha256(code.encode()).hexdigest()


def kernel_source(config: Mapping[str, Any], shape: Shape, arch: str) -> tuple[Any, dict[str, Any]]:
    """The ``ASTSource`` and compiler options aiter's launch of *config* at *shape* compiles for
    the AMD *arch* (see the module docstring)."""
    return aiter_triton_source(config, shape, amd_target(arch))


def bound_source(fn: Any, arch: str, args: Sequence[Any],
                 kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """The ``ASTSource`` and compiler options of ``fn[grid](*args, **kwargs)`` compiled for the AMD
    *arch*: the launch's own binder specializes the arguments as it would on that GPU."""
    return triton_bound_source(fn, amd_target(arch), args, kwargs)


def compile_triton_for_amd(fn: Any, arch: str, arguments: dict[str, Any]) -> AmdBuild:
    """Compile the ``@triton.jit`` *fn* for the AMD *arch* (``"gfx942"``) on any machine, as a
    launch with *arguments* (its arguments, constexprs and launch options by name) would compile
    it there; nothing is launched. Its resources, LLVM's occupancy estimate and its code's digest.

    Raises:
        Exception: whatever the compiler raises for a config it cannot build.
    """
    import triton

    source, options = bound_source(fn, arch, (), dict(arguments))
    return amd_build(triton.compile(source, target=amd_target(arch), options=options))


def amd_build(kernel: Any) -> AmdBuild:
    """What a Triton ``CompiledKernel`` for AMD holds: :class:`AmdBuild` from its amdgcn."""
    asm = kernel.asm["amdgcn"]
    return AmdBuild(parse_amdgcn_metadata(asm, int(kernel.metadata.shared)), reported_occupancy(asm),
                    code_digest(asm))


@dataclass(frozen=True)
class AmdBuild:
    """What a compile leaves: each kernel's resources, LLVM's own occupancy estimate, and the
    :func:`code_digest` of the code."""

    resources: list[KernelResources] = field(default_factory=list)
    llvm_occupancy: int | None = None
    code_sha256: str | None = None


def warm_worker() -> None:
    """A compile worker's start: import Triton, torch (Triton's AMD backend imports it to
    specialize pointers) and aiter's kernel, so that the first compile times the compile alone."""
    import torch  # noqa: F401
    import triton  # noqa: F401

    aiter_triton_kernel()


def amd_compile_task(payload: dict[str, Any]) -> dict[str, Any]:
    """Compile one config for an AMD arch (runs in a worker process).

    Args:
        payload: ``{"config": {...}, "shape": {...}, "arch": "gfx942"}``.

    Returns:
        ``{"ok", "compile_s", "detail", "resources", "llvm_occupancy", "code_sha256"}``; an
        exception of the compiler is ``ok=False`` with its last line.
    """
    import triton

    from flysearch.space import Shape

    shape = Shape(**payload["shape"])
    start = time.perf_counter()
    try:
        source, options = kernel_source(payload["config"], shape, payload["arch"])
        kernel = triton.compile(source, target=amd_target(payload["arch"]), options=options)
    except Exception as exc:  # a config the compiler rejects is a result, not an error
        text = str(exc).strip()
        detail = f"{type(exc).__name__}: {text.splitlines()[-1] if text else ''}"
        return {"ok": False, "compile_s": time.perf_counter() - start, "detail": detail[:300]}
    elapsed = time.perf_counter() - start
    build = amd_build(kernel)
    if not build.resources:
        return {"ok": False, "compile_s": elapsed, "detail": "the compiled code has no kernel metadata"}
    return {"ok": True, "compile_s": elapsed, "detail": "",
            "resources": [r.as_dict() for r in build.resources], "llvm_occupancy": build.llvm_occupancy,
            "code_sha256": build.code_sha256}


def amd_target(arch: str) -> Any:
    """Triton's ``GPUTarget`` of an AMD arch (``"gfx942"``): HIP, wave size 64."""
    from triton.backends.compiler import GPUTarget

    return GPUTarget("hip", arch, 64)


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def amd_compile_fix() -> str | None:
    """What this Python lacks for ``triton-amd-compile`` as the exact ``pip install``, or ``None``."""
    missing = []
    triton = _version("triton")
    if triton is None or not triton.startswith(f"{_TRITON_SERIES}."):
        missing.append(f"'triton>={_TRITON_SERIES},<3.7'")
    if _version("amd-aiter") is None:
        missing.append("amd-aiter")
    if _version("torch") is None:
        missing.append("torch")
    return f"pip install {' '.join(missing)}" if missing else None


def _cache_env(cache_dir: str) -> dict[str, str]:
    """Workers compile into *cache_dir* and never answer from a cache (compile seconds are real)."""
    return {"TRITON_CACHE_DIR": cache_dir, "TRITON_ALWAYS_COMPILE": "1"}


def smoke_compile(archs: Iterable[str] = ("gfx942", "gfx950"), *, timeout_s: float = 60.0) -> dict[str, str]:
    """Compile one tiny config of aiter's GEMM per arch in one worker process (what ``flysearch
    doctor`` checks): arch -> ``""`` when it compiled, else why not.

    Raises:
        ToolchainError: triton 3.6, amd-aiter or torch is missing (the message is the fix).
    """
    fix = amd_compile_fix()
    if fix:
        raise ToolchainError(f"triton-amd-compile cannot run in this Python; {fix}.")
    archs = list(archs)
    with tempfile.TemporaryDirectory(prefix="flysearch-triton-amd-") as cache, WorkerPool(
        amd_compile_task, workers=1, timeout_s=timeout_s, env=_cache_env(cache), initializer=warm_worker,
    ) as pool:
        for arch in archs:
            pool.submit(arch, {"config": SMOKE_CONFIG, "shape": SMOKE_SHAPE, "arch": arch})
        results = {r.task_id: r for r in pool.drain(timeout=timeout_s * (1 + len(archs)))}
    out = {}
    for arch in archs:
        res = results.get(arch)
        if res is None or not res.ok:
            out[arch] = f"compile {res.status}: {res.detail}" if res else "no answer"
        else:
            out[arch] = "" if res.value["ok"] else res.value["detail"]
    return out


class TritonAmdCompileEvaluator:
    """Compiles configs of aiter's Triton GEMM for an AMD arch on the CPU and reads their resources.

    Args:
        arch: ``"gfx942"`` or ``"gfx950"`` (any AMD arch profile Triton's HIP backend knows).
        timeout_s: Seconds a compile may take before its worker is killed and it is recorded failed.
        workers: Compile worker processes (:meth:`compile_many` keeps them all busy).
        task: The module-level function the workers run on each payload (default
            :func:`amd_compile_task`; a test passes one that hangs or raises).

    Raises:
        ToolchainError: triton 3.6, amd-aiter or torch is missing (the message is the fix).
        ConfigMappingError: *arch* is not an AMD arch.
    """

    name = "triton-amd-compile"

    def __init__(self, arch: str, *, timeout_s: float = AMD_COMPILE_TIMEOUT_S, workers: int = 1,
                 task: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> None:
        self.arch = get_arch(arch)
        if self.arch.vendor != "amd":
            raise ConfigMappingError(f"triton-amd-compile targets AMD archs; {arch!r} is {self.arch.vendor}.")
        fix = amd_compile_fix() if task is None else None
        if fix:
            raise ToolchainError(f"triton-amd-compile cannot run in this Python; {fix}.")
        self.timeout_s = timeout_s
        self.workers = workers
        self.task = task or amd_compile_task
        self._pool: WorkerPool | None = None
        self._cache: str | None = None
        self._n = 0

    def _workers(self) -> WorkerPool:
        if self._pool is None:
            self._cache = tempfile.mkdtemp(prefix="flysearch-triton-amd-")
            env = _cache_env(self._cache)
            self._pool = WorkerPool(self.task, workers=self.workers, timeout_s=self.timeout_s, env=env,
                                    initializer=warm_worker if self.task is amd_compile_task else None)
        return self._pool

    def close(self) -> None:
        """Stop the workers and delete their Triton cache."""
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        if self._cache is not None:
            shutil.rmtree(self._cache, ignore_errors=True)
            self._cache = None

    def __enter__(self) -> TritonAmdCompileEvaluator:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def compile(self, config: Config, shape: Shape | None) -> Compiled:
        """Compile *config* for *shape*; a failure is returned, never raised."""
        return self.compile_many([config], shape)[0]

    def compile_many(self, configs: Iterable[Config], shape: Shape | None,
                     progress: Callable[[Compiled], None] | None = None) -> list[Compiled]:
        """Compile *configs* on all workers at once; results in the order of *configs*, each
        passed to *progress* as it comes in.

        Raises:
            ConfigMappingError: a config has keys aiter's GEMM does not take (before any compile).
        """
        if shape is None:
            raise ValueError("An aiter GEMM compile needs a shape.")
        configs = list(configs)
        for config in configs:
            aiter_triton_launch_constexprs(config.as_dict(), shape)
        pool, first = self._workers(), self._n
        for config in configs:
            self._n += 1
            pool.submit(self._n, {"config": config.as_dict(), "shape": shape.as_dict(),
                                  "arch": self.arch.name})
        out: dict[int, Compiled] = {}
        while len(out) < len(configs):
            for res in pool.poll(timeout=1.0):
                i = int(res.task_id) - first - 1
                out[i] = self._compiled(configs[i], shape, res)
                if progress is not None:
                    progress(out[i])
        return [out[i] for i in range(len(configs))]

    def _compiled(self, config: Config, shape: Shape, res: Any) -> Compiled:
        if not res.ok or not res.value["ok"]:
            detail = res.value["detail"] if res.ok else f"compile {res.status}: {res.detail}"
            compile_s = res.value["compile_s"] if res.ok else res.elapsed_s
            return Compiled(config, shape, Outcome.COMPILE_FAILED, compile_s, AmdBuild(), detail)
        build = AmdBuild([KernelResources(**r) for r in res.value["resources"]],
                         res.value.get("llvm_occupancy"), res.value.get("code_sha256"))
        reason = amd_verdict(build.resources, self.arch)
        outcome = Outcome.OK if reason is None else Outcome.REJECTED
        return Compiled(config, shape, outcome, res.value["compile_s"], build,
                        f"resource:{reason}" if reason else "")

    def resources(self, compiled: Compiled) -> dict[str, Any]:
        """The kernel's resources under the cost model's names (``vgpr``, ``agpr``, ``sgpr``,
        ``lds_bytes``, ``spills``, ``occupancy``), the rest of :class:`KernelResources`, LLVM's
        occupancy estimate (``llvm_occupancy``) and the code's :func:`code_digest`
        (``code_sha256``); empty for a failed compile."""
        build = compiled.artifact
        if not isinstance(build, AmdBuild) or not build.resources:
            return {}
        return {**resource_extra(build.resources[0], self.arch), "llvm_occupancy": build.llvm_occupancy,
                "code_sha256": build.code_sha256}

    def time(self, compiled: Compiled) -> Measurement:
        """Compile-only: there is no GPU to time on; the measurement carries the resources."""
        return compile_only_measurement(compiled, self.resources(compiled))
