"""Cheap transfer baselines against the cost model: how far down each order is a config within 1%?

    OMP_NUM_THREADS=1 python lab/benchmarks/transfer_baselines.py \
        --out lab/benchmarks/results/transfer_baselines.md

Each of the 27 development tables of ``lab/benchmarks/data/h200`` is held out in turn; its configs (rows)
are ordered by a baseline computed from the *other* 26 tables only, and the rank (1-based) of the
first config within 1% of the held-out table's optimum (``GroundTruth.best()``) is reported:

* **mean rank**: each config's mean, over the other tables, of its normalized rank (rank / n among
  that table's correct rows; a config a table lacks, or that failed there, is skipped for it);
* **nearest shape**: the times of the other table whose shape is nearest in (log2 M, log2 N,
  log2 K), Euclidean distance;
* **other winners**: the other tables' best configs, by how many tables they won (then by mean
  normalized rank), then every other config by mean normalized rank;
* **prior**: the cost model trained on the other tables (``fit_prior``), ranking by its score at
  the held-out shape (``flysearch.compare.prior_ranks``, the order the cost-model evaluation uses).

In the three baselines a config no other table measured goes after all known ones; ties are broken
by config key. About five minutes on 2 cores (the 27 prior fits).

On a test set instead (``--test FOLDER``): every table of the folder is scored by baselines computed
from the ``--train`` tables alone (one prior fit), with ``--retimed`` against its re-timed optimum
(``GroundTruth.with_retimed_times``), as the frozen method's test run counts it:

    OMP_NUM_THREADS=1 python lab/benchmarks/transfer_baselines.py \\
        --test lab/benchmarks/data/h200_kernels_holdout --retimed \\
        --train 'lab/benchmarks/data/h200/*.table.json.gz' \\
        --train 'lab/benchmarks/data/h200_extra/*.table.json.gz' \\
        --train 'lab/benchmarks/data/h200_extra2/*.table.json.gz' \\
        --train 'lab/benchmarks/data/h200_holdout/*.table.json.gz' \\
        --train 'lab/benchmarks/data/h200_holdout2/*.table.json.gz' \\
        --out lab/benchmarks/results/transfer_baselines_test.md
"""

from __future__ import annotations

import argparse
import datetime as dt
import glob
import math
import platform
import statistics
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "lab" / "benchmarks"
sys.path.insert(0, str(ROOT))

from flysearch.compare import code_commit, prior_ranks  # noqa: E402
from flysearch.costmodel import fit_prior  # noqa: E402
from flysearch.tables import GroundTruth, read_table_file  # noqa: E402

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

DATA = BENCHMARKS / "data" / "h200"
EPS = 0.01
HIT = 8
BASELINES = ("mean rank", "nearest shape", "other winners", "prior")


def _tables(*patterns: str) -> list[GroundTruth]:
    out = []
    for pattern in patterns or (str(DATA / "*.table.json.gz"),):
        for path in sorted(glob.glob(pattern)):
            meta, rows = read_table_file(path)
            out.append(GroundTruth(meta, {r.key: r for r in rows}))
    return out


def _devices(tables: Sequence[GroundTruth]) -> str:
    """The GPUs a list of tables was raced on, as their metadata names them."""
    return ", ".join(sorted({t.meta.device for t in tables}))


def _times(t: GroundTruth) -> dict[str, float]:
    return {r.key: r.time_ms for r in t.ok_rows() if r.time_ms is not None}


def _first_within(held: GroundTruth, scores: Mapping[str, Any]) -> int | None:
    """Rank of held's first config within 1% of its optimum, its configs ordered by *scores*
    (lower first; unscored configs last; ties by key)."""
    best = held.best().time_ms
    order = sorted(held.rows, key=lambda k: (0, scores[k], k) if k in scores else (1, k))
    for i, k in enumerate(order, 1):
        r = held.rows[k]
        if r.ok and r.time_ms is not None and r.time_ms <= best * (1 + EPS):
            return i
    return None


def _mean_rank(others: Sequence[GroundTruth]) -> dict[str, float]:
    sums: dict[str, list[float]] = {}
    for t in others:
        times = _times(t)
        n = len(times)
        for i, k in enumerate(sorted(times, key=lambda k: (times[k], k)), 1):
            sums.setdefault(k, []).append(i / n)
    return {k: statistics.fmean(v) for k, v in sums.items()}


def _log_shape(t: GroundTruth) -> tuple[float, float, float]:
    s = t.meta.shape()
    return (math.log2(s.M), math.log2(s.N), math.log2(s.K))


def _nearest(held: GroundTruth, others: Sequence[GroundTruth]) -> GroundTruth:
    h = _log_shape(held)
    return min(others, key=lambda t: (math.dist(h, _log_shape(t)), t.name))


