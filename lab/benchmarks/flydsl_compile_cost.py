"""What one compile costs where binaries are shape-specialised (FlyDSL), measured on this CPU.

    python lab/benchmarks/flydsl_compile_cost.py --out lab/benchmarks/results/flydsl_compile_cost.md

1. Cold compiles: ``--configs`` feasible configs of the ``flydsl_gemm`` space per arch, spread over
   three shapes, each compiled once by ``FlydslCompileEvaluator`` (a fresh subprocess and a fresh
   FlyDSL cache a compile, what every flysearch FlyDSL search runs). For comparison, as many configs of
   ``triton_gemm_splitk`` for gfx942, each by ``compile_triton_for_amd`` in a fresh process with a
   fresh Triton cache.
2. Shape specialisation: per compiler, ``--cross`` configs compiled in one process with the cache
   kept, at shape A, B (M, N and K differ), B' (M alone differs from A), then A again. A compile is a
   cache hit when the cache gained no entry (FlyDSL: the launcher's in-memory artifact cache, an
   internal of flydsl 0.5; Triton: the entries of ``TRITON_CACHE_DIR``) and a miss when it gained one.
3. Seconds to 1% if every config a strategy compiles were a FlyDSL compile: the hard test set's
   median compiles to 1% (read with ``lab/hardtest/report.py``'s readers) times the median measured
   above. An estimate, not a FlyDSL search.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "lab" / "hardtest"))

from flysearch.compare import code_commit, host_description  # noqa: E402
from flysearch.evaluators import (  # noqa: E402
    FlydslCompileEvaluator,
    compile_flydsl_for_amd,
    compile_triton_for_amd,
    find_lld,
    flydsl_version,
)
from flysearch.kernels import get_space  # noqa: E402
from flysearch.space import Config, Shape, get_arch, parse_shape  # noqa: E402

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

SHAPES = ("4096x4096x4096", "2048x8192x1024", "128x14336x4096")
CROSS = (("A", "4096x4096x4096"), ("B", "2048x8192x1024"), ("B'", "8192x4096x4096"),
         ("A again", "4096x4096x4096"))
SPACE = {"flydsl": "flydsl_gemm", "triton": "triton_gemm_splitk"}
TRITON_ARCH = "gfx942"
Row = dict[str, Any]


def _configs(kind: str, arch: str, shapes: list[Shape], n: int, seed: int) -> list[Config]:
    """*n* configs feasible at every one of *shapes*, in an order fixed by *seed*."""
    space, target = get_space(SPACE[kind]), get_arch(arch)
    keep = [{c.key for c in space.enumerate(s, target).feasible} for s in shapes[1:]]
    return [c for c in space.enumerate(shapes[0], target).shuffled(seed) if all(c.key in k for k in keep)][:n]


def _compile(kind: str, arch: str, config: dict[str, Any], shape: Shape, fn: Any) -> tuple[Row, Any]:
    """One compile in this process: its seconds, cache entries after it and resources; the launcher."""
    import torch

    if kind == "flydsl":
        module, _, name = get_space(SPACE[kind]).kernel.partition(":")
        call = getattr(importlib.import_module(module), name)(shape)
        fn = fn or call.fn  # one launcher for every call: its artifact cache is kept
        args = dict(zip(("A", "B", "C", "M", "N", "K"), call.args, strict=True))
        start = time.perf_counter()
        res = compile_flydsl_for_amd(fn, arch, {**args, **config})[0]
        seconds, entries, digest = time.perf_counter() - start, len(fn._mem_cache), ""
    else:
        from flysearch.kernels import splitk_gemm_kernel

        m, n, k, bf16 = shape.M, shape.N, shape.K, torch.bfloat16
        args = {"a_ptr": torch.empty(m, k, dtype=bf16), "w_ptr": torch.empty(n, k, dtype=bf16),
                "c_ptr": torch.empty(m, n, dtype=bf16), "ws_ptr": torch.empty(m, n, dtype=torch.float32),
                "M": m, "N": n, "K": k}
        start = time.perf_counter()
        build = compile_triton_for_amd(splitk_gemm_kernel, arch, {**args, **config})
        seconds = time.perf_counter() - start
        res, digest = build.resources[0], (build.code_sha256 or "")[:12]
        entries = len(os.listdir(os.environ["TRITON_CACHE_DIR"]))
    return {"s": seconds, "entries": entries, "vgpr": res.vgpr, "agpr": res.agpr,
            "spills": res.vgpr_spills + res.sgpr_spills, "digest": digest}, fn


def run_child(kind: str, arch: str, calls: list[tuple[dict[str, Any], str]]) -> tuple[list[Row], float]:
    """*calls* (config, shape) compiled in order in a fresh process with a fresh Triton cache; its
    rows and its wall seconds."""
    with tempfile.TemporaryDirectory(prefix="flycost-") as cache:
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, __file__, "--child", kind, "--arch", arch],
                              input=json.dumps(calls), capture_output=True, text=True, check=True,
                              env={**os.environ, "TRITON_CACHE_DIR": cache})
        return json.loads(proc.stdout.splitlines()[-1]), time.perf_counter() - start


def cold_rows(archs: list[str], n: int, seed: int) -> list[Row]:
    """One row per cold compile: FlyDSL through its evaluator per arch, Triton for gfx942."""
    rows: list[Row] = []
    for kind, arch in [("flydsl", a) for a in archs] + [("triton", TRITON_ARCH)]:
        space = get_space(SPACE[kind])
        ev = FlydslCompileEvaluator(space.kernel or "", arch, space_params=[p.name for p in space.params])
        for j, text in enumerate(SHAPES):
            shape = parse_shape(text)
            for config in _configs(kind, arch, [shape], n // len(SHAPES) + (j < n % len(SHAPES)), seed + j):
                row = {"compiler": kind, "arch": arch, "shape": text, "key": config.key, "detail": ""}
                start = time.perf_counter()
                if kind == "flydsl":
                    got = ev.compile(config, shape)
                    res = ev.resources(got)
                    row.update(outcome=got.outcome.value, detail=got.detail, s=got.compile_s,
                               vgpr=res.get("vgpr"), agpr=res.get("agpr"),
                               spills=res.get("vgpr_spills", 0) + res.get("sgpr_spills", 0))
                else:
                    try:
                        (got,), _ = run_child(kind, arch, [(config.as_dict(), text)])
                        row.update(outcome="rejected" if got["spills"] else "ok", **got)
                    except subprocess.CalledProcessError as exc:
                        row.update(outcome="compile_failed", detail=exc.stderr.strip()[-200:], s=None)
                rows.append({**row, "wall": time.perf_counter() - start})
                print(rows[-1], flush=True)
    return rows


def cross_rows(archs: list[str], k: int, seed: int) -> list[Row]:
    """Per compiler and arch, *k* configs each compiled at A, B, B', A again in one process."""
    rows = []
    for kind, arch in [("flydsl", a) for a in archs] + [("triton", TRITON_ARCH)]:
        configs = _configs(kind, arch, [parse_shape(s) for _, s in CROSS[:3]], k, seed)
        got, _ = run_child(kind, arch, [(c.as_dict(), s) for c in configs for _, s in CROSS])
        for i, r in enumerate(got):
            step, shape = CROSS[i % len(CROSS)]
            hit = r["entries"] == (got[i - 1]["entries"] if i else 0)
            rows.append({"compiler": kind, "arch": arch, "key": configs[i // len(CROSS)].key, "step": step,
                         "shape": shape, "first": i == 0, "hit": hit, **r})
            print(rows[-1], flush=True)
    return rows


def _row(*cells: Any) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"


def _stats(xs: list[float]) -> str:
    if len(xs) < 2:
        return " | ".join([f"{xs[0]:.2f}" if xs else "–"] * 3)
    q = statistics.quantiles(xs, n=10, method="inclusive")
    return f"{statistics.median(xs):.2f} | {q[0]:.2f} | {q[8]:.2f}"


def estimate_lines(compile_s: float, wall_s: float) -> list[str]:
    """Median compiles to 1% per strategy on the hard test set (report.py's readers) times the seconds."""
    import report as hardtest  # lab/hardtest/report.py

    cold, transfer = hardtest.cold_rows(), hardtest._rows("hardtest_transfer")
    tables = sorted(cold)
    lines = ["| strategy | comparison | compiles to 1% | est. s, compile call | est. s, evaluator wall |",
             "|---|---|---:|---:|---:|"]
    for label, rows, names in (("cold start", cold, ("auto", *hardtest.ANCHORS)),
                               ("transfer", transfer, ("costmodel", *hardtest.ZERO_SHOT))):
        for name in (s for s in names if all(s in rows[t] for t in tables)):
            c = statistics.median(hardtest._compiles(rows[t][name]) for t in tables)
            more, c = (">" if c > hardtest.BUDGET else ""), min(c, hardtest.BUDGET)
            lines.append(_row(f"`{name}`", label, f"{more}{c:g}", f"{more}{c * compile_s:.0f}",
                              f"{more}{c * wall_s:.0f}"))
    return lines


def report(cold: list[Row], cross: list[Row], command: str, k: int) -> str:
    lld = find_lld()
    ver = {p: importlib.metadata.version(p) for p in ("triton", "torch")}
    lines = ["# What a compile costs where binaries are shape-specialised: FlyDSL on this CPU", "",
             f"- command: `{command}`", f"- commit: {code_commit(ROOT, outputs=[RESULTS])}",
             f"- hardware: {host_description()}, load average {os.getloadavg()[0]:.2f} at the end; no GPU: "
             "every compile is compile-only (FlyDSL `COMPILE_ONLY=1`, Triton `GPUTarget(\"hip\", arch, 64)`) "
             "one at a time",
             f"- versions: Python {platform.python_version()}, flydsl {flydsl_version()}, "
             f"triton {ver['triton']}, torch {ver['torch']}, ld.lld {lld.major if lld else 'none'}",
             f"- date: {subprocess.run(['date', '-u'], capture_output=True, text=True).stdout.strip()}",
             "- method: the docstring of `lab/benchmarks/flydsl_compile_cost.py`; run once", "",
             "## Cold compiles, one at a time", "",
             f"Shapes {', '.join(SHAPES)} (MxNxK, bf16); configs drawn from each shape's feasible set with "
             "the seed plus the shape's index. *compile call*: the compile call alone, in a process that "
             "compiled nothing before (FlyDSL: the evaluator's `compile_s`); *wall*: the whole subprocess "
             "(start, imports, arguments, compile, resources): for FlyDSL what a flysearch search pays a "
             "config, for Triton this script's own child (a Triton search compiles in warm workers); *warm "
             "process*: compiles that missed the cache in a process that had compiled before (the shape runs "
             "below). Rejected configs (spills) compiled fully and count; failed ones do not.", "",
             "| compiler | arch | seconds of | compiles | failed | rejected | median | p10 | p90 |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    notes = []
    for kind, arch in sorted({(r["compiler"], r["arch"]) for r in cold}):
        rows = [r for r in cold if (r["compiler"], r["arch"]) == (kind, arch)]
        done = [r for r in rows if r["outcome"] != "compile_failed"]
        counts = f"{len(rows) - len(done)} | {sum(r['outcome'] == 'rejected' for r in rows)}"
        warm = [r["s"] for r in cross
                if (r["compiler"], r["arch"]) == (kind, arch) and not r["hit"] and not r["first"]]
        vgpr = [r["vgpr"] for r in done]
        lines += [_row(kind, arch, "compile call", len(done), counts, _stats([r["s"] for r in done])),
                  _row(kind, arch, "wall", len(done), counts, _stats([r["wall"] for r in done])),
                  _row(kind, arch, "warm process", len(warm), "– | –", _stats(warm))]
        notes.append(f"- {kind} {arch}: VGPR median {statistics.median(vgpr):g} ({min(vgpr)}-{max(vgpr)}), "
                     f"{sum(bool(r['spills']) for r in done)} of {len(done)} spill")
    lines += ["", "Resources of the cold compiles that finished:", "", *notes,
              "", "## Is a binary shape-specialised?", "",
              f"{k} configs per compiler and arch, each compiled in one process with the compiler's cache "
              "kept (FlyDSL: one launcher, whose in-memory artifact cache is kept, its disk cache a fresh "
              "folder a call; Triton: one `TRITON_CACHE_DIR`), at shapes "
              f"{', '.join(f'{s} = {t}' for s, t in CROSS[:3])} and A again. *entries*: the cache's entries "
              "after the call; a call is a hit when they did not grow. A process's first call also pays its "
              "first-compile costs. A FlyDSL hit still traces the kernel: flydsl 0.5 keys its cache by the "
              "traced IR, in which M, N and K are constants.", "",
              "| compiler | arch | config | step | shape | s | entries | hit | VGPR | code digest |",
              "|---|---|---|---|---|---:|---:|---|---:|---|"]
    lines += [_row(r["compiler"], r["arch"], f"`{r['key']}`", r["step"], r["shape"], f"{r['s']:.3f}",
                   r["entries"], "hit" if r["hit"] else "miss", r["vgpr"], r["digest"]) for r in cross]
    lines.append("")
    for kind, arch in sorted({(r["compiler"], r["arch"]) for r in cross}):
        for step, _ in CROSS[1:]:
            sel = [r for r in cross if (r["compiler"], r["arch"], r["step"]) == (kind, arch, step)]
            lines.append(f"- {kind} {arch}, {step}: {sum(r['hit'] for r in sel)} of {len(sel)} hits, "
                         f"median {statistics.median(r['s'] for r in sel):.3f} s")
    done = [r for r in cold if r["compiler"] == "flydsl" and r["outcome"] != "compile_failed"]
    f_cold, f_wall = statistics.median(r["s"] for r in done), statistics.median(r["wall"] for r in done)
    lines += ["", "## Estimate: seconds to 1% on the hard test set if every config were a FlyDSL compile", "",
              "**An estimate, not a FlyDSL search**: each strategy's median compiles to 1% (over the 18 hard "
              "test tables, of the per-table medians over seeds; replays of H100 Triton tables, read from "
              "`lab/benchmarks/results/compare/hardtest_{coldstart,transfer}/summary.csv` by the readers of "
              "`lab/hardtest/report.py`, as `search_cost.md` is) times this CPU's median FlyDSL cold "
              f"compile, both archs: {f_cold:.2f} s the compile call, {f_wall:.2f} s the evaluator's "
              "subprocess a config. "
              "One compile at a time on one core; no GPU timing; `>`: the median is censored at the budget "
              "(400 compiles).", "", *estimate_lines(f_cold, f_wall), "", "## Every cold compile", "",
              "| compiler | arch | shape | config | outcome | compile s | wall s | VGPR | AGPR | spills |",
              "|---|---|---|---|---|---:|---:|---:|---:|---:|"]
    for r in cold:
        s, outcome = "–" if r["s"] is None else f"{r['s']:.2f}", f"{r['outcome']} {r['detail']}".strip()
        lines.append(_row(r["compiler"], r["arch"], r["shape"], f"`{r['key']}`", outcome, s,
                          f"{r['wall']:.2f}", *(r.get(c, "") for c in ("vgpr", "agpr", "spills"))))
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "lab/benchmarks/results/flydsl_compile_cost.md")
    ap.add_argument("--configs", type=int, default=24, help="cold compiles per arch, and of Triton")
    ap.add_argument("--cross", type=int, default=3, help="configs per compiler and arch at A, B, B', A")
    ap.add_argument("--arch", default="gfx942,gfx950")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--child", choices=tuple(SPACE), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:  # compile the (config, shape) pairs on stdin in this process, one JSON line out
        out, fn = [], None
        for config, shape in json.loads(sys.stdin.read()):
            row, fn = _compile(args.child, args.arch, config, parse_shape(shape), fn)
            out.append(row)
        print(json.dumps(out))
        return 0
    command = " ".join(["python", "lab/benchmarks/flydsl_compile_cost.py", *(argv or sys.argv[1:])])
    archs = args.arch.split(",")
    cross = cross_rows(archs, args.cross, args.seed)
    args.out.write_text(report(cold_rows(archs, args.configs, args.seed), cross, command, args.cross))
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
