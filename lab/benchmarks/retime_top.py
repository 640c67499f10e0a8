"""Re-time the top of each H200 ground-truth table in fresh interleaved rounds (needs a CUDA GPU).

    python lab/benchmarks/retime_top.py --out lab/benchmarks/results/retime_top_h200.json
    python lab/benchmarks/retime_top.py --dry-run          # which configs, without a GPU
    python lab/benchmarks/retime_top.py --report lab/benchmarks/results/retime_top_h200.json  # markdown

An exhaustive race times each config once (the median of a few short batches), one config after the
other. At the top of a table, where the configs differ by 1-3%, that single measurement decides
which config is "the optimum" and therefore what "within 1% of the optimum" means for every sampler
comparison. This script checks that decision the way a live study checks its finalists
(:mod:`flysearch.evaluators`): for each table it takes the configs within ``--within`` of the table's
best (at least ``--min-k``, at most ``--max-k``), compiles them, and times each once per round for
``--rounds`` rounds, in a fresh random order each round, with the race's own timing protocol. It
writes, per table and config, the race's time and every round's time; it changes no table.
``flysearch race run`` now does the same after each shape it races (and re-times tables loaded
into its database), storing the medians in the table (:mod:`flysearch.evaluators`); this script keeps
the result files of the tables raced before that. The files are read, and ``--report`` written, by
:mod:`flysearch.compare` (``retime_top_report`` and the other ``retime_top_*`` functions).
"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from _retime_top import retime_top_report, retime_top_summary  # noqa: E402

from flysearch.compare import code_commit  # noqa: E402
from flysearch.evaluators import (  # noqa: E402
    InfoTask,
    Outcome,
    TimeTask,
    TritonCompileTask,
    WorkerPool,
    compile_task,
    interleaved_rounds,
    timer_task,
    top_rows,
)
from flysearch.kernels import spec_key  # noqa: E402
from flysearch.space import Shape  # noqa: E402
from flysearch.tables import GroundTruth, Row, read_table_file  # noqa: E402

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes


def load_tables(pattern: str) -> list[GroundTruth]:
    tables = []
    for path in sorted(glob.glob(pattern)):
        meta, rows = read_table_file(path)
        tables.append(GroundTruth(meta, {r.key: r for r in rows}))
    return tables


def retime_table(table: GroundTruth, rows: list[Row], compiler: WorkerPool, timer: WorkerPool,
                 rounds: int, seed: int) -> dict[str, Any]:
    """Compile *rows*' configs, then time each once per round in a fresh order per round
    (:func:`flysearch.evaluators.interleaved_rounds`, as ``flysearch race`` confirms a shape's top)."""
    shape = Shape(**table.meta.problem)
    spec, arch = spec_key(shape), table.meta.arch or "sm_90"
    protocol = json.loads(table.meta.notes or "{}").get("protocol")
    for r in rows:
        compiler.submit(r.key, TritonCompileTask(r.params, spec, arch))
    compiled = {res.task_id: res for res in compiler.drain()}

    def time_one(r: Row) -> float | str:
        if not (compiled[r.key].ok and compiled[r.key].value.ok):
            return "compile failed"
        timer.submit(r.key, TimeTask(shape.as_dict(), r.params, spec, arch, protocol, None))
        (res,) = timer.drain()
        if res.ok and res.value.outcome is Outcome.OK:
            return float(res.value.time_ms)
        return res.value.detail if res.ok else f"timer {res.status}"

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


summarize = retime_top_summary  # the name lab/paper/build.py imports


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tables", default=str(ROOT / "lab/benchmarks/data/h200/*.table.json.gz"))
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
            print(retime_top_report(json.loads(Path(args.report).read_text())), end="")
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
        timer.submit("info", InfoTask())
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
    commit = code_commit(ROOT, outputs=[RESULTS])
    doc = {"command": "python lab/benchmarks/retime_top.py " + " ".join(sys.argv[1:]),
           "date": dt.date.today().isoformat(), "code_commit": commit, "device": info.value.device,
           "versions": info.value.versions, "within": args.within, "min_k": args.min_k,
           "max_k": args.max_k, "rounds": args.rounds, "seed": args.seed,
           "wall_s": round(time.monotonic() - t0, 1), "tables": results}
    text = json.dumps(doc, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
