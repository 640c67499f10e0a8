"""Race a GEMM kernel family other than flysearch's split-K one on a CUDA GPU (used by
``aiter_triton_h200.py`` and ``tma_h200.py``).

A family is a table kernel name, the configs to race at a shape, and how to build a launch of one
config on torch tensors (``build(a, w, c, config) -> run``, where ``run()`` computes
``c = a @ w.T``). Per shape: ``workers`` processes each build and run every config once on the
shape (Triton compiles it into the shared cache); one process then validates and times every
config with the race's protocol (:func:`flysearch.evaluators.shape_bench`), each launch a replay of
a CUDA graph of the family's call (a Python wrapper's host cost can exceed a decode GEMM's time;
the protocol times the GPU), times cuBLAS, and re-times the shape's top in interleaved rounds with
cuBLAS as one more entry of every round (as ``flysearch race`` does).
"""

from __future__ import annotations

import concurrent.futures as cf
import dataclasses
import json
import multiprocessing as mp
import time
from collections.abc import Callable
from typing import Any

from flysearch.race import VENDOR_KEY, vendor_ms
from flysearch.space import Config, Param, Shape, Space, device_label
from flysearch.tables import GroundTruth, Row, TableMeta, read_table_file

__all__ = ["Family", "best", "load", "race_corpus", "race_shape", "space_of"]


@dataclasses.dataclass(frozen=True)
class Family:
    """A kernel family raced by this module.

    Attributes:
        kernel: The kernel name its tables carry (``aiter_triton_gemm``, ``triton_gemm_tma``).
        space: The name and parameters stored in each table's meta.
        configs: The configs to race at a shape.
        builder: ``"module:function"`` of ``build(a, w, c, config) -> run`` (a name, so that the
            compile workers can import it).
        ops: Kernel launches one call makes, for the protocol's launch cap.
        notes: What the tables should say about how the configs were chosen.
    """

    kernel: str
    space: Space
    configs: Callable[[Shape], list[dict[str, Any]]]
    builder: str
    ops: Callable[[dict[str, Any]], int] = lambda config: 1
    notes: str = ""


_W: dict[str, Any] = {}


def _build(builder: str) -> Callable[..., Callable[[], None]]:
    import importlib

    module, _, name = builder.partition(":")
    return getattr(importlib.import_module(module), name)


def _worker_init(shape: tuple[int, int, int], builder: str, path: list[str]) -> None:
    import sys

    import torch

    sys.path[:0] = [p for p in path if p not in sys.path]
    m, n, k = shape
    _W.update(a=torch.randn(m, k, device="cuda", dtype=torch.bfloat16),
              w=torch.randn(n, k, device="cuda", dtype=torch.bfloat16),
              c=torch.empty(m, n, device="cuda", dtype=torch.bfloat16), build=_build(builder))


def _worker_compile(config: dict[str, Any]) -> tuple[str, float, str]:
    """Build and run *config* once (Triton compiles it into the shared cache)."""
    import torch

    t0 = time.perf_counter()
    try:
        _W["build"](_W["a"], _W["w"], _W["c"], config)()
        torch.cuda.synchronize()
    except Exception as exc:
        return "compile_failed", time.perf_counter() - t0, f"{type(exc).__name__}: {exc}"[:300]
    return "ok", time.perf_counter() - t0, ""


def _key(config: dict[str, Any]) -> str:
    return Config.from_dict(config).key


def _compile_all(family: Family, shape: Shape, configs: list[dict[str, Any]], workers: int,
                 label: str) -> dict[str, tuple[str, float, str]]:
    import sys

    compiled: dict[str, tuple[str, float, str]] = {}
    ctx = mp.get_context("spawn")
    init = ((shape.M, shape.N, shape.K), family.builder, list(sys.path))
    with cf.ProcessPoolExecutor(workers, mp_context=ctx, initializer=_worker_init, initargs=init) as pool:
        futures = {pool.submit(_worker_compile, c): _key(c) for c in configs}
        for i, fut in enumerate(cf.as_completed(futures), 1):
            try:
                compiled[futures[fut]] = fut.result()
            except Exception as exc:  # a worker that died takes its config with it
                compiled[futures[fut]] = ("compile_failed", 0.0, f"worker: {type(exc).__name__}: {exc}"[:300])
            if i % 200 == 0:
                print(f"  {label}: compiled {i}/{len(configs)}", flush=True)
    return compiled


