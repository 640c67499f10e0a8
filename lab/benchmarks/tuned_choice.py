"""Which variant of each sampler a tuning run on development tables picks, by a rule fixed before
the run: the lowest mean over tables of the median compiles to 1% (a median that fewer than half
the seeds reached counts as the budget plus one), ties to the lower mean 90th percentile, then to
the variant with fewer options.

    python lab/benchmarks/tuned_choice.py lab/benchmarks/results/compare/tune_optuna \\
        --out lab/benchmarks/results/tune_optuna_choice.md

Variants are the ``[[sampler]]`` entries of one name with different options (labels such as
``tpe-unseen[n_ei_candidates=96]``, the sampler at its defaults labelled by its name alone). Two
variants whose results are identical on every table (an option set to its default) are reported as
such.
"""

from __future__ import annotations

import argparse
import csv
import datetime as dt
import math
import platform
import statistics
import sys
from collections import defaultdict
from pathlib import Path

from flysearch.compare import code_commit

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

ROOT = Path(__file__).resolve().parents[2]


def _value(text: str, censored: float) -> float:
    """A summary cell as a number: an empty or infinite median is *censored*."""
    try:
        x = float(text)
    except ValueError:
        return censored
    return censored if math.isinf(x) or math.isnan(x) else x


def base_name(label: str) -> str:
    """The sampler a variant's label names: ``tpe-unseen[n_startup_trials=5]`` -> ``tpe-unseen``."""
    return label.split("[", 1)[0]


def variant_scores(summary: Path, budget: int) -> dict[str, dict[str, float]]:
    """Per variant label: mean over tables of the median and of the 90th-percentile compiles to 1%."""
    per_table: dict[str, list[tuple[float, float]]] = defaultdict(list)
    with summary.open(newline="") as f:
        for row in csv.DictReader(f):
            if row["level"] != "table" or row["sampler"].endswith("(analytic)"):
                continue
            per_table[row["sampler"]].append((_value(row["compiles_1pct_median"], budget + 1),
                                              _value(row["compiles_1pct_p90"], budget + 1)))
    return {label: {"median": statistics.mean(m for m, _ in v), "p90": statistics.mean(p for _, p in v),
                    "tables": len(v)} for label, v in per_table.items()}


def identical_results(summary: Path) -> dict[str, str]:
    """Each label whose per-table results (every column of summary.csv but the wall-clock cost per
    trial) equal, on every table, those of a label of the same sampler with fewer options, mapped to
    that label: an option that changed nothing (set to its default)."""
    results: dict[str, dict[str, tuple[str, ...]]] = defaultdict(dict)
    with summary.open(newline="") as f:
        for row in csv.DictReader(f):
            if row["level"] == "table":
                kept = tuple(v for k, v in row.items() if k not in ("sampler", "ms_per_trial"))
                results[row["sampler"]][row["where"]] = kept
    same = {}
    labels = sorted(results, key=lambda s: (len(s), s))
    for i, label in enumerate(labels):
        for other in labels[:i]:
            if base_name(other) == base_name(label) and results[other] == results[label]:
                same[label] = other
                break
    return same


def choose(scores: dict[str, dict[str, float]]) -> dict[str, str]:
    """Per sampler name, the label the rule picks."""
    by_name: dict[str, list[str]] = defaultdict(list)
    for label in scores:
        by_name[base_name(label)].append(label)
    return {name: min(labels, key=lambda s: (scores[s]["median"], scores[s]["p90"], len(s)))
            for name, labels in by_name.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("results", type=Path, help="a compare results folder (summary.csv, results.db)")
    ap.add_argument("--budget", type=int, default=400)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    summary = args.results / "summary.csv"
    if not summary.is_file():
        ap.error(f"{args.results} holds no summary.csv of a compare run")
    scores, same = variant_scores(summary, args.budget), identical_results(summary)
    chosen = choose(scores)
    lines = [
        f"# The tuned variant of each sampler: `{args.results.name}`", "",
        f"- command: `{' '.join(['python', *sys.argv])}`",
        f"- commit: {code_commit(ROOT, outputs=[RESULTS])}",
        f"- hardware: {platform.machine()} (the runs: see the run's summary.md)",
        f"- date: {dt.date.today().isoformat()}", "",
        "Per variant, over the run's tables: the mean of the median compiles to within 1% of the "
        "optimum and of the 90th percentile (a median or percentile not reached counts as "
        f"{args.budget + 1}). "
        "*chosen*: the lowest mean median per sampler, ties to the lower mean 90th percentile, then "
        "to fewer options. *same results as*: every table's results identical to that variant's.", "",
        "| sampler | variant | tables | mean median compiles to 1% | mean p90 | same results as | chosen |",
        "|---|---|---:|---:|---:|---|---|",
    ]
    for label in sorted(scores, key=lambda s: (base_name(s), scores[s]["median"], len(s))):
        s = scores[label]
        twin = f"`{same[label]}`" if label in same else ""
        lines.append(f"| {base_name(label)} | `{label}` | {s['tables']} | {s['median']:.1f} | "
                     f"{s['p90']:.1f} | {twin} | "
                     f"{'**chosen**' if chosen[base_name(label)] == label else ''} |")
    text = "\n".join(lines) + "\n"
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
