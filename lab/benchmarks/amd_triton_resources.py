"""aiter's Triton GEMM compiled for gfx942 and gfx950 on this CPU: resources, rejections and compile
seconds of sampled configs, through the ``triton-amd-compile`` evaluator.

    python lab/benchmarks/amd_triton_resources.py --out lab/benchmarks/results/amd_triton_resources.md

Shapes: a Llama-style 4096 x 4096 projection (the hidden size of Llama 3 8B) at decode, M = 16,
and at prefill, M = 4096: the two ends of aiter's M buckets (``M_LEQ_64`` and ``any``). Per (shape,
arch): aiter's shipped config for that bucket (``MI300X-GEMM-A16W16.json`` for gfx942,
``MI350X-...`` for gfx950) plus ``--configs`` others drawn with ``--seed`` from the feasible set of
the ``aiter_triton_gemm`` space at that shape and arch. Each is compiled once, two worker processes
at a time, in a fresh Triton cache (compile seconds are real compiles).

Occupancy is flysearch's (registers, SGPRs and the dynamic LDS Triton launches with, per CDNA's
arithmetic) beside LLVM's ``; Occupancy:`` comment, which counts registers and the waves_per_eu cap
but not the dynamic LDS.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib.metadata
import itertools
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from _aiter_shipped import shipped_configs as aiter_triton_shipped  # noqa: E402

from flysearch.compare import code_commit  # noqa: E402
from flysearch.evaluators import TritonAmdCompileEvaluator  # noqa: E402
from flysearch.kernels import get_space  # noqa: E402
from flysearch.space import Config, Shape, get_arch  # noqa: E402
from flysearch.tables import Outcome  # noqa: E402

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

SPACE = "aiter_triton_gemm"
SHAPES = {"decode": Shape(16, 4096, 4096), "prefill": Shape(4096, 4096, 4096)}
ARCHS = ("gfx942", "gfx950")
AITER_KEYS = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "NUM_KSPLIT", "num_warps",
              "num_stages", "waves_per_eu", "matrix_instr_nonkdim", "kpack", "cache_modifier")
SHORT = {"BLOCK_SIZE_M": "M", "BLOCK_SIZE_N": "N", "BLOCK_SIZE_K": "K", "GROUP_SIZE_M": "G",
         "NUM_KSPLIT": "S", "num_warps": "w", "num_stages": "st", "waves_per_eu": "wpe",
         "matrix_instr_nonkdim": "mi", "kpack": "kp", "cache_modifier": "cm"}


def shipped(shape: Shape, arch: str) -> tuple[str, Config]:
    """aiter's pick for *shape* on *arch* from its default file (N and K here have no file of their
    own): the entry whose M range holds M."""
    for entry in aiter_triton_shipped(arch):
        lo, hi = entry.m_range or (0, -1)
        if entry.N is None and lo < shape.M and (hi is None or shape.M <= hi):
            return entry.name, Config.from_dict(entry.params)
    raise SystemExit(f"aiter ships no default {arch} config for M={shape.M}; check the installed amd-aiter.")


def sample(shape: Shape, arch: str, n: int, seed: int) -> tuple[list[Config], str, str]:
    """aiter's shipped config first, then *n* others drawn with *seed* from the space's feasible
    set; the shipped entry's name and the feasible set's summary."""
    name, first = shipped(shape, arch)
    enumeration = get_space(SPACE).enumerate(shape, get_arch(arch))
    rest = [c for c in enumeration.shuffled(seed) if c.key != first.key][:n]
    return [first, *rest], name, f"`{SPACE}` feasible set ({enumeration.summary()})"


def _short(config: Config) -> str:
    return " ".join(f"{SHORT[k]}{v if v != '' else '-'}" for k, v in sorted(
        config.as_dict().items(), key=lambda kv: AITER_KEYS.index(kv[0])))


class _Progress:
    """Prints one line per finished compile."""

    def __init__(self, tag: str, total: int) -> None:
        self.tag, self.total, self.done = tag, total, 0

    def __call__(self, c: Any) -> None:
        self.done += 1
        s = f"{c.compile_s:.2f} s" if c.compile_s is not None else "-"
        print(f"  [{self.tag}] {self.done}/{self.total} {c.outcome.value:<14} {s:>8} {_short(c.config)} "
              f"{c.detail}", flush=True)


def run(n: int, seed: int, workers: int) -> list[dict[str, Any]]:
    blocks = []
    for (regime, shape), arch in itertools.product(SHAPES.items(), ARCHS):
        configs, bucket, source = sample(shape, arch, n, seed)
        print(f"[{regime} {arch}] {len(configs)} configs ({bucket} shipped first) from {source}", flush=True)
        start = time.perf_counter()
        with TritonAmdCompileEvaluator(arch, workers=workers) as ev:
            results = ev.compile_many(configs, shape, _Progress(f"{regime} {arch}", len(configs)))
            rows = [{"config": c.config, "outcome": c.outcome, "detail": c.detail,
                     "compile_s": c.compile_s, **ev.resources(c)} for c in results]
        blocks.append({"regime": regime, "shape": shape, "arch": arch, "bucket": bucket, "source": source,
                       "rows": rows, "wall_s": time.perf_counter() - start})
    return blocks


def _q(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[int(q * 100) - 1] if len(values) > 1 \
        else (values[0] if values else float("nan"))


def _summary(block: dict[str, Any]) -> dict[str, Any]:
    rows = block["rows"]
    built = [r for r in rows if r["outcome"] is not Outcome.COMPILE_FAILED]
    times = [r["compile_s"] for r in built]
    occ = [(r["occupancy"], r["llvm_occupancy"]) for r in built if r.get("llvm_occupancy") is not None]
    return {
        "configs": len(rows), "compiled": len(built),
        "usable": sum(r["outcome"] is Outcome.OK for r in rows),
        "failed": len(rows) - len(built),
        "spilling": sum(r["spills"] > 0 for r in built),
        "lds_over": sum(r["detail"] == "resource:lds_over_limit" for r in rows),
        "occ_zero": sum(r["detail"] == "resource:occupancy_zero" for r in rows),
        "median_s": statistics.median(times) if times else float("nan"), "p90_s": _q(times, 0.9),
        "occ_equal": sum(a == b for a, b in occ), "occ_below": sum(a < b for a, b in occ),
        "occ_above": sum(a > b for a, b in occ), "wall_s": block["wall_s"],
    }


def _version(name: str) -> str:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def report(blocks: list[dict[str, Any]], argv: list[str], workers: int) -> str:
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() \
        else platform.processor()
    lines = [
        f"# aiter's Triton GEMM compiled for AMD on a CPU: resources and compile seconds — "
        f"{dt.date.today().isoformat()}", "",
        f"- command: `python lab/benchmarks/amd_triton_resources.py {' '.join(argv)}`",
        f"- commit: {code_commit(ROOT, outputs=[RESULTS]) or 'not a git checkout'}",
        f"- hardware: {platform.machine()} CPU ({cpu}, {os.cpu_count()} cores), no GPU; "
        f"{workers} compile worker processes",
        f"- versions: Python {platform.python_version()}, triton {_version('triton')}, "
        f"amd-aiter {_version('amd-aiter')}, torch {_version('torch')}",
        f"- date: {dt.date.today().isoformat()}", "",
        "aiter's `_gemm_a16_w16_kernel` (bf16) as its launch compiles it: the signature, constants and "
        "pointer attributes from Triton's own binder, `SPLITK_BLOCK_SIZE` and the `BLOCK_SIZE_K` clamp "
        "as aiter's `_get_config` derives them (flysearch's `triton-amd-compile` evaluator). *compiled*: "
        "the compiler produced code; *usable*: no spill, LDS within the arch (64 KiB gfx942, 160 KiB "
        "gfx950), at least one wave per SIMD. Occupancy (waves per SIMD) is flysearch's (registers, "
        "SGPRs and Triton's dynamic LDS); LLVM's `; Occupancy:` is beside it: it does not see the dynamic "
        "LDS (ours lower) and caps at `waves_per_eu` (ours higher). Compile seconds count compiles that "
        "produced code.", "",
        "| shape | arch | configs | compiled | usable | failed | spilling | LDS over | occ 0 | median s "
        "| p90 s | occ = LLVM | occ < LLVM | occ > LLVM | wall s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for b in blocks:
        s = _summary(b)
        lines.append(
            f"| {b['regime']} {b['shape'].M}x{b['shape'].N}x{b['shape'].K} | {b['arch']} | {s['configs']} | "
            f"{s['compiled']} | {s['usable']} | {s['failed']} | {s['spilling']} | {s['lds_over']} | "
            f"{s['occ_zero']} | {s['median_s']:.2f} | {s['p90_s']:.2f} | {s['occ_equal']} | "
            f"{s['occ_below']} | {s['occ_above']} | {s['wall_s']:.0f} |")
    for arch in ARCHS:
        times = [r["compile_s"] for b in blocks if b["arch"] == arch for r in b["rows"]
                 if r["outcome"] is not Outcome.COMPILE_FAILED]
        lines.append(f"\n{arch}: median compile {statistics.median(times):.2f} s over {len(times)} compiles "
                     f"(p90 {_q(times, 0.9):.2f} s).")
    lines += ["", "Config columns: M/N/K block sizes, G group size, S NUM_KSPLIT, w warps, st stages, "
              "wpe waves_per_eu, mi matrix_instr_nonkdim, kp kpack, cm cache_modifier (`-`: none). The first "
              "row of each table is aiter's shipped config for the bucket."]
    for b in blocks:
        lines += ["", f"## {b['regime']} {b['shape'].M}x{b['shape'].N}x{b['shape'].K} on {b['arch']}", "",
                  f"First row: aiter's `{b['bucket']}`; the others from the {b['source']}, seed fixed.", "",
                  "| config | outcome | VGPR | AGPR | SGPR | LDS B | scratch B | spills | occ | LLVM occ "
                  "| compile s |", "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for r in b["rows"]:
            outcome = r["outcome"].value + (f" ({r['detail']})" if r["detail"] else "")
            cells = [str(r.get(k, "")) for k in ("vgpr", "agpr", "sgpr", "lds_bytes", "scratch_bytes",
                                                 "spills", "occupancy", "llvm_occupancy")]
            lines.append(f"| {_short(r['config'])} | {outcome.replace('|', '/')} | {' | '.join(cells)} | "
                         f"{r['compile_s']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--configs", type=int, default=50, help="Sampled configs per (shape, arch).")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2, help="Compile worker processes (2 cores here).")
    args = parser.parse_args()
    blocks = run(args.configs, args.seed, args.workers)
    text = report(blocks, sys.argv[1:], args.workers)
    args.out.write_text(text)
    print(text.split("\n## ")[0])


if __name__ == "__main__":
    main()
