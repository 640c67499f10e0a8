"""GPU side of the live evaluator: inputs, reference, validation and timing (runs in the timer).

Everything here runs in the one process that owns the GPU (imported lazily: torch and Triton are
not needed elsewhere). Per shape the timer allocates **rotating input sets** whose total size is a
few times the L2 cache, so that no launch finds its operands in L2 from the previous one, and fp32
references for the first few sets (``A.float() @ W.float().T`` with TF32 off).

A config is **validated** before it is timed: the output is filled with NaN, the kernel runs once on
a rotating set, and ``||C - ref|| / ||ref||`` must be finite and under the tolerance; any unwritten
element leaves a NaN and fails. A wrong result is :attr:`Outcome.WRONG_RESULT` and never timed.

**Timing** uses CUDA events. After the validation launch, a short timed warm-up estimates the
kernel's time and the host's cost of one launch; the repetitions per batch are then raised until a
batch lasts ``min_batch_ms`` (many for a 10 µs decode GEMM, one for a 5 ms one), and the median of
``batches`` batch means is the time. So that the GPU never waits on a slower host, a sleep kernel
is queued first, long enough for the host to queue every launch of every batch behind it. Configs
already ``slow_factor`` times slower than the shape's best so far get fewer batches.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from flysearch.evaluators._messages import InfoTask

__all__ = ["TimeTask", "TimerTask", "TimingProtocol", "VendorTask", "device_info", "protocol_dict", "run_op",
           "shape_bench", "time_launches"]

DEFAULT_TRITON_FAMILY = "triton_gemm_splitk"
"""The Triton family a task compiles and launches unless it names another."""


@dataclass(frozen=True)
class TimingProtocol:
    """How a config is validated and timed.

    Attributes:
        batches: Timed batches; the median of their means is the time.
        min_batch_ms: Repetitions per batch are raised until a batch lasts this long.
        max_launches: Cap on launches queued per config (the GPU's launch queue holds ~1,000).
        warmup: Timed warm-up launches after the validation launch.
        l2_factor: The rotating input sets together hold this many times the L2 size.
        max_sets: Cap on rotating input sets.
        rtol: Largest accepted ``||C - ref|| / ||ref||``.
        slow_factor: Configs slower than this times the best so far get ``slow_batches`` batches.
        slow_batches: Batches for such configs.
    """

    batches: int = 5
    min_batch_ms: float = 0.5
    max_launches: int = 900
    warmup: int = 2
    l2_factor: float = 3.0
    max_sets: int = 64
    rtol: float = 1e-2
    slow_factor: float = 4.0
    slow_batches: int = 3


# torch.cuda._sleep counts GPU cycles; this many make about a second on a Hopper or an Instinct GPU.
_SLEEP_CYCLES_PER_S = 2.0e9


@dataclass(frozen=True)
class TimeTask:
    """The timer's task that validates and times one config of a Triton family.

    Attributes:
        shape: The GEMM shape (``{"M", "N", "K", "dtype"}``).
        config: The config's parameters.
        spec: Which binary of the family the shape needs (:func:`flysearch.evaluators.family_spec`).
        arch: The target.
        protocol: The timing protocol's fields (:func:`protocol_dict`), ``None`` for the default.
        best_ms: The shape's best time so far (slower configs get fewer batches), if any.
        family: The Triton family.
    """

    shape: dict[str, Any]
    config: dict[str, Any]
    spec: str
    arch: str = "sm_90"
    protocol: dict[str, Any] | None = None
    best_ms: float | None = None
    family: str = DEFAULT_TRITON_FAMILY


@dataclass(frozen=True)
class VendorTask:
    """The timer's task that validates and times the vendor's GEMM (cuBLAS) on *shape*."""

    shape: dict[str, Any]
    protocol: dict[str, Any] | None = None


TimerTask = InfoTask | TimeTask | VendorTask


class _Current:
    """The shape the timer holds inputs and references for (one at a time)."""

    bench: _ShapeBench | None = None


def run_op(task: TimerTask) -> dict[str, Any]:
    """Run one timer operation: describe the device, time the vendor's GEMM (cuBLAS) or a config
    (the answer's dict is what :func:`flysearch.evaluators.timer_task` types)."""
    if isinstance(task, InfoTask):
        return device_info()
    protocol = TimingProtocol(**(task.protocol or {}))
    bench = _bench_for(task.shape, protocol)
    if isinstance(task, VendorTask):
        return bench.time_vendor()
    return bench.time_config(task.config, task.spec, task.arch, task.best_ms, task.family)


def driver_from_proc(text: str) -> str | None:
    """The driver version in the text of ``/proc/driver/nvidia/version``, or ``None``."""
    import re

    found = re.search(r"Kernel Module\s+(?:for \S+\s+)?(\d+(?:\.\d+)+)", text)
    return found.group(1) if found else None


def _nvidia_driver_version() -> str:
    """The NVIDIA driver's version: from the kernel module's file (instant), else from
    ``nvidia-smi`` (which starts NVML on every GPU: up to a second of the timer's start-up)."""
    import subprocess

    try:
        with open("/proc/driver/nvidia/version") as f:
            found = driver_from_proc(f.read())
        if found:
            return found
    except OSError:
        pass
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=20, check=False,
        )
        return out.stdout.strip().splitlines()[0] if out.stdout.strip() else ""
    except (OSError, subprocess.SubprocessError):
        return ""


def device_info() -> dict[str, Any]:
    """Device name, SM count, L2 size and the versions a table records."""
    import torch

    props = torch.cuda.get_device_properties(0)
    return {
        "device": str(torch.cuda.get_device_name(0)), "sms": int(props.multi_processor_count),
        "l2_bytes": int(getattr(props, "L2_cache_size", 50 * 2**20)),
        "versions": library_versions(),
    }


def library_versions() -> dict[str, str]:
    """The driver, CUDA, torch, Triton and Python versions, as plain strings.

    The timer sends them to the study's process: ``torch.__version__`` itself is a ``TorchVersion``,
    and unpickling one imports torch there (seconds, in the study loop, the moment the GPU is ready).
    """
    import platform

    import torch

    try:
        import triton

        triton_version = str(triton.__version__)
    except ImportError:
        triton_version = ""
    return {"driver": str(_nvidia_driver_version()), "cuda": str(torch.version.cuda),
            "torch": str(torch.__version__), "triton": triton_version, "python": platform.python_version()}


def shape_bench(shape: dict[str, Any], protocol: TimingProtocol | None = None) -> _ShapeBench:
    """The timer's inputs, references and protocol for *shape* (``{"M", "N", "K"}``), kept until
    another shape is asked for: time any kernel's launches on them with
    :meth:`_ShapeBench.time_launch` (another kernel family's GEMM, timed exactly as a race times
    flysearch's own)."""
    return _bench_for(shape, protocol or TimingProtocol())


def _bench_for(shape: dict[str, Any], protocol: TimingProtocol) -> _ShapeBench:
    key = (int(shape["M"]), int(shape["N"]), int(shape["K"]), str(shape.get("dtype", "bf16")), protocol)
    if _Current.bench is None or _Current.bench.key != key:
        import torch

        _Current.bench = None  # free the previous shape's tensors first
        torch.cuda.empty_cache()
        _Current.bench = _ShapeBench(key, protocol)
    return _Current.bench


def time_launches(launch: Callable[[int], Any], protocol: TimingProtocol, *, n_sets: int = 1, ops: int = 1,
                  best_ms: float | None = None) -> tuple[float, dict[str, Any]]:
    """The time (ms) of ``launch(i)`` with CUDA events under *protocol*, and how it was timed.

    ``launch(i)`` runs the kernel once on rotating input set ``i % n_sets`` with *ops* launches;
    after a timed warm-up the repetitions per batch are raised until a batch lasts
    ``protocol.min_batch_ms``, and the median of the batches' means is the time. A config already
    ``slow_factor`` times slower than *best_ms* gets ``slow_batches`` batches of one launch.
    """
    import torch

    p = protocol
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    # The warm-up is queued behind a sleep (1 ms a launch), so that its events time the GPU and not
    # the host: a kernel shorter than its launch would otherwise be estimated at its launch's cost,
    # get no sleep below, and be timed as the host's launch rate.
    torch.cuda._sleep(int(1e-3 * (p.warmup + 1) * _SLEEP_CYCLES_PER_S))
    t0 = time.perf_counter()
    start.record()
    for i in range(p.warmup):
        launch(i % n_sets)
    end.record()
    host_s = (time.perf_counter() - t0) / p.warmup
    end.synchronize()
    est_ms = max(start.elapsed_time(end) / p.warmup, 1e-4)
    slow = best_ms is not None and est_ms > p.slow_factor * best_ms
    batches = p.slow_batches if slow else p.batches
    reps = 1 if slow else max(1, math.ceil(p.min_batch_ms / est_ms))
    reps = max(1, min(reps, p.max_launches // (batches * ops)))
    n = batches * reps
    # Queue a sleep long enough that the host can enqueue every launch before the GPU runs dry.
    gap_s = n * max(0.0, host_s - est_ms / 1e3)
    if gap_s > 0:
        torch.cuda._sleep(int(min(1.5 * gap_s + 50e-6, 0.25) * _SLEEP_CYCLES_PER_S))
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(batches)]
    k = p.warmup
    for s, e in events:
        s.record()
        for _ in range(reps):
            launch(k % n_sets)
            k += 1
        e.record()
    events[-1][1].synchronize()
    means = [s.elapsed_time(e) / reps for s, e in events]
    median = statistics.median(means)
    spread = (max(means) - min(means)) / median if median > 0 else 0.0
    return median, {"reps": reps, "batches": batches, "spread": round(spread, 4),
                    "est_ms": round(est_ms, 6), "sets": n_sets}


class _ShapeBench:
    """Inputs, references and launchers for one shape, kept while the timer stays on it."""

    def __init__(self, key: tuple[Any, ...], protocol: TimingProtocol) -> None:
        import torch

        torch.backends.cuda.matmul.allow_tf32 = False
        self.key, self.protocol = key, protocol
        self.M, self.N, self.K, dtype = key[:4]
        if dtype != "bf16":
            raise ValueError(f"The Triton GEMM is bf16 only, not {dtype}.")
        l2 = int(getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 50 * 2**20))
        per_set = (self.M * self.K + self.N * self.K) * 2
        n_sets = min(protocol.max_sets, max(2, math.ceil(protocol.l2_factor * l2 / per_set)))
        gen = torch.Generator(device="cuda").manual_seed(
            (self.M * 1_000_003 + self.N * 1_009 + self.K) % 2**31
        )
        self.sets = [
            (torch.randn(self.M, self.K, device="cuda", dtype=torch.bfloat16, generator=gen),
             torch.randn(self.N, self.K, device="cuda", dtype=torch.bfloat16, generator=gen))
            for _ in range(n_sets)
        ]
        self.ptrs = [(a.data_ptr(), w.data_ptr()) for a, w in self.sets]
        self.refs = [a.float() @ w.float().t() for a, w in self.sets[:3]]
        self.c = torch.empty(self.M, self.N, device="cuda", dtype=torch.bfloat16)
        self.ws = torch.empty(self.M, self.N, device="cuda", dtype=torch.float32)
        self.checks = 0
        self.stream = torch.cuda.current_stream().cuda_stream

    # -- validation and timing --------------------------------------------------------------------

    def _validate(self, launch: Any) -> float:
        import torch

        v = self.checks % len(self.refs)
        self.checks += 1
        self.c.fill_(float("nan"))
        launch(v)
        ref = self.refs[v]
        err = torch.linalg.vector_norm(self.c.float() - ref) / torch.linalg.vector_norm(ref)
        return float(err.item())

    def _bench(self, launch: Any, ops: int, best_ms: float | None) -> tuple[float, dict[str, Any]]:
        return time_launches(launch, self.protocol, n_sets=len(self.sets), ops=ops, best_ms=best_ms)

    def _measure(self, launch: Any, ops: int, best_ms: float | None) -> dict[str, Any]:
        t0 = time.perf_counter()
        err = self._validate(launch)
        extra: dict[str, Any] = {"rel_err": err if math.isfinite(err) else None}
        if not (math.isfinite(err) and err <= self.protocol.rtol):
            return {"outcome": "wrong_result", "detail": f"relative error {err:.3g} > {self.protocol.rtol}",
                    "bench_s": time.perf_counter() - t0, "extra": extra}
        ms, info = self._bench(launch, ops, best_ms)
        extra.update(info)
        return {"outcome": "ok", "time_ms": ms, "bench_s": time.perf_counter() - t0, "extra": extra}

    def time_vendor(self) -> dict[str, Any]:
        """Validate and time ``torch.mm(A, W.T)`` (cuBLAS) with the same protocol."""
        import torch

        sets, c = self.sets, self.c

        def launch(i: int) -> None:
            a, w = sets[i]
            torch.mm(a, w.t(), out=c)

        return self.time_launch(launch, 1)

    def time_launch(self, launch: Any, ops: int, best_ms: float | None = None) -> dict[str, Any]:
        """Validate and time *launch*: ``launch(i)`` computes ``A_i @ W_i^T`` of rotating input
        set ``i`` (``self.sets[i]``, W stored ``N x K``) into ``self.c`` with *ops* launches."""
        return self._guarded(lambda: self._measure(launch, ops, best_ms))

    def time_config(
        self, config: dict[str, Any], spec: str, arch: str, best_ms: float | None,
        family: str = DEFAULT_TRITON_FAMILY,
    ) -> dict[str, Any]:
        """Load *config*'s binary of Triton *family* from the Triton cache, validate it and time it
        (a family with a ``bind``, :class:`flysearch.kernels.TritonFamily`, as CUDA-graph replays)."""
        from flysearch.kernels import triton_family

        t0 = time.perf_counter()
        fam = triton_family(family)
        try:
            kernel = fam.compile_config(config, spec, arch)
            kernel._init_handles()
        except Exception as exc:
            return {"outcome": "runtime_failed", "detail": f"load: {type(exc).__name__}: {exc}"[:300],
                    "bench_s": time.perf_counter() - t0, "extra": {}}
        load_s = time.perf_counter() - t0
        if fam.bind is None:
            launch, ops = self._launcher(kernel, config, fam.reduces_in_launch)
        else:
            try:
                launch, ops = self.graph_launch(lambda a, w, c: fam.bind(kernel, a, w, c, config, spec)), 1
            except Exception as exc:
                return self._failed(exc, t0, "launch: ")
        result = self._guarded(lambda: self._measure(launch, ops, best_ms))
        result.setdefault("extra", {}).update(
            {"n_regs": kernel.n_regs, "n_spills": kernel.n_spills, "shared": kernel.metadata.shared,
             "load_s": round(load_s, 4)}
        )
        return result

    def _guarded(self, fn: Any) -> dict[str, Any]:
        t0 = time.perf_counter()
        try:
            return fn()
        except Exception as exc:
            return self._failed(exc, t0)

    def _failed(self, exc: Exception, t0: float, what: str = "") -> dict[str, Any]:
        """A launch that raised *exc*: ``runtime_failed``, and ``fatal`` when the CUDA context is gone."""
        import torch

        fatal = True
        try:
            torch.cuda.synchronize()
            fatal = False
        except Exception:
            pass
        return {"outcome": "runtime_failed", "detail": f"{what}{type(exc).__name__}: {exc}"[:300],
                "bench_s": time.perf_counter() - t0, "extra": {}, "fatal": fatal}

    def graph_launch(self, make_run: Callable[[Any, Any, Any], Callable[[], Any]]) -> Callable[[int], None]:
        """A ``launch(i)`` for :meth:`time_launch`: the replay of a CUDA graph of
        ``make_run(A_i, W_i, C)()`` captured on rotating input set ``i`` (the host's cost of a
        launch, a Python wrapper's included, stays out of the timing). The first set's run runs
        once before the captures (compiling a JIT kernel; a launch that fails does so there,
        outside a capture, and raises)."""
        import torch

        runs = [make_run(a, w, self.c) for a, w in self.sets]
        runs[0]()
        torch.cuda.synchronize()
        graphs = []  # each with its run, which keeps what make_run allocated (partial sums) alive
        for run in runs:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                run()
            graphs.append((graph, run))

        def launch(i: int) -> None:
            graphs[i][0].replay()

        return launch

    def _launcher(self, kernel: Any, config: dict[str, Any], reduces_in_launch: bool) -> tuple[Any, int]:
        """``launch(i)`` of *kernel* on rotating input set ``i``, and the launches one call makes:
        the split-K family's GEMM alone, or with its workspace zeroed before and copied into ``C``
        after; a family that *reduces_in_launch* (the fused one): its one launch, its workspace
        zeroed once here and its per-tile counters its own."""
        import torch

        from flysearch.kernels import TILE_PARAMS

        M, N, K = self.M, self.N, self.K
        bm, bn, split = int(config["BLOCK_M"]), int(config["BLOCK_N"]), int(config["SPLIT_K"])
        gx = math.ceil(M / bm) * math.ceil(N / bn)
        tiles = tuple(int(config[name]) for name in TILE_PARAMS)
        run, fn, meta, stream = kernel.run, kernel.function, kernel.packed_metadata, self.stream
        ptrs, c, ws = self.ptrs, self.c, self.ws
        c_ptr, ws_ptr = c.data_ptr(), ws.data_ptr()

        if reduces_in_launch:
            ws.zero_()  # a failed config before may have left it dirty; every launch leaves it zero
            arrivals = torch.zeros(gx, device="cuda", dtype=torch.int32)

            def launch_fused(i: int) -> None:
                a, w = ptrs[i]
                run(gx, split, 1, stream, fn, meta, None, None, None, a, w, c_ptr, ws_ptr,
                    arrivals.data_ptr(), M, N, K, *tiles)

            return launch_fused, 1

        if split == 1:
            def launch(i: int) -> None:
                a, w = ptrs[i]
                run(gx, 1, 1, stream, fn, meta, None, None, None, a, w, c_ptr, ws_ptr, M, N, K, *tiles)

            return launch, 1

        def launch_split(i: int) -> None:
            a, w = ptrs[i]
            ws.zero_()
            run(gx, split, 1, stream, fn, meta, None, None, None, a, w, c_ptr, ws_ptr, M, N, K, *tiles)
            c.copy_(ws)

        return launch_split, 3


def protocol_dict(protocol: TimingProtocol | None = None) -> dict[str, Any]:
    """The protocol as stored in a table's notes."""
    return asdict(protocol or TimingProtocol())
