"""Re-run a committed ``flysearch compare`` experiment's seeds and check they give the committed results.

For the chosen samplers it replays every seed of the experiment into a temporary folder, then checks
(1) each run's trajectory against the committed run of the same id: equal, or, when the re-run stopped
at the optimum (``stop_at_optimum``), the start of the committed one, which never improves after it;
(2) every metric of the committed ``summary.csv`` rows of those samplers (as written, 6 significant
digits), except what runs spent (compiles used, trials, ms per trial), which a stop changes. The runs
themselves (``results.db``) are not committed: on a fresh clone only (2) is checked.

Run it: OMP_NUM_THREADS=1 python lab/benchmarks/check_reproducible.py \
    studies/compare_hub_dedispersion_A100.toml \
    --samplers grid,random,qmc,cmaes,tpe
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import sys
import tempfile
import time
from pathlib import Path

from flysearch.compare import (
    RESULTS_DB,
    fmt_csv,
    load_experiment,
    load_runs,
    load_table_infos,
    run_experiment,
    summary_rows,
)

SPENT = {"ms_per_trial", "trials", "compiles"}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiment", type=Path)
    ap.add_argument("--samplers", default="grid,random,qmc,cmaes", help="Sampler labels to re-run.")
    ap.add_argument("--workers", type=int, default=2)
    args = ap.parse_args()
    exp = load_experiment(args.experiment)
    labels = args.samplers.split(",")
    samplers = tuple(s for s in exp.samplers if s.label in labels)
    missing = set(labels) - {s.label for s in samplers}
    if missing:
        print(f"{args.experiment} has no sampler labelled {sorted(missing)}", file=sys.stderr)
        return 2
    results_db = Path(exp.output) / RESULTS_DB
    # The runs' trajectories (results.db) are not committed: on a fresh clone only the summary is.
    committed_runs = {r["id"]: r for r in load_runs(results_db)} if results_db.is_file() else None
    if committed_runs is None:
        print(f"{results_db} is absent (trajectories are not committed): checking the committed summary "
              "rows only.")
    with (Path(exp.output) / "summary.csv").open() as fh:
        committed_rows = [r for r in csv.DictReader(fh) if r["sampler"] in labels]
    with tempfile.TemporaryDirectory() as tmp:
        rerun = dataclasses.replace(exp, samplers=samplers, output=tmp, workers=args.workers)
        start = time.perf_counter()
        run_experiment(rerun)
        wall = time.perf_counter() - start
        runs = load_runs(Path(tmp) / RESULTS_DB)
        rows = summary_rows(runs, load_table_infos(rerun), exp.budget)
    problems = [] if committed_runs is None else [
        p for r in runs for p in _check_run(r, committed_runs.get(r["id"]))]
    problems += _check_rows(rows, committed_rows)
    print(f"{args.experiment}: re-ran {len(runs)} runs of {', '.join(labels)} in {wall:.0f} s; "
          f"{len(committed_rows)} committed summary rows compared.")
    for p in problems:
        print("MISMATCH", p)
    print("reproduced: identical" if not problems else f"{len(problems)} mismatches")
    return 1 if problems else 0


def _check_run(run: dict, committed: dict | None) -> list[str]:
    if committed is None:
        return [f"{run['id']}: no committed run with this id"]
    short, whole = run["trajectory"], committed["trajectory"]
    n = short.compiles
    if run["stopped"] != "target reached" and short.best_ms != whole.best_ms:
        return [f"{run['id']}: trajectory differs"]
    if short.best_ms != whole.best_ms[:n] or short.cost_s != whole.cost_s[:n]:
        return [f"{run['id']}: trajectory differs within its first {n} compiles"]
    if len(set(whole.best_ms[n - 1:])) > 1:
        return [f"{run['id']}: stopped at {short.best_ms[-1]} but the committed run improved after it"]
    return []


def _check_rows(rows: list[dict], committed: list[dict]) -> list[str]:
    mine = {(r["level"], r["where"], r["sampler"]): r for r in rows}
    out = []
    for c in committed:
        r = mine.get((c["level"], c["where"], c["sampler"]))
        if r is None:
            out.append(f"summary row {c['where']} {c['sampler']}: not re-run")
            continue
        for k, v in c.items():
            if k in SPENT or k not in r:
                continue
            if str(fmt_csv(r[k])) != v:
                out.append(f"summary {c['where']} {c['sampler']} {k}: committed {v}, re-run {fmt_csv(r[k])}")
    return out


if __name__ == "__main__":
    sys.exit(main())
