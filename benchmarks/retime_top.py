"""Re-time the top of each H200 ground-truth table in fresh interleaved rounds (needs a CUDA GPU).

    python benchmarks/retime_top.py --out benchmarks/results/retime_top_h200.json
    python benchmarks/retime_top.py --dry-run          # which configs, without a GPU
    python benchmarks/retime_top.py --report benchmarks/results/retime_top_h200.json  # markdown

An exhaustive race times each config once (the median of a few short batches), one config after the
other. At the top of a table, where the configs differ by 1-3%, that single measurement decides
which config is "the optimum" and therefore what "within 1% of the optimum" means for every sampler
comparison. This script checks that decision the way a live study checks its finalists
(:mod:`flysearch.finalists`): for each table it takes the configs within ``--within`` of the table's
best (at least ``--min-k``, at most ``--max-k``), compiles them, and times each once per round for
``--rounds`` rounds, in a fresh random order each round, with the race's own timing protocol. It
writes, per table and config, the race's time and every round's time; it changes no table.
``flysearch race run`` now does the same after each shape it races (and re-times tables loaded
into its database), storing the medians in the table (:mod:`flysearch.retime`); this script keeps
the result files of the tables raced before that.
"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from flysearch.evaluators.pool import WorkerPool  # noqa: E402
from flysearch.evaluators.triton import compile_task, timer_task  # noqa: E402
from flysearch.kernels.triton_gemm import spec_key  # noqa: E402
from flysearch.retime import interleaved_rounds, top_rows  # noqa: E402
from flysearch.shapes import Shape  # noqa: E402
from flysearch.tables import GroundTruth, Row, read_table_file  # noqa: E402


def code_commit(root: Path) -> str:
    """The commit of the checkout at *root* that ran this, ``"<commit>+changes"`` when its files
    differ from that commit (a copy whose git HEAD is older than its tree), ``""`` without a .git
    of its own (a snapshot must not name an outer checkout's commit)."""
    if not (root / ".git").exists():
        return ""

    def git(*args: str) -> str:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=root).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD")
    return f"{commit}+changes" if commit and git("status", "--porcelain") else commit


def load_tables(pattern: str) -> list[GroundTruth]:
    tables = []
    for path in sorted(glob.glob(pattern)):
        meta, rows = read_table_file(path)
        tables.append(GroundTruth(meta, {r.key: r for r in rows}))
    return tables


def retime_table(table: GroundTruth, rows: list[Row], compiler: WorkerPool, timer: WorkerPool,
                 rounds: int, seed: int) -> dict[str, Any]:
    """Compile *rows*' configs, then time each once per round in a fresh order per round
    (:func:`flysearch.retime.interleaved_rounds`, as ``flysearch race`` confirms a shape's top)."""
    shape = Shape(**table.meta.problem)
    spec, arch = spec_key(shape), table.meta.arch or "sm_90"
    protocol = json.loads(table.meta.notes or "{}").get("protocol")
    for r in rows:
        compiler.submit(r.key, {"config": r.params, "spec": spec, "arch": arch})
    compiled = {res.task_id: res for res in compiler.drain()}

    def time_one(r: Row) -> float | str:
        if not (compiled[r.key].ok and compiled[r.key].value.get("ok")):
            return "compile failed"
        timer.submit(r.key, {"op": "time", "shape": shape.as_dict(), "config": r.params, "spec": spec,
                             "arch": arch, "protocol": protocol, "best_ms": None})
        (res,) = timer.drain()
        if res.ok and res.value.get("outcome") == "ok":
            return float(res.value["time_ms"])
        return res.value.get("detail", "") if res.ok else f"timer {res.status}"

    samples, failed = interleaved_rounds(rows, time_one, rounds, seed)
    configs = []
    for r in rows:
        v = samples.get(r.key, [])
        med = statistics.median(v) if v and r.key not in failed else None
        configs.append({"key": r.key, "race_ms": r.time_ms, "rounds_ms": [round(x, 6) for x in v],
                        "median_ms": med,
                        "spread": (max(v) - min(v)) / med if v and med else None,
                        "failed": failed.get(r.key)})
    return {"table": table.name, "configs": configs}


def within_retimed(table: dict[str, Any], eps: float = 0.01) -> list[str]:
    """The keys of one result-file table's configs whose re-timed median is within *eps* of the
    re-timed best (the table's 1% set by the better measurement; empty if nothing was re-timed)."""
    timed = [c for c in table["configs"] if c["median_ms"]]
    best = min((c["median_ms"] for c in timed), default=0.0)
    return [c["key"] for c in timed if c["median_ms"] <= best * (1 + eps)]


