"""Exhaustive races: every feasible config of a space, timed on the GPU, for a list of shapes.

A race compiles in parallel CPU workers while one GPU timer process validates and times the configs
whose binaries are ready (a pipeline), and writes one ground-truth table per (kernel, device, shape),
named like ``triton_gemm/H200/1x4096x4096``. Rows go to the :class:`~flysearch.tables.TableStore` in
batches (each one transaction), so an interruption loses at most the rows not yet flushed, and a
rerun skips the configs a table already holds.

Triton builds one binary per (config, specialization) and the split-K kernel specializes only on
whether N and K are multiples of 16 (:func:`flysearch.kernels.spec_key`; each family says its own,
:class:`flysearch.kernels.TritonFamily`), so a race over many shapes compiles each
(specialization, config) once: compiles are queued in the order the timer will
need them, and later shapes are mostly served from the Triton cache.

With :attr:`RaceSettings.retime`, each shape's top is then confirmed (:mod:`flysearch.evaluators`): the
configs within a few percent of the best are timed again in interleaved rounds and their medians
stored beside the race's times, so the table's best and its 1% set rest on more than one timing. A
rerun re-times a finished table that was raced without it (``flysearch tables import`` then ``race run``
re-times committed tables).

Per shape the race also validates and times ``torch.mm`` (cuBLAS) with the same protocol and keeps
that time in the table's notes (JSON, key ``vendor``); :func:`race_summary` compares it with the
best Triton config and names the winner, like aiter's ``libtype`` column. The race times cuBLAS
once, before the shape's first config, while the GPU has been idle; timed beside the configs it is
up to 13% slower on compute-bound shapes on the H200. So the re-timing rounds time cuBLAS too, as
one more entry of every round (``vendor["retime"]``), and :func:`vendor_ms` and the summary compare
the confirmed best with that median, both measured in the same rounds. A rerun re-times a finished
table whose rounds lack cuBLAS.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from flysearch.errors import FlysearchError
from flysearch.evaluators import (
    COMPILE_TIMEOUT_S,
    DEFAULT_TRITON_FAMILY,
    LAUNCH_TIMEOUT_S,
    CompilePipeline,
    CompileResult,
    InfoTask,
    Measurement,
    RetimeSettings,
    TaskResult,
    TimerInfo,
    TimerTask,
    TimingProtocol,
    TritonCompileTask,
    VendorTask,
    WorkerPool,
    compile_request,
    compile_task,
    family_spec,
    interleaved_rounds,
    protocol_dict,
    rounds_record,
    timer_task,
    timing_request,
    top_rows,
    with_rounds,
)
from flysearch.space import Config, Shape, Space, arch_of_device, device_label, get_arch
from flysearch.tables import RETIME, GroundTruth, Outcome, Row, TableMeta, TableStore

__all__ = [
    "VENDOR_KEY",
    "RaceReport",
    "RaceSettings",
    "RaceShape",
    "ShapeReport",
    "fastest_backends",
    "race_summary",
    "run_race",
    "table_name",
    "vendor_in_rounds",
    "vendor_ms",
]


@dataclass(frozen=True)
class RaceShape:
    """A shape to race, with the model layer it comes from (kept in the table's notes)."""

    shape: Shape
    name: str = ""
    model: str = ""
    layer: str = ""


@dataclass
class RaceSettings:
    """How a race runs.

    Attributes:
        kernel: Kernel name, the first part of every table name (``None``: the family's, e.g.
            ``triton_gemm`` for the split-K family).
        family: The Triton family compiled and launched (:func:`flysearch.kernels.triton_families`):
            the split-K GEMM, the fused split-K GEMM or the persistent TMA GEMM (Hopper and
            newer). The raced space may be another space of the same kernel's parameters (an
            unpruned one, another grid).
        arch: Target arch; ``None`` takes it from the GPU's name.
        workers: Compile worker processes (default: CPU count minus 2, at least 1).
        cache_dir: Triton cache directory shared by workers and timer (default: Triton's).
        batch_rows: Rows buffered per table before a flush.
        flush_s: Seconds between flushes at most.
        deadline_s: Stop starting new work after this many seconds (``None``: no limit).
        limit: Race only the first *limit* feasible configs of each shape (smoke runs).
        compile_timeout_s: Seconds before a compile's worker is killed.
        launch_timeout_s: Seconds before a validate-and-time task's timer is killed.
        protocol: Timing protocol.
        compile_fn: Module-level compile task: a :class:`~flysearch.evaluators.TritonCompileTask`
            answered with a :class:`~flysearch.evaluators.CompileResult` (see
            :func:`flysearch.evaluators.compile_task`).
        timer_fn: Module-level timer task: an :class:`~flysearch.evaluators.InfoTask` answered with a
            :class:`~flysearch.evaluators.TimerInfo`, a ``TimeTask`` or ``VendorTask`` with a
            :class:`~flysearch.tables.Measurement` (see :func:`flysearch.evaluators.timer_task`).
        retime: Confirm each finished shape's top in interleaved rounds (``None``: do not).
            A shape the deadline cut short, or that finished after it, is not re-timed (a rerun
            re-times it).
    """

    kernel: str | None = None
    family: str = DEFAULT_TRITON_FAMILY
    arch: str | None = None
    workers: int | None = None
    cache_dir: str | None = None
    batch_rows: int = 64
    flush_s: float = 15.0
    deadline_s: float | None = None
    limit: int | None = None
    compile_timeout_s: float = COMPILE_TIMEOUT_S
    launch_timeout_s: float = LAUNCH_TIMEOUT_S
    protocol: TimingProtocol = field(default_factory=TimingProtocol)
    compile_fn: Callable[[TritonCompileTask], Any] = compile_task
    timer_fn: Callable[[TimerTask], Any] = timer_task
    retime: RetimeSettings | None = field(default_factory=RetimeSettings)


@dataclass
class ShapeReport:
    """What a race did for one shape."""

    table: str
    shape: Shape
    feasible: int
    already_done: int
    counts: dict[str, int] = field(default_factory=dict)
    best_key: str | None = None
    best_ms: float | None = None
    vendor_ms: float | None = None
    wall_s: float = 0.0
    retimed: int = 0
    confirmed_key: str | None = None
    confirmed_ms: float | None = None
    retime_s: float = 0.0

    @property
    def measured(self) -> int:
        return sum(self.counts.values())


@dataclass
class RaceReport:
    """What a whole race did."""

    device: str
    arch: str
    versions: dict[str, str]
    shapes: list[ShapeReport]
    compiles: int = 0
    compile_failures: int = 0
    wall_s: float = 0.0
    stopped: str = "done"

    @property
    def measured(self) -> int:
        return sum(s.measured for s in self.shapes)

    @property
    def configs_per_s(self) -> float:
        return self.measured / self.wall_s if self.wall_s > 0 else 0.0


def table_name(kernel: str, device: str, shape: Shape) -> str:
    """``"triton_gemm/H200/1x4096x4096"`` (``":fp16"`` appended for dtypes other than bf16)."""
    suffix = "" if shape.dtype == "bf16" else f":{shape.dtype}"
    return f"{kernel}/{device}/{shape.M}x{shape.N}x{shape.K}{suffix}"


def _notes(meta: TableMeta) -> dict[str, Any]:
    try:
        notes = json.loads(meta.notes) if meta.notes else {}
    except json.JSONDecodeError:
        return {}
    return notes if isinstance(notes, dict) else {}


VENDOR_KEY = "vendor:cublas"
"""cuBLAS's entry in a race's re-timing rounds (no config key has a colon)."""


def vendor_ms(meta: TableMeta) -> float | None:
    """The cuBLAS (``torch.mm``) time a race stored in *meta*'s notes, or ``None``: the median of
    its re-timing rounds where the table's top was re-timed with cuBLAS among it, else the race's
    one timing."""
    vendor = _notes(meta).get("vendor") or {}
    value = (vendor.get("retime") or {}).get("median_ms", vendor.get("time_ms"))
    return float(value) if value is not None else None


def vendor_in_rounds(meta: TableMeta) -> bool:
    """Whether cuBLAS was timed in the re-timing rounds of *meta*'s table (its time then compares
    with the re-timed medians of the configs)."""
    vendor = _notes(meta).get("vendor") or {}
    return "median_ms" in (vendor.get("retime") or {})


def race_summary(store: TableStore, prefix: str = "") -> list[dict[str, Any]]:
    """Per race table: best Triton config and time, the cuBLAS time, their ratio and the winner.

    ``ratio`` is best Triton time / cuBLAS time (below 1: Triton wins); ``winner`` is ``"triton"`` or
    ``"cublas"`` (aiter's ``libtype``), ``None`` when either time is missing. Where the table's top
    was re-timed (:mod:`flysearch.evaluators`), the best config is the confirmed one (``race_best_key``
    is the race's own best, ``retimed`` counts the re-timed configs and ``confirmed_ms`` is the
    median of its rounds). ``triton_ms`` and ``cublas_ms`` are always one measurement: both medians
    of the re-timing rounds where cuBLAS was timed in them (``cublas_in_rounds``), else both the
    race's single timings.
    """
    out = []
    for name in store.names():
        if not name.startswith(prefix):
            continue
        table = store.load(name)
        notes = _notes(table.meta)
        if "vendor" not in notes:
            continue
        ok = table.ok_rows()
        best = table.confirmed_best() if ok else None
        retimed = table.retimed_ms()
        in_rounds = vendor_in_rounds(table.meta)
        best_ms = best.time_ms if best is not None else None
        if in_rounds and best is not None:
            best_ms = retimed.get(best.key, best_ms)
        v_ms = vendor_ms(table.meta)
        ratio = best_ms / v_ms if best_ms and v_ms else None
        shape = table.meta.shape()
        counts: dict[str, int] = {}
        for r in table.rows.values():
            counts[r.outcome] = counts.get(r.outcome, 0) + 1
        out.append({
            "table": name, "shape": f"{shape.M}x{shape.N}x{shape.K}" if shape else "",
            "regime": shape.regime if shape else "", "layer": notes.get("layer", ""),
            "rows": len(table), "counts": counts, "best_key": best.key if best else None,
            "triton_ms": best_ms, "cublas_ms": v_ms, "ratio": ratio, "cublas_in_rounds": in_rounds,
            "retimed": len(retimed), "race_best_key": table.best().key if ok else None,
            "confirmed_ms": retimed.get(best.key) if best is not None else None,
            "winner": None if ratio is None else ("triton" if ratio < 1.0 else "cublas"),
            "device": table.meta.device, "date": table.meta.date, "kernel": table.meta.kernel,
        })
    return out


def fastest_backends(summary: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (device, shape) of :func:`race_summary`'s rows: which backend to run, as aiter's
    ``libtype`` column names it, over every kernel family raced on that shape and cuBLAS.

    Families raced in different sessions are compared by their ratios to the cuBLAS time of their
    own session, not by raw times (a session's clocks and driver state move the times by a few
    percent). ``fastest`` is the kernel with the lowest ratio, or ``"cublas"`` when none is below 1;
    ``ratios`` maps each kernel to its ratio.

    Example:
        >>> rows = [{"device": "H200", "shape": "1x8x8", "regime": "decode", "kernel": "a", "ratio": 1.2},
        ...         {"device": "H200", "shape": "1x8x8", "regime": "decode", "kernel": "b", "ratio": 0.9}]
        >>> fastest_backends(rows)[0]["fastest"]
        'b'
    """
    groups: dict[tuple[str, str], dict[str, Any]] = {}
    for row in summary:
        if row.get("ratio") is None or not row.get("shape"):
            continue
        group = groups.setdefault((row["device"], row["shape"]), {
            "device": row["device"], "shape": row["shape"], "regime": row["regime"], "ratios": {}})
        kernel = row.get("kernel") or row["table"].split("/", 1)[0]
        group["ratios"][kernel] = min(row["ratio"], group["ratios"].get(kernel, float("inf")))
    out = []
    for group in groups.values():
        kernel, ratio = min(group["ratios"].items(), key=lambda kv: (kv[1], kv[0]))
        out.append({**group, "fastest": kernel if ratio < 1.0 else "cublas", "best_ratio": ratio})
    return out


@dataclass
class _Plan:
    race_shape: RaceShape
    table: str
    todo: list[Config]
    report: ShapeReport


class _Race:
    """One race's state: pools, pending rows, the compile results so far."""

    def __init__(
        self, space: Space, shapes: Sequence[RaceShape], store: TableStore, settings: RaceSettings,
        progress: Callable[[str], None] | None,
    ) -> None:
        self.space, self.shapes, self.store, self.s = space, list(shapes), store, settings
        self.progress = progress or (lambda line: None)
        self.t0 = time.monotonic()
        env = {"TRITON_CACHE_DIR": settings.cache_dir} if settings.cache_dir else {}
        import os

        workers = settings.workers or max(1, (os.cpu_count() or 2) - 2)
        self.pipe = CompilePipeline(
            WorkerPool(settings.compile_fn, workers=workers, timeout_s=settings.compile_timeout_s, env=env),
            WorkerPool(settings.timer_fn, workers=1, timeout_s=settings.launch_timeout_s, env=env))
        self.compiled: dict[tuple[str, str], CompileResult] = {}
        self.sms: int | None = None  # the GPU's, once the timer has said
        self.buffer: dict[str, tuple[TableMeta, list[Row]]] = {}
        self.last_flush = time.monotonic()
        self.stopped = "done"

    # -- plumbing ---------------------------------------------------------------------------------

    def spec(self, shape: Shape, arch: str) -> str:
        """Which binary of the family *shape* needs on the race's GPU."""
        return family_spec(self.s.family, shape, arch, self.sms)

    def out_of_time(self) -> bool:
        return self.s.deadline_s is not None and time.monotonic() - self.t0 > self.s.deadline_s

    def timer_call(self, task: TimerTask, timeout_s: float | None = None) -> TaskResult:
        """Run *task* on the timer (alone), collecting compiles meanwhile."""
        res, built = self.pipe.time_alone(("op", type(task).__name__), task, timeout_s=timeout_s)
        self.keep(built)
        return res

    def wait(self, timeout: float) -> list[TaskResult]:
        """Wait up to *timeout* seconds for an answer; keep the compiles, return the timings."""
        built, timed = self.pipe.wait(timeout)
        self.keep(built)
        return timed

    def keep(self, built: list[tuple[TaskResult, CompileResult]]) -> None:
        for res, compiled in built:
            self.compiled[res.task_id] = compiled

    def add_row(self, meta: TableMeta, row: Row) -> None:
        self.buffer.setdefault(meta.name, (meta, []))[1].append(row)
        if len(self.buffer[meta.name][1]) >= self.s.batch_rows or (
            time.monotonic() - self.last_flush > self.s.flush_s
        ):
            self.flush()

    def flush(self) -> None:
        for meta, rows in self.buffer.values():
            if rows:
                self.store.add_rows(meta, rows)
        self.buffer.clear()
        self.last_flush = time.monotonic()

    def close(self) -> None:
        self.flush()
        self.pipe.close()


def run_race(
    space: Space, shapes: Sequence[RaceShape], store: TableStore, settings: RaceSettings | None = None,
    progress: Callable[[str], None] | None = None,
) -> RaceReport:
    """Race every feasible config of *space* over *shapes*; rows go to *store* as they come.

    Raises:
        FlysearchError: the family is no Triton family flysearch races or cannot run on the arch,
            the GPU timer could not start, or the device maps to no arch profile.
    """
    from flysearch.kernels import table_kernel, triton_family

    settings = settings or RaceSettings()
    family = triton_family(settings.family)  # an unknown family fails before any process starts
    if settings.arch is not None:
        family.check_arch(get_arch(settings.arch))
    if settings.kernel is None:
        settings = replace(settings, kernel=table_kernel(settings.family))
    race = _Race(space, shapes, store, settings, progress)
    try:
        return _run(race)
    finally:
        race.close()


def _run(race: _Race) -> RaceReport:
    from flysearch.kernels import triton_family

    info_res = race.timer_call(InfoTask())
    if not info_res.ok or not isinstance(info_res.value, TimerInfo):
        detail = info_res.detail if not info_res.ok else str(info_res.value)[:200]
        raise FlysearchError(
            f"The GPU timer could not start ({info_res.status}: {detail}); run the race on a "
            "machine with a CUDA GPU, torch and Triton."
        )
    info: TimerInfo = info_res.value
    # The profile of the GPU the timer sees (an MI308X has 80 CUs, not the MI300X's 304).
    arch = get_arch(race.s.arch).on_device(info.device) if race.s.arch else arch_of_device(info.device)
    triton_family(race.s.family).check_arch(arch)
    race.sms = info.sms
    device = device_label(info.device)
    plans = _plan(race, arch, device)
    _submit_compiles(race, plans, arch.name)
    report = RaceReport(info.device, arch.name, dict(info.versions), [p.report for p in plans])
    for plan in plans:
        if race.out_of_time():
            race.stopped = "deadline"
            break
        _race_shape(race, plan, arch.name, info)
        race.progress(_shape_line(plan.report))
        if race.s.retime is not None and race.stopped == "done" and not race.out_of_time():
            _retime_shape(race, plan, arch.name, info)
    report.compiles = sum(1 for v in race.compiled.values() if v.ok)
    report.compile_failures = sum(1 for v in race.compiled.values() if not v.ok)
    report.wall_s = time.monotonic() - race.t0
    report.stopped = race.stopped
    return report


def _plan(race: _Race, arch: Any, device: str) -> list[_Plan]:
    plans = []
    for rs in race.shapes:
        name = table_name(race.s.kernel, device, rs.shape)
        feasible = race.space.enumerate(rs.shape, arch, allow_empty=True).feasible
        if race.s.limit is not None:
            feasible = feasible[: race.s.limit]
        done = race.store.done_keys(name)
        todo = [c for c in feasible if c.key not in done]
        report = ShapeReport(name, rs.shape, len(feasible), len(feasible) - len(todo))
        plans.append(_Plan(rs, name, todo, report))
        race.progress(f"{name}: {len(feasible)} feasible, {len(todo)} to race")
    return plans


def _submit_compiles(race: _Race, plans: list[_Plan], arch: str) -> None:
    seen: set[tuple[str, str]] = set()
    for plan in plans:
        spec = race.spec(plan.race_shape.shape, arch)
        for config in plan.todo:
            task = (spec, config.key)
            if task not in seen:
                seen.add(task)
                race.pipe.compile(task, compile_request(config, plan.race_shape.shape, arch, race.s.family,
                                                        race.sms))


def _meta(race: _Race, plan: _Plan, arch: str, info: TimerInfo, vendor: dict[str, Any]) -> TableMeta:
    rs = plan.race_shape
    notes = {
        "vendor": vendor, "shape_name": rs.name, "model": rs.model, "layer": rs.layer,
        "protocol": protocol_dict(race.s.protocol), "l2_bytes": info.l2_bytes, "sms": info.sms,
    }
    return TableMeta(
        name=plan.table, kernel=race.s.kernel, arch=arch, device=info.device,
        problem=rs.shape.as_dict(), space=race.space.to_json(), source="flysearch race",
        versions=dict(info.versions), notes=json.dumps(notes, sort_keys=True),
    )


def _race_shape(race: _Race, plan: _Plan, arch: str, info: TimerInfo) -> None:
    start = time.monotonic()
    shape = plan.race_shape.shape
    if plan.table in race.store:
        meta = race.store.meta(plan.table)
    else:
        vendor = {**_vendor_record(_time_vendor(race, shape)), "backend": "cublas",
                  "op": "torch.mm(A, W.t())"}
        meta = _meta(race, plan, arch, info, vendor)
        race.store.add_rows(meta, [])
    plan.report.vendor_ms = vendor_ms(meta)
    spec = race.spec(plan.race_shape.shape, arch)
    pending = list(plan.todo)
    in_flight: Config | None = None
    best: float | None = _best_so_far(race.store, plan.table)
    while pending or in_flight is not None:
        pending = _drop_failed_compiles(race, plan, meta, spec, pending)
        if in_flight is None and not race.out_of_time():
            ready = next((c for c in pending if _built(race.compiled.get((spec, c.key)))), None)
            if ready is not None:
                pending.remove(ready)
                in_flight = ready
                race.pipe.time(ready.key, timing_request(ready, shape, arch, race.s.protocol, best,
                                                         race.s.family, race.sms))
        elif in_flight is None:
            race.stopped = "deadline"
            break
        if in_flight is None and not pending:
            break
        for res in race.wait(0.05):  # a compile or the timing in flight, whichever answers first
            assert in_flight is not None
            row = Row.from_measurement(in_flight.key, in_flight.as_dict(),
                                       _kept(race.compiled[(spec, in_flight.key)]).timed(res))
            if row.ok and (best is None or (row.time_ms or 0) < best):
                best = row.time_ms
            _count(plan.report, row)
            race.add_row(meta, row)
            in_flight = None
    race.flush()
    _finish_report(race, plan, start)


def _time_vendor(race: _Race, shape: Shape) -> TaskResult:
    """Validate and time cuBLAS (``torch.mm``) at *shape* in the timer, with the race's protocol."""
    return race.timer_call(VendorTask(shape.as_dict(), protocol_dict(race.s.protocol)))


def _vendor_record(res: TaskResult) -> dict[str, Any]:
    """What a table's notes keep of cuBLAS's timing *res*: its outcome, its time where it is ``OK``,
    its seconds and extra, and the reason for a failure."""
    if not res.ok:
        return {"outcome": Outcome.RUNTIME_FAILED.value, "detail": res.detail}
    m: Measurement = res.value
    outcome = Outcome(m.outcome)
    record: dict[str, Any] = {"outcome": outcome.value, "bench_s": m.bench_s, "extra": dict(m.extra)}
    if outcome is Outcome.OK:
        record["time_ms"] = m.time_ms
    if m.detail:
        record["detail"] = m.detail
    return record


def _retime_shape(race: _Race, plan: _Plan, arch: str, info: TimerInfo) -> None:
    """Confirm a finished shape's top (:mod:`flysearch.evaluators`), unless it was re-timed before and
    this run measured nothing new for it (new rows may change the top: it is then re-timed anew and
    the earlier rounds of configs no longer in it are dropped)."""
    if plan.table not in race.store:
        return
    table = race.store.load(plan.table)
    report = plan.report
    before = [r for r in table.rows.values() if RETIME in r.extra]
    if before and not report.measured and "retime" in (_notes(table.meta).get("vendor") or {}):
        report.retimed = len(table.retimed_ms())
    else:
        start = time.monotonic()
        report.retimed = _confirm_top(race, plan, table, before, arch, info)
        report.retime_s = time.monotonic() - start
        table = race.store.load(plan.table)
    if table.ok_rows():
        best = table.confirmed_best()
        report.confirmed_key = best.key
        report.confirmed_ms = table.retimed_ms().get(best.key, best.time_ms)
    report.vendor_ms = vendor_ms(table.meta)
    race.progress(_retime_line(report))


def _confirm_top(race: _Race, plan: _Plan, table: GroundTruth, before: list[Row], arch: str,
                 info: TimerInfo) -> int:
    """Time the table's top and cuBLAS in interleaved rounds and store them; the number of configs
    confirmed."""
    settings = race.s.retime
    assert settings is not None
    rows = top_rows(table, settings.within, settings.min_k, settings.max_k)
    shape = plan.race_shape.shape
    spec = race.spec(shape, arch)
    configs = {r.key: Config.from_dict(r.params) for r in rows}
    for r in rows:  # configs raced by an earlier run were not compiled by this one
        if (spec, r.key) not in race.compiled:
            race.pipe.compile((spec, r.key), compile_request(configs[r.key], shape, arch, race.s.family,
                                                             race.sms))
    while any((spec, r.key) not in race.compiled for r in rows):
        race.wait(0.05)  # nothing is timing

    def time_one(row: Row) -> float | str:
        if row.key == VENDOR_KEY:
            vendor = _vendor_record(_time_vendor(race, shape))
            if vendor["outcome"] == Outcome.OK.value and vendor["time_ms"]:
                return float(vendor["time_ms"])
            return f"{vendor['outcome']}: {vendor.get('detail', '')}"
        compiled = _kept(race.compiled[(spec, row.key)])
        if not compiled.ok:
            return compiled.detail or "compile failed"
        res = race.timer_call(timing_request(configs[row.key], shape, arch, race.s.protocol, None,
                                             race.s.family, race.sms))
        timed = compiled.timed(res)
        if timed.outcome is Outcome.OK and timed.time_ms:
            return timed.time_ms
        return f"{timed.outcome}: {timed.detail}"

    vendor_row = Row(VENDOR_KEY, {}, Outcome.OK.value)
    samples, failed = interleaved_rounds([*rows, vendor_row] if rows else [], time_one, settings.rounds,
                                         settings.seed)
    notes = _notes(table.meta)
    if rows:
        record = rounds_record(samples.pop(VENDOR_KEY, []), failed.pop(VENDOR_KEY, None))
        notes["vendor"] = {**(notes.get("vendor") or {}), "retime": record}
    notes["retime"] = {"rounds": settings.rounds, "within": settings.within, "min_k": settings.min_k,
                       "max_k": settings.max_k, "seed": settings.seed, "device": info.device,
                       "versions": dict(info.versions), "date": time.strftime("%Y-%m-%d", time.gmtime())}
    keys = {r.key for r in rows}
    stale = [replace(r, extra={k: v for k, v in r.extra.items() if k != RETIME}) for r in before
             if r.key not in keys]
    # Notes first: the rows' rounds are what a rerun checks, so an interruption between the two
    # writes leaves a table that the next run re-times.
    race.store.set_notes(plan.table, json.dumps(notes, sort_keys=True))
    race.store.add_rows(table.meta, with_rounds(rows, samples, failed) + stale)
    return len(rows) - len(failed)


def _retime_line(r: ShapeReport) -> str:
    if r.confirmed_key is None:
        return f"{r.table}: nothing to re-time"
    same = "the race's best" if r.confirmed_key == r.best_key else f"not the race's best ({r.best_key})"
    took = f" in {r.retime_s:.1f} s" if r.retime_s else " (re-timed before)"
    vendor = f"; cuBLAS {r.vendor_ms:.4g} ms" if r.vendor_ms else ""
    return (f"{r.table}: {r.retimed} top configs re-timed{took}; confirmed best {r.confirmed_ms:.4g} ms, "
            f"{same}{vendor}")


def _drop_failed_compiles(
    race: _Race, plan: _Plan, meta: TableMeta, spec: str, pending: list[Config]
) -> list[Config]:
    keep = []
    for c in pending:
        compiled = race.compiled.get((spec, c.key))
        if compiled is not None and not compiled.ok:
            row = Row.from_measurement(c.key, c.as_dict(), _kept(compiled).failure())
            _count(plan.report, row)
            race.add_row(meta, row)
        else:
            keep.append(c)
    return keep


def _kept(compiled: CompileResult) -> CompileResult:
    """*compiled* with what a race's rows keep of its notes in their ``extra``: whether Triton's
    cache held a build, and the shared memory of a build that failed."""
    notes = compiled.notes
    if compiled.ok:
        kept = {"cache_hit": bool(notes["cache_hit"])} if "cache_hit" in notes else {}
    else:
        kept = {"shared": notes["shared"]} if notes.get("shared") else {}
    return replace(compiled, extra={**(compiled.extra or {}), **kept}) if kept else compiled


def _built(compiled: CompileResult | None) -> bool:
    return compiled is not None and compiled.ok


def _count(report: ShapeReport, row: Row) -> None:
    report.counts[row.outcome] = report.counts.get(row.outcome, 0) + 1


def _best_so_far(store: TableStore, name: str) -> float | None:
    if name not in store:
        return None
    ok = store.load(name).ok_rows()
    return min(r.time_ms for r in ok if r.time_ms is not None) if ok else None


def _finish_report(race: _Race, plan: _Plan, start: float) -> None:
    plan.report.wall_s = time.monotonic() - start
    table = race.store.load(plan.table) if plan.table in race.store else None
    if table is not None and table.ok_rows():
        best = table.best()
        plan.report.best_key, plan.report.best_ms = best.key, best.time_ms


def _shape_line(r: ShapeReport) -> str:
    counts = ", ".join(f"{k} {v}" for k, v in sorted(r.counts.items()))
    best = f"best {r.best_ms:.4g} ms" if r.best_ms else "no ok row"
    vendor = f", cuBLAS {r.vendor_ms:.4g} ms" if r.vendor_ms else ""
    rate = r.measured / r.wall_s if r.wall_s > 0 else 0.0
    return (f"{r.table}: {r.measured} measured ({counts}) in {r.wall_s:.1f} s ({rate:.1f}/s); "
            f"{best}{vendor}")
