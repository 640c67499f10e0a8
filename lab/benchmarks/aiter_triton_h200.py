"""aiter's Triton GEMM raced on the H200: exhaustive ground truth for that kernel's design, beside
flysearch's own split-K Triton GEMM and cuBLAS, measured in one session.

    python lab/benchmarks/aiter_triton_h200.py race --out lab/benchmarks/data/h200_aiter_triton \
        --workers 15                                                                     # GPU
    python lab/benchmarks/aiter_triton_h200.py report \
        --out lab/benchmarks/results/aiter_triton_h200.md                                # CPU

``race`` is ``flysearch race run --space aiter_triton_gemm_cuda`` over the shapes, its tables dumped
into ``--out`` with the race's report (plus the installed ``amd-aiter`` version): aiter's own
``_gemm_a16_w16_kernel`` (the installed ``amd-aiter``, imported without its ROCm-only package init)
over the configs of flysearch's ``triton_gemm_splitk`` space that its rules keep at each shape,
under aiter's keys (BLOCK_M -> BLOCK_SIZE_M, ..., SPLIT_K -> NUM_KSPLIT; the family is
``flysearch/kernels/_aiter_triton_cuda.py``); ``cache_modifier`` is left unset, and the AMD-only
options (``waves_per_eu``, ``matrix_instr_nonkdim``, ``kpack``) have no meaning on NVIDIA and are
dropped. So both kernels are measured over the same configs: the difference is the kernel code
(aiter: XCD remapping, split-K partials in an fp32 buffer reduced by a second kernel; flysearch:
atomics into a workspace). The race compiles in ``--workers`` processes with no GPU, replays each
binary (and aiter's reduce kernel) from CUDA graphs, validates and times it with the race's
protocol, and re-times the top in interleaved rounds with cuBLAS. (The committed tables were raced
by the lab's own driver before the product's race took the family, over num_stages 2-4; their
``race_report.json`` names the commit.) For the two families to meet in one session, race
flysearch's kernel on the same shapes in the same session with ``flysearch race run --only NAME
...`` into ``lab/benchmarks/data/h200_aiter_triton_splitk``.

``report`` compares the committed tables: per shape the best of each family (re-timed medians) and
their ratios to cuBLAS as each session measured it.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "lab" / "benchmarks"
sys.path.insert(0, str(ROOT))

from _race_helpers import best, load  # noqa: E402

from flysearch.compare import code_commit  # noqa: E402
from flysearch.race import vendor_ms  # noqa: E402
from flysearch.space import Config  # noqa: E402
from flysearch.tables import GroundTruth  # noqa: E402

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

SHAPES = ROOT / "studies" / "shapes_h200.toml"
# One shape per regime, all with committed split-K tables: decode, small-M, prefill, square.
DEFAULT_ONLY = ("l3-8b-qkv-m1", "l3-8b-qkv-m64", "l3-8b-qkv-m1024", "l3-8b-o-m4096")
DATA = BENCHMARKS / "data" / "h200_aiter_triton"
SPACE = "aiter_triton_gemm_cuda"
TO_AITER = {"BLOCK_M": "BLOCK_SIZE_M", "BLOCK_N": "BLOCK_SIZE_N", "BLOCK_K": "BLOCK_SIZE_K",
            "GROUP_M": "GROUP_SIZE_M", "SPLIT_K": "NUM_KSPLIT", "num_warps": "num_warps",
            "num_stages": "num_stages"}

def race_command(args: argparse.Namespace) -> list[str]:
    """The ``flysearch race run`` that races aiter's family on *args*' shapes into ``--out``."""
    db = args.db or Path(tempfile.gettempdir()) / f"{args.out.name}.db"
    command = [sys.executable, "-m", "flysearch", "race", "run", "--space", SPACE, "--shapes",
               str(args.shapes), "--db", str(db), "--workers", str(args.workers), "--dump", str(args.out),
               "--report", str(args.out / "race_report.json")]
    command += [f"--only={name}" for name in args.only or DEFAULT_ONLY]
    return command + (["--cache-dir", args.cache_dir] if args.cache_dir else [])


def race(args: argparse.Namespace) -> None:
    from flysearch.kernels import aiter_version

    done = subprocess.run(race_command(args), check=False).returncode
    report = args.out / "race_report.json"
    if report.exists():  # the race's report names the GPU's libraries; aiter's version is the kernel's
        doc = json.loads(report.read_text())
        doc["versions"] = {**doc.get("versions", {}), "amd-aiter": aiter_version() or "missing"}
        report.write_text(json.dumps(doc, indent=1) + "\n")
    sys.exit(done)


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
    raced = race_doc.get("provenance", race_doc)  # the lab driver's report, or flysearch race run's
    lines = [
        "# aiter's Triton GEMM on the H200, beside flysearch's split-K family and cuBLAS", "",
        f"- command: `{' '.join(['python', *sys.argv])}`",
        f"- commit: {code_commit(ROOT, outputs=[RESULTS])}",
        f"- hardware: tables raced on an NVIDIA H200 (`{args.data.relative_to(ROOT)}/race_report.json`: "
        f"{raced.get('date', 'date in the tables')}, versions {raced['versions']}); "
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
        t = load(path)
        shape = t.meta.shape()
        got = best(t)
        split_path = next(iter(sorted(args.splitk.glob(f"triton_gemm__H200__{shape.M}x{shape.N}x{shape.K}"
                                                        ".table.json.gz"))), None)
        cells = [f"{shape.M}x{shape.N}x{shape.K}", shape.regime, str(len(t.rows)),
                 str(sum(r.ok for r in t.rows.values()))]
        if got is None:
            lines.append("| " + " | ".join([*cells, *["-"] * 9]) + " |")
            continue
        a_ms, a_row = got
        v = vendor_ms(t.meta)
        cells += [f"{a_ms:.4g}", f"`{a_row.key}`", f"{a_ms / v:.3f}" if v else "-"]
        if split_path is not None:
            s = load(split_path)
            s_ms, _ = best(s) or (math.nan, None)
            sv = vendor_ms(s.meta)
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
    r.add_argument("--db", type=Path, default=None, help="race database (default: a temporary file)")
    p = sub.add_parser("report", help="compare the committed tables (CPU)")
    p.add_argument("--data", type=Path, default=DATA)
    p.add_argument("--splitk", type=Path, default=DATA.parent / "h200_aiter_triton_splitk")
    p.add_argument("--out", type=Path, default=BENCHMARKS / "results" / "aiter_triton_h200.md")
    args = ap.parse_args()
    race(args) if args.command == "race" else report(args)


if __name__ == "__main__":
    main()
