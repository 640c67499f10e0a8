"""Does the program count of the persistent TMA GEMM pay? The same configs launched with three
program counts on the H200, beside cuBLAS.

    python lab/benchmarks/tma_programs.py run --data lab/benchmarks/data/h200_tma --top 3 \\
        --shapes 512x14336x4096 1024x6144x4096 2048x4096x14336 4096x4096x4096 4096x6144x4096 \\
        64x28672x4096 256x1536x7168 --out /tmp/o/tma_programs.json                        # GPU
    python lab/benchmarks/tma_programs.py run --data lab/benchmarks/data/h200_tma --top 3 \\
        --shapes 512x14336x4096 --dry-run                                                  # CPU
    python lab/benchmarks/tma_programs.py report --json /tmp/o/tma_programs.json \\
        --out lab/benchmarks/results/tma_programs.md                                           # CPU

``triton_gemm_tma`` (``flysearch/kernels/_triton_tma.py``) is persistent: its launcher starts
``min(SMs, tiles)`` programs and each walks the output tiles with a stride of ``NUM_SMS``. The
program count is not an axis of the space, so no race has measured whether another count is
faster. Two arguments say it might be: with ``min(SMs, tiles)`` programs and one block per SM, an
SM that finishes its tiles early idles while the last wave runs (a tail that more, smaller-grained
programs can fill when two blocks fit an SM), and a non-persistent launch (one program per tile)
lets the hardware scheduler balance the tiles. Against them: more programs mean more prologues and
less overlap of one tile's epilogue with the next tile's loads, which the flattened persistent loop
buys.

``run`` takes, for each shape, the ``--top`` fastest configs of the committed TMA table of that
shape (``--data``, ranked by :meth:`flysearch.tables.GroundTruth.ranked`) and launches each with
``min(SMs, tiles)`` programs (today: flysearch's launcher as it ships), ``min(2 * SMs, tiles)``
and ``tiles`` programs (the kernel called directly, ``NUM_SMS`` set to the grid size so that the
tile loop's stride is the number of programs). Where two counts coincide (few tiles) the launch is
timed once and the other column repeats it. Each launch is first checked against
``A.float() @ W.float().T`` (output filled with NaN first; ``rtol = atol = 1e-2`` after rounding the
reference to bf16), then timed in ``--rounds`` interleaved rounds with cuBLAS (``torch.mm(A, W.t())``):
each round times every launch and cuBLAS once, in an order shuffled with a fixed seed, so that a slow
stretch of the GPU falls on different variants in different rounds; each timing is the race's own
protocol (:func:`flysearch.evaluators.shape_bench`: CUDA-graph replays on rotating input sets a few
times the L2 size, the median of batch means, the result validated), the same protocol the tables
were raced with. Per variant the median over rounds is kept. ``report`` turns the JSON into a
markdown table and the median over shapes of (best program count / today's), and sets cuBLAS and
the best config, timed here in the same rounds, beside the times of the table's race session, where
cuBLAS was timed once per shape before any config.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "lab" / "benchmarks"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(BENCHMARKS))  # _race_helpers, also when imported as a module

from _race_helpers import load  # noqa: E402

from flysearch.compare import code_commit  # noqa: E402
from flysearch.space import Shape  # noqa: E402

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

DRY_RUN_SMS = 132  # the H200's SM count, for --dry-run (no GPU to ask)
VARIANTS: tuple[str, ...] = ("today", "2xSMs", "tiles")
"""The launch sizes compared: ``min(SMs, tiles)`` (the launcher as it ships), ``min(2 * SMs, tiles)``
and ``tiles`` (one program per tile, not persistent)."""
CUBLAS = "cublas"


# -- shapes, tables, configs (no GPU) -----------------------------------------------------------


def parse_shape(text: str) -> Shape:
    """``"512x14336x4096"`` as a bf16 :class:`Shape`."""
    try:
        m, n, k = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape {text!r} is not MxNxK") from None
    return Shape(m, n, k)


def shape_name(shape: Shape) -> str:
    return f"{shape.M}x{shape.N}x{shape.K}"


def table_path(data: list[Path], shape: Shape) -> Path:
    """The committed TMA table of *shape*: in the first folder of *data* that holds it (else where
    the first folder would hold it)."""
    name = f"triton_gemm_tma__H200__{shape_name(shape)}.table.json.gz"
    return next((d / name for d in data if (d / name).exists()), data[0] / name)


def program_counts(config: dict[str, Any], shape: Shape, sms: int) -> dict[str, int]:
    """Programs of each variant of :data:`VARIANTS` for *config* at *shape* on *sms* SMs."""
    tiles = math.ceil(shape.M / int(config["BLOCK_M"])) * math.ceil(shape.N / int(config["BLOCK_N"]))
    return {"today": min(sms, tiles), "2xSMs": min(2 * sms, tiles), "tiles": tiles}


def distinct_variants(counts: dict[str, int]) -> dict[str, str]:
    """Each variant mapped to the variant whose launch it repeats (itself when its program count is
    new): the first of :data:`VARIANTS` with the same count is timed, the others repeat it."""
    owner: dict[int, str] = {}
    return {v: owner.setdefault(counts[v], v) for v in VARIANTS}


def short_config(params: dict[str, Any]) -> str:
    """``BMxBNxBK gG sS wW`` (``+sub`` with EPILOGUE_SUBTILE)."""
    p = params
    sub = "+sub" if p["EPILOGUE_SUBTILE"] else ""
    return (f"{p['BLOCK_M']}x{p['BLOCK_N']}x{p['BLOCK_K']} g{p['GROUP_M']} s{p['num_stages']} "
            f"w{p['num_warps']}{sub}")


def select(args: argparse.Namespace) -> list[tuple[Shape, Path, list[tuple[str, dict[str, Any], float]]]]:
    """Per shape of ``--shapes``: its table file and its ``--top`` configs ``(key, params, table ms)``,
    fastest first (re-timed median where the table has one, else the race's time)."""
    out = []
    missing = [str(table_path(args.data, s)) for s in args.shapes if not table_path(args.data, s).exists()]
    if missing:
        sys.exit("no TMA table for: " + ", ".join(missing))
    for shape in args.shapes:
        path = table_path(args.data, shape)
        table = load(path)
        retimed = table.retimed_ms()
        top = [(r.key, dict(r.params), float(retimed.get(r.key, r.time_ms or 0.0)))
               for r in table.ranked()[: args.top]]
        out.append((shape, path, top))
    return out


def dry_run(args: argparse.Namespace) -> None:
    sms = DRY_RUN_SMS
    print(f"dry run: SMs = {sms}; variants {', '.join(VARIANTS)}", flush=True)
    for shape, path, top in select(args):
        print(f"{shape_name(shape)} ({shape.regime}): {path}", flush=True)
        for key, params, ms in top:
            counts = program_counts(params, shape, sms)
            owners = distinct_variants(counts)
            cells = ", ".join(f"{v}={counts[v]}" + (f" (= {owners[v]})" if owners[v] != v else "")
                              for v in VARIANTS)
            print(f"  {short_config(params):<28} table {ms:.4f} ms | programs {cells} | {key}", flush=True)


# -- launching and timing (GPU) -----------------------------------------------------------------


def build(a: Any, w: Any, c: Any, config: dict[str, Any], programs: int | None) -> Callable[[], None]:
    """A zero-argument launch of ``c = a @ w.T`` for *config* with *programs* programs
    (``None``: the launcher's default, ``min(SMs, tiles)``, as the races ran)."""
    from flysearch.kernels import tma_gemm_launcher

    return tma_gemm_launcher(a, w, c, config, programs=programs)


def check(bench: Any, config: dict[str, Any], programs: int | None) -> tuple[bool, float | None]:
    """Run once on the first rotating set (compiling it) into a NaN-filled output and compare with
    ``A.float() @ W.float().T`` rounded to bf16; ``(ok, max abs error)``."""
    import torch

    a, w = bench.sets[0]
    bench.c.fill_(float("nan"))
    build(a, w, bench.c, config, programs)()
    torch.cuda.synchronize()
    got, ref = bench.c.float(), bench.refs[0].to(torch.bfloat16).float()
    ok = bool(torch.allclose(got, ref, rtol=1e-2, atol=1e-2))
    err = float((got - ref).abs().max().item())
    return ok, err if err == err else None  # NaN (an unwritten tile) -> None


def _vid(key: str, variant: str) -> str:
    return f"{key}|{variant}"


def run_shape(shape: Shape, path: Path, top: list[tuple[str, dict[str, Any], float]], sms: int,
              rounds: int, seed: int) -> dict[str, Any]:
    """Check and time every distinct launch of *top* at *shape* and cuBLAS in interleaved rounds."""
    import torch

    from flysearch.evaluators import interleaved_rounds, shape_bench

    name = shape_name(shape)
    bench = shape_bench(shape.as_dict())
    launches: dict[str, Callable[[int], None]] = {}
    configs: list[dict[str, Any]] = []
    for key, params, table_ms in top:
        counts = program_counts(params, shape, sms)
        owners = distinct_variants(counts)
        entry: dict[str, Any] = {"key": key, "short": short_config(params), "params": params,
                                 "table_ms": table_ms, "tiles": counts["tiles"], "variants": {}}
        for variant in VARIANTS:
            rec: dict[str, Any] = {"programs": counts[variant], "same_as": None}
            if owners[variant] != variant:
                rec["same_as"] = owners[variant]
                entry["variants"][variant] = rec
                continue
            programs = None if variant == "today" else counts[variant]
            try:
                ok, err = check(bench, params, programs)
                rec.update(check_ok=ok, max_abs_err=err)
                if ok:
                    launches[_vid(key, variant)] = bench.graph_launch(
                        lambda a, w, c, p=params, n=programs: build(a, w, c, p, n))
            except Exception as exc:  # a compile or launch failure is this variant's result
                rec.update(check_ok=False, detail=f"{type(exc).__name__}: {exc}"[:300])
                torch.cuda.synchronize()  # raises again if the context is gone: stop there
            entry["variants"][variant] = rec
            print(f"{name} | {short_config(params)} | {variant} ({counts[variant]} programs): check "
                  f"{'ok' if rec['check_ok'] else 'FAILED'} (max abs err {rec.get('max_abs_err')})"
                  + (f" {rec['detail']}" if rec.get("detail") else ""), flush=True)
        configs.append(entry)

    def time_one(vid: str) -> float | str | None:
        if vid == CUBLAS:
            res = bench.time_vendor()
        else:
            res = bench.time_launch(launches[vid], 1)
        if res.get("fatal"):
            raise RuntimeError(f"the GPU context failed on {vid}: {res.get('detail')}")
        return res["time_ms"] if res["outcome"] == "ok" else res.get("detail") or res["outcome"]

    items = [CUBLAS, *launches]
    samples, failed = interleaved_rounds(items, time_one, rounds, seed, key=lambda v: v)
    cublas = samples.get(CUBLAS) or []
    cublas_ms = statistics.median(cublas) if cublas and CUBLAS not in failed else None
    print(f"{name} | cuBLAS: {cublas_ms} ms ({len(cublas)} rounds)", flush=True)
    for entry in configs:
        for variant in VARIANTS:
            rec = entry["variants"][variant]
            if rec["same_as"]:
                continue
            times = samples.get(_vid(entry["key"], variant), [])
            vfail = failed.get(_vid(entry["key"], variant))
            rec.update(rounds=len(times), rounds_ms=[round(t, 6) for t in times],
                       median_ms=statistics.median(times) if times and not vfail else None)
            rec["ok"] = bool(rec["check_ok"]) and rec["median_ms"] is not None
            if vfail:
                rec["detail"] = vfail
        today = entry["variants"]["today"].get("median_ms")
        for variant in VARIANTS:
            rec = entry["variants"][variant]
            src = entry["variants"][rec["same_as"] or variant]
            ms = src.get("median_ms")
            vs_today = f"{ms / today:.3f}" if ms and today else "-"
            vs_cublas = f"{ms / cublas_ms:.3f}" if ms and cublas_ms else "-"
            same = f" (= {rec['same_as']})" if rec["same_as"] else ""
            print(f"{name} | {entry['short']} | {variant} ({rec['programs']} programs){same}: "
                  f"{ms if ms is None else round(ms, 5)} ms ({src.get('rounds', 0)} rounds, ok "
                  f"{src.get('ok')}) /today {vs_today} /cuBLAS {vs_cublas}", flush=True)
    launches.clear()  # free the graphs before the next shape's inputs
    return {"shape": name, "M": shape.M, "N": shape.N, "K": shape.K, "regime": shape.regime,
            "table": str(path.resolve().relative_to(ROOT)) if path.resolve().is_relative_to(ROOT)
            else str(path), "cublas_ms": cublas_ms, "cublas_rounds": len(cublas),
            "cublas_rounds_ms": [round(t, 6) for t in cublas], "configs": configs}


def run(args: argparse.Namespace) -> None:
    if args.dry_run:
        dry_run(args)
        return
    if args.out is None:
        sys.exit("run needs --out (or --dry-run)")
    from flysearch.evaluators import device_info, protocol_dict

    chosen = select(args)
    started = time.monotonic()
    info = device_info()
    sms = int(info["sms"])
    doc: dict[str, Any] = {
        "provenance": {
            "command": " ".join(["python", *sys.argv]), "commit": code_commit(ROOT, outputs=[RESULTS]),
            "date": dt.date.today().isoformat(), "device": info["device"], "sms": sms,
            "versions": info["versions"], "rounds": args.rounds, "seed": args.seed, "top": args.top,
            "data": [str(d) for d in args.data], "protocol": protocol_dict(), "variants": list(VARIANTS),
        },
        "shapes": [],
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    print(f"{info['device']}: {sms} SMs; {len(chosen)} shapes x {args.top} configs x {len(VARIANTS)} "
          f"program counts, {args.rounds} rounds", flush=True)
    for i, (shape, path, top) in enumerate(chosen):
        if args.deadline is not None and time.monotonic() - started > args.deadline:
            print(f"deadline: {shape_name(shape)} and later shapes not run", flush=True)
            doc["provenance"]["stopped"] = f"deadline before {shape_name(shape)}"
            break
        try:
            doc["shapes"].append(run_shape(shape, path, top, sms, args.rounds, args.seed + i))
        except RuntimeError as exc:
            print(f"{shape_name(shape)}: {exc}; stopping", flush=True)
            doc["provenance"]["stopped"] = f"{shape_name(shape)}: {exc}"[:300]
            break
        finally:
            doc["provenance"]["wall_s"] = round(time.monotonic() - started, 1)
            args.out.write_text(json.dumps(doc, indent=1) + "\n")  # after every shape: a kill keeps them
    print(f"wrote {args.out} ({len(doc['shapes'])} shapes, {time.monotonic() - started:.0f} s)", flush=True)


# -- report (CPU) -------------------------------------------------------------------------------


def _ms(rec: dict[str, Any], variants: dict[str, Any]) -> float | None:
    src = variants[rec["same_as"]] if rec.get("same_as") else rec
    return src.get("median_ms") if src.get("ok") else None


def _fmt(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def _against_the_race(doc: dict[str, Any], per_shape: list[tuple[Any, ...]]) -> list[str]:
    """cuBLAS and the best config timed here, in interleaved rounds, against the times of the
    table's race session (cuBLAS timed once per shape, before the configs), per shape and regime."""
    from flysearch.race import vendor_ms

    data = doc["provenance"]["data"]
    best_here = {name: t_ms for name, t_ms, *_ in per_shape}
    lines = ["", "cuBLAS and the best config here against the table's race session (*race*: the "
             "table's re-timed best and the cuBLAS time its race took once per shape; *here*: both "
             "in the interleaved rounds above):", "",
             "| shape | regime | cuBLAS race ms | cuBLAS here ms | here / race | best / cuBLAS, race "
             "| best / cuBLAS, here |", "|---|---|---:|---:|---:|---:|---:|"]
    by_regime: dict[str, list[tuple[float, float]]] = {}
    for s in doc["shapes"]:
        # a table named by its path from the repository's root, or (older runs) in the one --data
        table = load(_from_root(s["table"]) if "/" in s["table"] else _from_root(data) / s["table"])
        race_vendor, here_vendor = vendor_ms(table.meta), s.get("cublas_ms")
        ranked = table.ranked()
        race_best = table.retimed_ms().get(ranked[0].key, ranked[0].time_ms) if ranked else None
        here_best = best_here.get(s["shape"])
        if not (race_vendor and here_vendor and race_best and here_best):
            continue
        race_ratio, here_ratio = race_best / race_vendor, here_best / here_vendor
        by_regime.setdefault(s["regime"], []).append((race_ratio, here_ratio))
        by_regime.setdefault("all", []).append((race_ratio, here_ratio))
        lines.append(f"| {s['shape']} | {s['regime']} | {race_vendor:.4f} | {here_vendor:.4f} | "
                     f"{here_vendor / race_vendor:.3f} | {race_ratio:.3f} | {here_ratio:.3f} |")
    lines += ["", "| regime | shapes | median best / cuBLAS, race | median best / cuBLAS, here |",
              "|---|---:|---:|---:|"]
    for regime in sorted(by_regime, key=lambda r: (r == "all", r)):
        pairs = by_regime[regime]
        lines.append(f"| {regime} | {len(pairs)} | {statistics.median(p[0] for p in pairs):.3f} | "
                     f"{statistics.median(p[1] for p in pairs):.3f} |")
    return lines


def _from_root(path: str) -> Path:
    """A path a run recorded from the repository's root; one recorded before benchmarks/ moved under
    lab/ lies there now."""
    here = ROOT / path
    return here if here.exists() or not (ROOT / "lab" / path).exists() else ROOT / "lab" / path


def report(args: argparse.Namespace) -> None:
    doc = json.loads(args.json.read_text())
    prov = doc["provenance"]
    versions = prov.get("versions", {})
    lines = [
        "# The program count of the persistent TMA GEMM on the H200", "",
        f"- command: `{' '.join(['python', *sys.argv])}`",
        f"- measured with: `{prov['command']}`",
        f"- commit: {prov.get('commit') or 'not recorded'}",
        f"- hardware: {prov['device']} ({prov['sms']} SMs); report on {platform.machine()}",
        "- versions: " + ", ".join(f"{k} {versions[k]}" for k in ("torch", "triton", "cuda", "driver",
                                                                   "python") if versions.get(k)),
        f"- date: {prov['date']}", "",
        f"Each shape's {prov['top']} fastest configs of its committed TMA table, each launched with "
        "`min(SMs, tiles)` programs (*today*: flysearch's launcher), `min(2 * SMs, tiles)` (*2xSMs*) and "
        "`tiles` (one program per tile, not persistent), beside cuBLAS (`torch.mm(A, W.t())`). Times "
        f"(ms) are medians over {prov['rounds']} interleaved rounds, each round every launch and cuBLAS "
        "once in a shuffled order, each timing the race's protocol (CUDA-graph replays on rotating "
        "inputs a few times the L2 size). *table ms*: the config's time in its table (the re-timed "
        "median where it has one), to compare with *today*. A cell in *italics* repeats the launch of the "
        "column to its left (the same program count); `wrong` failed the check against "
        "`A.float() @ W.float().T`.",
        "",
        "| shape | config | table ms | tiles | today ms (programs) | 2xSMs ms (programs) "
        "| tiles ms (programs) | best / today | today / cuBLAS | 2xSMs / cuBLAS | tiles / cuBLAS "
        "| cuBLAS ms |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    per_config: list[float] = []
    single: list[str] = []  # shapes where every config has tiles <= SMs: one program count only
    per_shape: list[tuple[str, float | None, str, float | None, str, float | None]] = []
    for s in doc["shapes"]:
        cublas = s.get("cublas_ms")
        best_today: tuple[float, str] | None = None
        best_any: tuple[float, str] | None = None
        for c in s["configs"]:
            variants = c["variants"]
            cells, ratios = [], []
            times = {v: _ms(variants[v], variants) for v in VARIANTS}
            for v in VARIANTS:
                rec = variants[v]
                src = variants[rec["same_as"]] if rec.get("same_as") else rec
                if not src.get("ok"):
                    text = "wrong" if src.get("check_ok") is False else "failed"
                else:
                    text = _fmt(times[v], 4)
                cell = f"{text} ({rec['programs']})"
                cells.append(f"*{cell}*" if rec.get("same_as") else cell)
                ratios.append(_fmt(times[v] / cublas if times[v] and cublas else None))
            today = times["today"]
            # Only launches of their own (a repeated one is the same measurement), today's first on ties.
            ok_times = [(t, VARIANTS.index(v), v) for v, t in times.items()
                        if t is not None and not variants[v].get("same_as")]
            best = min(ok_times)[::2] if ok_times else None
            vs_today = best[0] / today if best and today else None
            if vs_today is not None:
                per_config.append(vs_today)
            if today is not None and (best_today is None or today < best_today[0]):
                best_today = (today, c["short"])
            if best and (best_any is None or best[0] < best_any[0]):
                best_any = (best[0], f"{c['short']}, {best[1]}")
            best_txt = "-" if vs_today is None else f"{vs_today:.3f} ({best[1]})" if best else "-"
            lines.append("| " + " | ".join([s["shape"], f"`{c['short']}`", _fmt(c.get("table_ms"), 4),
                                             str(c["tiles"]), *cells, best_txt,
                                             *ratios, _fmt(cublas, 4)]) + " |")
        if not any(c["variants"][v].get("same_as") is None for c in s["configs"] for v in VARIANTS[1:]):
            single.append(s["shape"])
        per_shape.append((s["shape"], best_today[0] if best_today else None,
                          best_today[1] if best_today else "-", best_any[0] if best_any else None,
                          best_any[1] if best_any else "-", cublas))
    lines += ["", "Per shape, the best of its configs with today's program count against the best of "
              "all its configs and program counts:", "",
              "| shape | best today ms | config | best of all ms | config, programs | best / today "
              "| best today / cuBLAS | best of all / cuBLAS |",
              "|---|---:|---|---:|---|---:|---:|---:|"]
    shape_ratios = []
    for name, t_ms, t_cfg, a_ms, a_cfg, cublas in per_shape:
        ratio = a_ms / t_ms if a_ms and t_ms else None
        if ratio is not None:
            shape_ratios.append(ratio)
        lines.append("| " + " | ".join([
            name, _fmt(t_ms, 4), f"`{t_cfg}`", _fmt(a_ms, 4), f"`{a_cfg}`", _fmt(ratio),
            _fmt(t_ms / cublas if t_ms and cublas else None),
            _fmt(a_ms / cublas if a_ms and cublas else None),
        ]) + " |")
    gains = sum(r < 0.99 for r in shape_ratios)
    lines += [
        "",
        f"- median over shapes of (best program count / today's), each shape's best config: "
        f"**{_fmt(statistics.median(shape_ratios) if shape_ratios else None)}** over {len(shape_ratios)} "
        f"shapes (min {_fmt(min(shape_ratios, default=None))}); another program count faster by more than "
        f"1% on {gains} of them",
        f"- shapes with one program count only (tiles <= SMs for each config, so the three launches are "
        f"one and the ratio is 1): {', '.join(single) if single else 'none'}",
        f"- median over (shape, config) pairs of (best program count / today's): "
        f"{_fmt(statistics.median(per_config) if per_config else None)} over {len(per_config)} pairs",
        "",
        "*best / today* is at most 1 by construction (today's count is one of the candidates) and 1 "
        "where today's is the fastest. The run-to-run noise of one config's median on the H200 is about "
        "1%, so only ratios below about 0.99 say that another program count pays.",
    ]
    lines += _against_the_race(doc, per_shape)
    if prov.get("stopped"):
        lines += ["", f"The run stopped early: {prov['stopped']}."]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="check and time the program counts on a CUDA GPU (or --dry-run)")
    r.add_argument("--data", type=Path, action="append", required=True,
                   help="folder of the committed TMA tables; repeatable (the first holding a shape wins)")
    r.add_argument("--shapes", type=parse_shape, nargs="+", required=True, help="MxNxK ...")
    r.add_argument("--top", type=int, default=3, help="configs per shape, fastest first")
    r.add_argument("--rounds", type=int, default=10)
    r.add_argument("--seed", type=int, default=0, help="seed of the rounds' orders (shape i uses seed + i)")
    r.add_argument("--out", type=Path, default=None, help="JSON file to write")
    r.add_argument("--deadline", type=float, default=None, help="start no shape after this many s")
    r.add_argument("--dry-run", action="store_true",
                   help=f"print the configs and program counts ({DRY_RUN_SMS} SMs) without CUDA")
    p = sub.add_parser("report", help="markdown from the JSON of run (CPU)")
    p.add_argument("--json", type=Path, required=True)
    p.add_argument("--out", type=Path, default=BENCHMARKS / "results" / "tma_programs.md")
    args = ap.parse_args()
    run(args) if args.command == "run" else report(args)


if __name__ == "__main__":
    main()
