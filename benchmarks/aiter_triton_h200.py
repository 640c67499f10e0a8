"""aiter's Triton GEMM raced on the H200: exhaustive ground truth for that kernel's design, beside
flysearch's own split-K Triton GEMM and cuBLAS, measured in one session.

    python benchmarks/aiter_triton_h200.py race --out benchmarks/data/h200_aiter_triton --workers 15   # GPU
    python benchmarks/aiter_triton_h200.py report --out benchmarks/results/aiter_triton_h200.md       # CPU

``race`` runs aiter's own ``gemm_a16w16`` (the installed ``amd-aiter``, imported without its
ROCm-only package init) over the configs of flysearch's ``triton_gemm_splitk`` space that its
rules keep at each shape, mapped onto aiter's keys (BLOCK_M -> BLOCK_SIZE_M, ..., SPLIT_K ->
NUM_KSPLIT); ``cache_modifier`` is left unset, and the AMD-only options (``waves_per_eu``,
``matrix_instr_nonkdim``, ``kpack``) have no meaning on NVIDIA and are dropped. So both kernels are
measured over the same configs: the difference is the kernel code (aiter: XCD remapping, split-K
partials in an fp32 buffer reduced by a second kernel; flysearch: atomics into a workspace).
Compiles run in ``--workers`` processes that each call the kernel once on the shape (filling the
Triton cache); one process then validates and times every config with the race's protocol
(:func:`flysearch.evaluators.shape_bench`), each launch a replay of a CUDA graph of
aiter's wrapper call (the wrapper's host cost exceeds a decode GEMM's time), re-times each shape's
top in interleaved rounds, and times cuBLAS. For the two families to meet in one session, race
flysearch's kernel on the same shapes in the same session with ``flysearch race run --only NAME
...`` into ``benchmarks/data/h200_aiter_triton_splitk``.

``report`` compares the committed tables: per shape the best of each family (re-timed medians) and
their ratios to cuBLAS as each session measured it.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import datetime as dt
import json
import math
import multiprocessing as mp
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flysearch.compare import code_commit  # noqa: E402
from flysearch.space import Config, Param, Shape, Space, get_arch, load_corpus  # noqa: E402
from flysearch.tables import GroundTruth, Row, TableMeta, dump_table_file, read_table_file  # noqa: E402

SHAPES = ROOT / "studies" / "shapes_h200.toml"
# One shape per regime, all with committed split-K tables: decode, small-M, prefill, square.
DEFAULT_ONLY = ("l3-8b-qkv-m1", "l3-8b-qkv-m64", "l3-8b-qkv-m1024", "l3-8b-o-m4096")
DATA = ROOT / "benchmarks" / "data" / "h200_aiter_triton"
KERNEL = "aiter_triton_gemm"
TO_AITER = {"BLOCK_M": "BLOCK_SIZE_M", "BLOCK_N": "BLOCK_SIZE_N", "BLOCK_K": "BLOCK_SIZE_K",
            "GROUP_M": "GROUP_SIZE_M", "SPLIT_K": "NUM_KSPLIT", "num_warps": "num_warps",
            "num_stages": "num_stages"}

_W: dict[str, Any] = {}


def _configs(shape: Shape) -> list[dict[str, Any]]:
    from flysearch.kernels import get_space

    feasible = get_space("triton_gemm_splitk").enumerate(shape, get_arch("sm_90")).feasible
    return [{TO_AITER[k]: v for k, v in c.items} for c in feasible]


def _launch_config(config: dict[str, Any], K: int) -> dict[str, Any]:
    """What aiter's wrapper is handed: the config plus the split size its own loader derives."""
    return {**config, "SPLITK_BLOCK_SIZE": math.ceil(K / config["NUM_KSPLIT"]), "cache_modifier": None}


def _gemm() -> Any:
    from flysearch.kernels import import_aiter_module

    return import_aiter_module("ops.triton.gemm_a16w16").gemm_a16w16