def _winners(others: Sequence[GroundTruth], mean: dict[str, float]) -> dict[str, tuple[int, int, float]]:
    """The other tables' winners first (most wins, then mean rank), then the rest by mean rank."""
    wins = Counter(t.best().key for t in others)
    return {k: (0, -wins[k], v) if k in wins else (1, 0, v) for k, v in mean.items()}


def baseline_ranks(held: GroundTruth, others: Sequence[GroundTruth], *, prior: bool | Any,
                   mean: dict[str, float] | None = None) -> dict[str, int | None]:
    """Each baseline's rank of *held*'s first config within 1%; *prior*: fit one on *others*
    (``True``), use this fitted one, or none (``False``)."""
    mean = _mean_rank(others) if mean is None else mean
    out: dict[str, int | None] = {
        "mean rank": _first_within(held, mean),
        "nearest shape": _first_within(held, _times(_nearest(held, others))),
        "other winners": _first_within(held, _winners(others, mean)),
    }
    if prior is not False:
        out["prior"] = prior_ranks(fit_prior(list(others)) if prior is True else prior, held)[EPS]
    return out


def _fmt(r: int | None) -> str:
    return "-" if r is None else str(r)


def _devices(tables: Sequence[GroundTruth]) -> str:
    """The GPUs a list of tables was raced on, as their metadata names them."""
    return ", ".join(sorted({t.meta.device for t in tables}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=BENCHMARKS / "results" / "transfer_baselines.md")
    ap.add_argument("--no-prior", action="store_true", help="skip the prior fits (the slow part)")
    ap.add_argument("--test", type=Path, help="score this folder's tables (a test set) instead")
    ap.add_argument("--train", action="append", default=[], help="with --test: the training tables (glob)")
    ap.add_argument("--retimed", action="store_true", help="with --test: against re-timed optima")
    args = ap.parse_args()
    if args.test is not None and (not args.test.is_dir() or not args.train):
        print(f"error: --test needs a folder of tables ({args.test} is not one) and --train", file=sys.stderr)
        raise SystemExit(2)
    start = time.monotonic()
    names = BASELINES if not args.no_prior else BASELINES[:-1]
    if args.test is None:
        tables = _tables()
        scored = tables
        what = (f"{len(tables)} development tables (`lab/benchmarks/data/h200`), each held out in turn; "
                "every "
                "baseline uses only the other tables")
        title = "H200 split-K, leave one shape out"
    else:
        tables = _tables(*args.train)
        scored = _tables(str(args.test / "*.table.json.gz"))
        if args.retimed:
            scored = [t.with_retimed_times() for t in scored]
        where = args.test.resolve().relative_to(ROOT)
        what = (f"{len(scored)} test tables (`{where}`), "
                f"every baseline computed from the {len(tables)} training tables alone"
                + (", against each table's re-timed optimum" if args.retimed else ""))
        title = f"priors from {_devices(tables)}, test set {args.test.name}"
    lines = [
        f"# Cheap transfer baselines against the cost model ({title})", "",
        f"- command: `{' '.join(['python', *sys.argv])}`",
        f"- commit: {code_commit(ROOT, outputs=[RESULTS])}",
        f"- hardware: {platform.machine()} CPU; the scored tables were raced on {_devices(scored)}, "
        f"the training tables on {_devices(tables)}",
        f"- versions: Python {platform.python_version()}, "
        + ", ".join(f"{p} {version(p)}" for p in ("scikit-learn", "numpy", "optuna")),
        f"- date: {dt.date.today().isoformat()}",
        f"- {what}. Cell: rank (1-based) of the table's first config within 1% of its optimum in that "
        "order (`-`: none)", "",
        "| table | regime | configs | " + " | ".join(names) + " |",
        "|---|---|---:|" + "---:|" * len(names),
    ]
    fixed_prior: Any = None
    fixed_mean = None
    if args.test is not None:
        fixed_prior = False if args.no_prior else fit_prior(list(tables))
        fixed_mean = _mean_rank(tables)
    ranks: dict[str, list[int | None]] = {b: [] for b in names}
    for held in sorted(scored, key=lambda t: (t.meta.shape().M, t.name)):
        others = [t for t in tables if t.name != held.name]
        prior = (not args.no_prior) if args.test is None else fixed_prior
        row = baseline_ranks(held, others, prior=prior, mean=fixed_mean)
        for b in names:
            ranks[b].append(row[b])
        lines.append(f"| {held.name} | {held.meta.shape().regime} | {len(held.rows)} | "
                     + " | ".join(_fmt(row[b]) for b in names) + " |")
        print(lines[-1], flush=True)
    lines += ["", "Summary (rank of the first config within 1%):", ""]
    for b in names:
        rs = [math.inf if r is None else r for r in ranks[b]]
        lines.append(f"- {b}: median rank {statistics.median(rs):g}; <= {HIT} on "
                     f"{sum(r <= HIT for r in rs)} of {len(rs)} tables; worst {max(rs):g}")
    lines += ["", f"({time.monotonic() - start:.0f} s)"]
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