def race_shape(family: Family, entry: Any, workers: int, info: dict[str, Any], source: str,
               versions: dict[str, str] | None = None) -> GroundTruth:
    """Race *family* on corpus *entry*'s shape; the table, its top re-timed."""
    import torch

    from flysearch.evaluators import (
        interleaved_rounds,
        protocol_dict,
        rounds_record,
        shape_bench,
        top_rows,
        with_rounds,
    )

    shape = entry.shape
    configs = family.configs(shape)
    start = time.monotonic()
    compiled = _compile_all(family, shape, configs, workers, entry.name)
    compile_wall = time.monotonic() - start
    build = _build(family.builder)
    bench = shape_bench(shape.as_dict())
    vendor = dict(bench.time_vendor())
    vendor.update({"backend": "cublas", "op": "torch.mm(A, W.t())"})
    rows: dict[str, Row] = {}
    best: float | None = None

    def launcher(config: dict[str, Any]) -> tuple[Callable[[int], None], int]:
        """One CUDA graph per rotating input set, replayed as the launch."""
        sets, c = bench.sets, bench.c
        build(sets[0][0], sets[0][1], c, config)()  # load the binary before capturing
        torch.cuda.synchronize()
        return graph_replays(bench, lambda a, w, c: build(a, w, c, config)), family.ops(config)

    for config in configs:
        key = _key(config)
        outcome, compile_s, detail = compiled[key]
        if outcome != "ok":
            rows[key] = Row(key, config, outcome, compile_s=compile_s, detail=detail)
            continue
        try:
            launch, ops = launcher(config)
        except Exception as exc:
            rows[key] = Row(key, config, "runtime_failed", compile_s=round(compile_s, 4),
                            detail=f"launch: {type(exc).__name__}: {exc}"[:300])
            continue
        res = bench.time_launch(launch, ops, best)
        del launch
        rows[key] = Row(key, config, res["outcome"], time_ms=res.get("time_ms"),
                        compile_s=round(compile_s, 4), bench_s=res.get("bench_s"),
                        detail=res.get("detail", ""), extra=res.get("extra", {}))
        if res["outcome"] == "ok" and (best is None or res["time_ms"] < best):
            best = res["time_ms"]
        if res.get("fatal"):
            print(f"  {entry.name}: the GPU context failed on {key}; stopping this shape", flush=True)
            break
    notes = {"vendor": vendor, "shape_name": entry.name, "model": entry.model, "layer": entry.layer,
             "protocol": protocol_dict(), "configs_from": family.notes,
             "compile_wall_s": round(compile_wall, 1), "workers": workers}
    name = f"{family.kernel}/{device_label(info['device'])}/{shape.M}x{shape.N}x{shape.K}"
    meta = TableMeta(name=name, kernel=family.kernel,
                     arch="sm_90", device=info["device"], problem=shape.as_dict(),
                     space=family.space.to_json(), source=source,
                     versions={**info["versions"], **(versions or {})},
                     notes=json.dumps(notes, sort_keys=True))
    table = GroundTruth(meta, rows)
    tops = top_rows(table, 0.05, 8, 32)
    by_key = {r.key: launcher(r.params) for r in tops}

    def time_one(row: Row) -> float | str | None:
        if row.key == VENDOR_KEY:
            res = bench.time_vendor()
        else:
            launch, ops = by_key[row.key]
            res = bench.time_launch(launch, ops)
        return res["time_ms"] if res["outcome"] == "ok" else res.get("detail") or res["outcome"]

    # cuBLAS in the rounds too: its time before the first config is not comparable (the race's rule)
    items = [*tops, Row(VENDOR_KEY, {}, "ok")] if tops else []
    samples, failed = interleaved_rounds(items, time_one, 10, 0)
    vendor_times, vendor_failed = samples.pop(VENDOR_KEY, []), failed.pop(VENDOR_KEY, None)
    for r in with_rounds(tops, samples, failed):
        table.rows[r.key] = r
    if tops:
        vendor["retime"] = rounds_record(vendor_times, vendor_failed)
        notes["vendor"] = vendor
        table = GroundTruth(dataclasses.replace(meta, notes=json.dumps(notes, sort_keys=True)), table.rows)
    retimed = table.retimed_ms()
    print(f"{meta.name}: {sum(r.ok for r in rows.values())}/{len(configs)} ok in "
          f"{time.monotonic() - start:.1f} s (compiles {compile_wall:.1f} s); best "
          f"{min(retimed.values()) if retimed else best} ms, cuBLAS {vendor_ms(table.meta)} ms", flush=True)
    return table