def _worker_init(shape: tuple[int, int, int]) -> None:
    import torch

    m, n, k = shape
    _W.update(a=torch.randn(m, k, device="cuda", dtype=torch.bfloat16),
              w=torch.randn(n, k, device="cuda", dtype=torch.bfloat16),
              c=torch.empty(m, n, device="cuda", dtype=torch.bfloat16), gemm=_gemm(), K=k)


def _worker_compile(config: dict[str, Any]) -> tuple[str, float, str]:
    """Run *config* once (Triton compiles it into the shared cache): (outcome, seconds, detail)."""
    import torch

    t0 = time.perf_counter()
    try:
        _W["gemm"](_W["a"], _W["w"], y=_W["c"], config=_launch_config(config, _W["K"]))
        torch.cuda.synchronize()
    except Exception as exc:
        return "compile_failed", time.perf_counter() - t0, f"{type(exc).__name__}: {exc}"[:300]
    return "ok", time.perf_counter() - t0, ""


def _key(config: dict[str, Any]) -> str:
    return Config.from_dict(config).key


def _race_shape(entry: Any, args: argparse.Namespace, info: dict[str, Any]) -> GroundTruth:
    from flysearch.evaluators import interleaved_rounds, protocol_dict, shape_bench, top_rows, with_rounds

    shape = entry.shape
    configs = _configs(shape)
    start = time.monotonic()
    compiled: dict[str, tuple[str, float, str]] = {}
    ctx = mp.get_context("spawn")
    with cf.ProcessPoolExecutor(args.workers, mp_context=ctx, initializer=_worker_init,
                                initargs=((shape.M, shape.N, shape.K),)) as pool:
        futures = {pool.submit(_worker_compile, c): _key(c) for c in configs}
        for i, fut in enumerate(cf.as_completed(futures), 1):
            try:
                compiled[futures[fut]] = fut.result()
            except Exception as exc:  # a worker that died takes its config with it
                compiled[futures[fut]] = ("compile_failed", 0.0, f"worker: {type(exc).__name__}: {exc}"[:300])
            if i % 200 == 0:
                print(f"  {entry.name}: compiled {i}/{len(configs)}", flush=True)
    compile_wall = time.monotonic() - start
    gemm = _gemm()
    bench = shape_bench(shape.as_dict())
    vendor = dict(bench.time_vendor())
    vendor.update({"backend": "cublas", "op": "torch.mm(A, W.t())"})
    rows: dict[str, Row] = {}
    best: float | None = None

    def launcher(config: dict[str, Any]) -> tuple[Any, int]:
        """One CUDA graph per rotating input set, replayed as the launch: aiter's Python wrapper
        costs tens of microseconds of host time a call, more than a decode GEMM takes, and the
        protocol times the GPU, not the host (flysearch's own kernel is launched through its
        compiled launcher, a few microseconds)."""
        import torch

        cfg, sets, c = _launch_config(config, shape.K), bench.sets, bench.c
        gemm(sets[0][0], sets[0][1], y=c, config=cfg)  # load the binary before capturing
        torch.cuda.synchronize()
        graphs = []
        for a, w in sets:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                gemm(a, w, y=c, config=cfg)
            graphs.append(graph)

        def launch(i: int) -> None:
            graphs[i].replay()

        return launch, (1 if config["NUM_KSPLIT"] == 1 else 2)

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
    space = Space(f"{KERNEL}_cuda", [Param(TO_AITER[p.name], p.values) for p in _splitk_params()], [])
    notes = {"vendor": vendor, "shape_name": entry.name, "model": entry.model, "layer": entry.layer,
             "protocol": protocol_dict(), "configs_from": "triton_gemm_splitk's feasible set at the shape, "
             "mapped onto aiter's keys; cache_modifier unset; AMD-only options dropped",
             "compile_wall_s": round(compile_wall, 1), "workers": args.workers}
    meta = TableMeta(name=f"{KERNEL}/H200/{shape.M}x{shape.N}x{shape.K}", kernel=KERNEL, arch="sm_90",
                     device=info["device"], problem=shape.as_dict(), space=space.to_json(),
                     source="benchmarks/aiter_triton_h200.py race",
                     versions={**info["versions"], "amd-aiter": _aiter_version()},
                     notes=json.dumps(notes, sort_keys=True))
    table = GroundTruth(meta, rows)
    tops = top_rows(table, 0.05, 8, 32)
    by_key = {r.key: launcher(r.params) for r in tops}

    def time_one(row: Row) -> float | str | None:
        launch, ops = by_key[row.key]
        res = bench.time_launch(launch, ops)
        return res["time_ms"] if res["outcome"] == "ok" else res.get("detail") or res["outcome"]

    samples, failed = interleaved_rounds(tops, time_one, 10, 0)
    for r in with_rounds(tops, samples, failed):
        table.rows[r.key] = r
    retimed = table.retimed_ms()
    print(f"{meta.name}: {sum(r.ok for r in rows.values())}/{len(configs)} ok in "
          f"{time.monotonic() - start:.1f} s (compiles {compile_wall:.1f} s); best "
          f"{min(retimed.values()) if retimed else best} ms, cuBLAS {vendor.get('time_ms')} ms", flush=True)
    return table