def summarize(table: dict[str, Any]) -> dict[str, Any] | None:
    """One table of a result file: where the race's best lands once re-timed (``place``, 1-based,
    and ``race_best_x``, its re-timed median over the re-timed best), the re-timed gap from the
    first to the second, how many configs are within 1% of the best by each measurement, every
    config's round spread, and the median race / re-timed ratio; ``None`` if nothing was re-timed."""
    timed = [c for c in table["configs"] if c["median_ms"]]
    if not timed:
        return None
    retimed = sorted(timed, key=lambda c: (c["median_ms"], c["key"]))
    race_best = min(timed, key=lambda c: (c["race_ms"], c["key"]))
    best = retimed[0]["median_ms"]
    return {
        "configs": len(timed),
        "place": [c["key"] for c in retimed].index(race_best["key"]) + 1,
        "race_best_x": race_best["median_ms"] / best,
        "gap": retimed[1]["median_ms"] / best - 1 if len(retimed) > 1 else float("nan"),
        "within_race": sum(c["race_ms"] <= race_best["race_ms"] * 1.01 for c in timed),
        "within_retimed": len(within_retimed(table)),
        "spreads": [c["spread"] for c in timed],
        "scale": statistics.median(c["race_ms"] / c["median_ms"] for c in timed),
    }


def report(doc: dict[str, Any]) -> str:
    """A markdown summary of a result file: does each table's optimum hold under re-timing?"""
    lines = [
        f"# The top of each H200 table re-timed: {doc['date']}, {doc['device']}",
        "",
        f"`{doc['command']}` (code {doc['code_commit']}; {doc['rounds']} interleaved rounds, the configs"
        f" within {doc['within']:.0%} of each table's best, {doc['min_k']} to {doc['max_k']} per table,"
        f" {doc['wall_s']} s). Regenerate this file with `python benchmarks/retime_top.py --report FILE`.",
        "",
        "| table | configs | race's best, re-timed: place (x re-timed best) | re-timed gap to the 2nd |"
        " within 1%: race / re-timed | median round spread | scale (race / re-timed) |",
        "|---|---:|---|---:|---|---:|---:|",
    ]
    for t in doc["tables"]:
        row = summarize(t)
        if row is None:
            lines.append(f"| {t['table']} | 0 | no config re-timed | | | | |")
            continue
        lines.append(f"| {t['table']} | {row['configs']} | {row['place']} ({row['race_best_x']:.3f}) |"
                     f" {row['gap']:.1%} | {row['within_race']} / {row['within_retimed']} |"
                     f" {statistics.median(row['spreads']):.2%} | {row['scale']:.3f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", default=str(ROOT / "benchmarks/data/h200/*.table.json.gz"))
    parser.add_argument("--within", type=float, default=0.10)
    parser.add_argument("--min-k", type=int, default=16)
    parser.add_argument("--max-k", type=int, default=48)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workers", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    parser.add_argument("--dry-run", action="store_true", help="list the configs; no GPU needed")
    parser.add_argument("--report", metavar="FILE", help="print a markdown summary of a result file")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if args.report:
        try:
            print(report(json.loads(Path(args.report).read_text())), end="")
        except (OSError, ValueError, KeyError) as exc:
            parser.error(f"{args.report} is not a retime_top result file: {exc}")
        return
    if args.rounds < 1 or args.min_k < 1 or args.max_k < args.min_k or args.within < 0:
        parser.error("--rounds and --min-k must be >= 1, --max-k >= --min-k, --within >= 0")
    tables = load_tables(args.tables)
    if not tables:
        parser.error(f"no table matches {args.tables}")
    plan = [(t, top_rows(t, args.within, args.min_k, args.max_k)) for t in tables]
    if args.dry_run:
        for t, rows in plan:
            print(f"{t.name}: {len(rows)} configs, up to {rows[-1].time_ms / rows[0].time_ms:.3f}x the best")
        print(f"{sum(len(r) for _t, r in plan)} configs, {args.rounds} rounds")
        return
    cache = tempfile.mkdtemp(prefix="retime-cache-")
    env = {"TRITON_CACHE_DIR": cache}
    compiler = WorkerPool(compile_task, workers=args.workers, timeout_s=120.0, env=env)
    timer = WorkerPool(timer_task, workers=1, timeout_s=60.0, env=env)
    t0 = time.monotonic()
    try:
        timer.submit("info", {"op": "info"})
        (info,) = timer.drain()
        if not info.ok:
            sys.exit(f"The GPU timer could not start ({info.status}: {info.detail}).")
        results = []
        for i, (t, rows) in enumerate(plan):
            results.append(retime_table(t, rows, compiler, timer, args.rounds, args.seed + i))
            print(f"{t.name}: {len(rows)} configs x {args.rounds} rounds, {time.monotonic() - t0:.0f} s",
                  flush=True)
    finally:
        compiler.close()
        timer.close()
    commit = code_commit(ROOT)
    doc = {"command": "python benchmarks/retime_top.py " + " ".join(sys.argv[1:]),
           "date": dt.date.today().isoformat(), "code_commit": commit, "device": info.value.get("device"),
           "versions": info.value.get("versions"), "within": args.within, "min_k": args.min_k,
           "max_k": args.max_k, "rounds": args.rounds, "seed": args.seed,
           "wall_s": round(time.monotonic() - t0, 1), "tables": results}
    text = json.dumps(doc, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