def race_corpus(family: Family, corpus: list[Any], out: Any, workers: int, source: str, *,
                versions: dict[str, str] | None = None, cache_dir: str | None = None,
                deadline: float | None = None) -> None:
    """Race *family* on every entry of *corpus* into folder *out*: one table file per shape, then
    ``race_report.json`` (the command, commit, device, versions, date and wall time). No shape is
    started after *deadline* seconds; a table is written whole or not at all, and a shape whose
    table is already in *out* is skipped, so a rerun resumes (the report keeps the earlier runs'
    reports under ``earlier``)."""
    import datetime as dt
    import sys
    from pathlib import Path

    from flysearch.compare import code_commit
    from flysearch.evaluators import device_info
    from flysearch.tables import dump_table_file

    if cache_dir:
        import os

        os.environ["TRITON_CACHE_DIR"] = cache_dir  # the workers inherit it
    started = time.monotonic()
    info = device_info()
    label = device_label(info["device"])  # the table names' device: H200 or H100
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for entry in corpus:
        s = entry.shape
        if (out / f"{family.kernel}__{label}__{s.M}x{s.N}x{s.K}.table.json.gz").exists():
            continue
        if deadline and time.monotonic() - started > deadline:
            print(f"deadline: {entry.name} and later shapes not raced", flush=True)
            break
        table = race_shape(family, entry, workers, info, source, versions)
        path = out / f"{table.name.replace('/', '__')}.table.json.gz"
        dump_table_file(table, path)
        written.append(path.name)
    report = out / "race_report.json"
    earlier = []
    if report.exists():
        before = json.loads(report.read_text())
        earlier = [*before.pop("earlier", []), before]
    report.write_text(json.dumps({
        "provenance": {"command": " ".join(["python", *sys.argv]),
                       "commit": code_commit(Path(__file__).resolve().parents[2]),
                       "device": info["device"], "versions": {**info["versions"], **(versions or {})},
                       "date": dt.date.today().isoformat()},
        "wall_s": round(time.monotonic() - started, 1), "tables": written,
        **({"earlier": earlier} if earlier else {}),
    }, indent=1) + "\n")


def graph_replays(bench: Any, make_run: Callable[[Any, Any, Any], Callable[[], None]]
                  ) -> Callable[[int], None]:
    """``launch(i)``: the replay of a CUDA graph of ``make_run(a, w, c)`` captured on *bench*'s
    rotating input set ``i`` (a Python wrapper's host cost stays out of the timing). The binary
    must be loaded (run once) before."""
    import torch

    graphs = []
    for a, w in bench.sets:
        run = make_run(a, w, bench.c)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            run()
        graphs.append(graph)

    def launch(i: int) -> None:
        graphs[i].replay()

    return launch


def space_of(name: str, params: list[Param]) -> Space:
    """The space a family's tables record: its parameters, no constraints (the configs raced are
    listed in the table)."""
    return Space(name, params, [])


def load(path: Any) -> GroundTruth:
    """A committed table file as a :class:`GroundTruth`."""
    meta, rows = read_table_file(path)
    return GroundTruth(meta, {r.key: r for r in rows})


def best(table: GroundTruth) -> tuple[float, Row] | None:
    """The table's confirmed best row and its time (the re-timed median where its top was re-timed,
    else the race's); ``None`` when no config ran."""
    ranked = table.ranked()
    if not ranked:
        return None
    return table.retimed_ms().get(ranked[0].key, ranked[0].time_ms), ranked[0]