def _splitk_params() -> list[Param]:
    from flysearch.kernels import get_space

    return list(get_space("triton_gemm_splitk").params)


def _aiter_version() -> str:
    from flysearch.kernels import aiter_version

    return aiter_version() or "missing"


def race(args: argparse.Namespace) -> None:
    from flysearch.evaluators import device_info

    if args.cache_dir:
        os.environ["TRITON_CACHE_DIR"] = args.cache_dir  # the workers inherit it
    corpus = [e for e in load_corpus(args.shapes) if e.name in set(args.only or DEFAULT_ONLY)]
    started = time.monotonic()
    info = device_info()
    args.out.mkdir(parents=True, exist_ok=True)
    written = []
    for entry in corpus:
        table = _race_shape(entry, args, info)
        path = args.out / f"{table.name.replace('/', '__')}.table.json.gz"
        dump_table_file(table, path)
        written.append(path.name)
    (args.out / "race_report.json").write_text(json.dumps({
        "provenance": {"command": " ".join(["python", *sys.argv]), "commit": code_commit(ROOT),
                       "device": info["device"],
                       "versions": {**info["versions"], "amd-aiter": _aiter_version()},
                       "date": dt.date.today().isoformat()},
        "wall_s": round(time.monotonic() - started, 1), "tables": written,
    }, indent=1) + "\n")


def _best(table: GroundTruth) -> tuple[float, Row] | None:
    ranked = table.ranked()
    if not ranked:
        return None
    top = ranked[0]
    return table.retimed_ms().get(top.key, top.time_ms), top


def _vendor_ms(meta: TableMeta) -> float | None:
    return (json.loads(meta.notes or "{}").get("vendor") or {}).get("time_ms")


def _load(path: Path) -> GroundTruth:
    meta, rows = read_table_file(path)
    return GroundTruth(meta, {r.key: r for r in rows})


def _agreement(aiter: GroundTruth, splitk: GroundTruth) -> list[str]:
    """Spearman's rho over the configs both ran, and aiter's race time for split-K's best config
    relative to aiter's fastest race time."""
    from scipy.stats import spearmanr

    a_ms = {r.key: r.time_ms for r in aiter.ok_rows()}
    pairs = []
    for r in splitk.ok_rows():
        key = Config.from_dict({TO_AITER[k]: v for k, v in r.params.items()}).key
        if key in a_ms:
            pairs.append((a_ms[key], r.time_ms))
    rho = spearmanr([a for a, _ in pairs], [b for _, b in pairs]).statistic if len(pairs) > 2 else math.nan
    top = splitk.ranked()[0]
    mapped = Config.from_dict({TO_AITER[k]: v for k, v in top.params.items()}).key
    carried = a_ms.get(mapped)  # race times on both sides: the re-timed medians cover only the tops
    ratio = f"{carried / min(a_ms.values()):.3f}" if carried else "-"
    return [f"{rho:.3f}", ratio]


