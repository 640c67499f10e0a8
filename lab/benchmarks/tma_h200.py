"""The persistent TMA GEMM family on the H200, beside the split-K family and cuBLAS: which backend
wins per shape.

    python lab/benchmarks/tma_h200.py race --shapes lab/studies/shapes_h200_kernels_holdout.toml \\
        --out lab/benchmarks/data/h200_tma_holdout --workers 15                                   # GPU
    python lab/benchmarks/tma_h200.py report --out lab/benchmarks/results/tma_h200.md                 # CPU

``race`` is ``flysearch race run --space triton_gemm_tma`` over the shapes, its tables dumped into
``--out`` with the race's report: every config the family's rules keep at each shape
(``flysearch/kernels/_triton_tma.py``), compiled in ``--workers`` processes, the binaries replayed
from CUDA graphs, validated and timed with the race's protocol, the top re-timed in interleaved
rounds with cuBLAS. (The committed tables were raced by the lab's own driver before the product's
race took the family; each folder's ``race_report.json`` names the commit.) ``report`` pairs each
TMA table with the split-K table of the same shape (``--splitk`` folders, raced in the same session
where the table says so) and names the fastest backend per shape, as aiter's ``libtype`` column
does: split-K, TMA or cuBLAS, each by its re-timed best against the cuBLAS time of its own session.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import statistics
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
from flysearch.tables import GroundTruth  # noqa: E402

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

KERNEL = "triton_gemm_tma"


def race_command(args: argparse.Namespace) -> list[str]:
    """The ``flysearch race run`` that races the TMA family on *args*' shapes into ``--out``."""
    db = args.db or Path(tempfile.gettempdir()) / f"{args.out.name}.db"
    command = [sys.executable, "-m", "flysearch", "race", "run", "--space", KERNEL, "--shapes",
               str(args.shapes), "--db", str(db), "--workers", str(args.workers), "--dump", str(args.out),
               "--report", str(args.out / "race_report.json")]
    command += [f"--only={name}" for name in args.only or []]
    command += ["--cache-dir", args.cache_dir] if args.cache_dir else []
    return command + (["--deadline", str(args.deadline)] if args.deadline else [])


def race(args: argparse.Namespace) -> None:
    sys.exit(subprocess.run(race_command(args), check=False).returncode)


def _shape_key(table: GroundTruth) -> tuple[int, int, int]:
    s = table.meta.shape()
    return s.M, s.N, s.K


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.3f}"


def _median(xs: list[float]) -> str:
    return f"{statistics.median(xs):.3f}" if xs else "-"


def report(args: argparse.Namespace) -> None:
    tma = {_shape_key(t): (p, t) for folder in args.data for p in sorted(folder.glob("*.table.json.gz"))
           for t in [load(p)]}
    if not tma:
        sys.exit("no TMA tables in --data; race them first (see the docstring)")
    splitk: dict[tuple[int, int, int], tuple[Path, GroundTruth]] = {}
    for folder in args.splitk:
        for p in sorted(folder.glob("triton_gemm__*__*.table.json.gz")):
            t = load(p)
            splitk.setdefault(_shape_key(t), (p, t))
    lines = [
        "# The persistent TMA GEMM family on the H200, beside split-K and cuBLAS", "",
        f"- command: `{' '.join(['python', *sys.argv])}`",
        f"- commit: {code_commit(ROOT, outputs=[RESULTS])}",
        f"- hardware: tables raced on an NVIDIA H200 (see each folder's `race_report.json`); report on "
        f"{platform.machine()}",
        f"- date: {dt.date.today().isoformat()}", "",
        "Each family's best is its table's re-timed best; each ratio is to the cuBLAS time measured in "
        "the same session as that table. *fastest*: the backend with the lowest ratio.", "",
        "| shape | regime | TMA table | TMA configs (ok) | TMA / cuBLAS | TMA best config | split-K / cuBLAS "
        "| split-K table | fastest |",
        "|---|---|---|---:|---:|---|---:|---|---|",
    ]
    by_regime: dict[tuple[str, str], dict[str, list[float]]] = {}
    for key in sorted(tma, key=lambda k: (k[0], k[1], k[2])):
        t_path, t = tma[key]
        shape = t.meta.shape()
        t_best, vendor = (best(t) or (None,))[0], vendor_ms(t.meta)
        ratio = t_best / vendor if t_best and vendor else None
        top = t.ranked()[0].key if t.ranked() else "-"
        s_ratio, s_where = None, "-"
        if key in splitk:
            s_path, s = splitk[key]
            s_best, s_vendor = (best(s) or (None,))[0], vendor_ms(s.meta)
            s_ratio = s_best / s_vendor if s_best and s_vendor else None
            s_where = f"`{s_path.parent.name}`"
        options = {"TMA": ratio, "split-K": s_ratio, "cuBLAS": 1.0}
        fastest = min((v, k) for k, v in options.items() if v is not None)[1]
        for group in ("all", t_path.parent.name):
            regime = by_regime.setdefault((group, shape.regime), {"tma": [], "splitk": [], "best": []})
            if ratio:
                regime["tma"].append(ratio)
            if s_ratio:
                regime["splitk"].append(s_ratio)
            if ratio or s_ratio:
                regime["best"].append(min(v for v in (ratio, s_ratio) if v is not None))
        cells = [f"{shape.M}x{shape.N}x{shape.K}", shape.regime, f"`{t_path.parent.name}`",
                 f"{len(t.rows)} ({sum(r.ok for r in t.rows.values())})", _ratio(ratio), f"`{top}`",
                 _ratio(s_ratio), s_where, fastest]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Per regime, medians over the shapes of each TMA table folder and over all of them "
              "(target of the kernels issue: best Triton / cuBLAS <= 1.00 on decode, <= 1.05 elsewhere):", "",
              "| shapes of | regime | shapes | TMA / cuBLAS | split-K / cuBLAS | best Triton / cuBLAS |",
              "|---|---|---:|---:|---:|---:|"]
    for (group, regime), v in sorted(by_regime.items(), key=lambda kv: (kv[0][0] == "all", kv[0])):
        cells = [group, regime, str(len(v["best"])), *(_median(v[k]) for k in ("tma", "splitk", "best"))]
        lines.append("| " + " | ".join(cells) + " |")
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("race", help="race the TMA family on a CUDA GPU")
    r.add_argument("--shapes", type=Path, required=True)
    r.add_argument("--only", action="append", help="shape names (default: every shape of --shapes)")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 1))
    r.add_argument("--cache-dir", default=None)
    r.add_argument("--deadline", type=float, default=None, help="start no work after this many s")
    r.add_argument("--db", type=Path, default=None, help="the race's database (default: "
                   "$TMPDIR/OUT's name.db; a rerun with the same one resumes)")
    p = sub.add_parser("report", help="compare the committed tables (CPU)")
    p.add_argument("--data", type=Path, action="append", required=True, help="folders of TMA tables")
    p.add_argument("--splitk", type=Path, action="append", required=True,
                   help="folders of split-K tables (the first holding a shape wins); repeatable")
    p.add_argument("--out", type=Path, default=BENCHMARKS / "results" / "tma_h200.md")
    args = ap.parse_args()
    race(args) if args.command == "race" else report(args)


if __name__ == "__main__":
    main()