def report(args: argparse.Namespace) -> None:
    files = sorted(args.data.glob("*.table.json.gz"))
    if not files:
        sys.exit(f"no tables in {args.data}; race them first (see the docstring)")
    race_doc = json.loads((args.data / "race_report.json").read_text())
    lines = [
        "# aiter's Triton GEMM on the H200, beside flysearch's split-K family and cuBLAS", "",
        f"- command: `{' '.join(['python', *sys.argv])}`",
        f"- commit: {code_commit(ROOT)}",
        f"- hardware: tables raced on an NVIDIA H200 (`{args.data.relative_to(ROOT)}/race_report.json`: "
        f"{race_doc['provenance']['date']}, versions {race_doc['provenance']['versions']}); "
        f"report on {platform.machine()}",
        f"- date: {dt.date.today().isoformat()}", "",
        "Both kernels over the same configs (`triton_gemm_splitk`'s feasible set at each shape; aiter's "
        "AMD-only options dropped, `cache_modifier` unset). Best: the re-timed median of each table's "
        "top (10 interleaved rounds). The ratios to cuBLAS use the cuBLAS time of the same session.", "",
        "| shape | regime | configs | aiter ok | aiter best (ms) | aiter config | aiter / cuBLAS "
        "| split-K table | split-K best (ms) | split-K / cuBLAS | aiter / split-K | rank corr. "
        "| split-K's best in aiter |",
        "|---|---|---:|---:|---:|---|---:|---|---:|---:|---:|---:|---:|",
    ]
    for path in files:
        t = _load(path)
        shape = t.meta.shape()
        got = _best(t)
        split_path = next(iter(sorted(args.splitk.glob(f"triton_gemm__H200__{shape.M}x{shape.N}x{shape.K}"
                                                        ".table.json.gz"))), None)
        cells = [f"{shape.M}x{shape.N}x{shape.K}", shape.regime, str(len(t.rows)),
                 str(sum(r.ok for r in t.rows.values()))]
        if got is None:
            lines.append("| " + " | ".join([*cells, *["-"] * 9]) + " |")
            continue
        a_ms, a_row = got
        v = _vendor_ms(t.meta)
        cells += [f"{a_ms:.4g}", f"`{a_row.key}`", f"{a_ms / v:.3f}" if v else "-"]
        if split_path is not None:
            s = _load(split_path)
            s_ms, _ = _best(s) or (math.nan, None)
            sv = _vendor_ms(s.meta)
            cells += [f"`{split_path.parent.name}`", f"{s_ms:.4g}", f"{s_ms / sv:.3f}" if sv else "-",
                      f"{a_ms / s_ms:.3f}", *_agreement(t, s)]
        else:
            cells += ["-"] * 6
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "*aiter / split-K*: times from one session (both tables raced in it). aiter's launches are "
              "CUDA-graph replays of its wrapper call, flysearch's its compiled launcher's calls; both time "
              "the GPU. *rank corr.*: Spearman's rho of the two kernels' times over the configs both ran; "
              "*split-K's best in aiter*: aiter's time for split-K's best config over aiter's best (does the "
              "one kernel's tuned config carry over to the other?)."]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("race", help="race aiter's Triton GEMM on a CUDA GPU")
    r.add_argument("--shapes", type=Path, default=SHAPES)
    r.add_argument("--only", action="append", help=f"shape names (default: {', '.join(DEFAULT_ONLY)})")
    r.add_argument("--out", type=Path, default=DATA)
    r.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    r.add_argument("--cache-dir", default=None)
    p = sub.add_parser("report", help="compare the committed tables (CPU)")
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--splitk", type=Path, default=DATA.parent / "h200_aiter_triton_splitk")
    p.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "aiter_triton_h200.md")
    args = ap.parse_args()
    race(args) if args.command == "race" else report(args)


if __name__ == "__main__":
    main()
