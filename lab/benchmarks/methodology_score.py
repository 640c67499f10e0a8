"""Score a finished ``flysearch compare`` with the ``autotuning-methodology`` package itself.

Willemsen et al. (2024) score a tuner by its best-so-far curve standardised against random search
without replacement: 0 is random search, 1 the optimum, averaged over the curve. ``compare`` reports
its own implementation of that score (the ``score`` column of ``summary.csv``, over compiles 1..B).
This benchmark computes it with the authors' package (``pip install autotuning-methodology``): each
table's searched space is written as a T4 results file for the package's ``SearchspaceStatistics``;
the stored runs of a (table, sampler), their best-so-far times after compiles 1..B, become the
package's ``StochasticOptimizationAlgorithm`` curve, and its ``RandomSearchCalculatedBaseline``
standardises that curve. A run that stopped early (it had found the space's optimum) keeps its last
best. The report sets the package's score beside ``compare``'s, per sampler, averaged over tables.

Run it on an experiment whose runs are stored (its ``results.db`` in the output folder):

    python lab/benchmarks/methodology_score.py lab/studies/compare_h200_kernels_holdout.toml \\
        --results lab/benchmarks/results/compare/compare_h200_kernels_holdout \\
        --out lab/benchmarks/results/methodology_score.md
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import sys
import tempfile
import warnings
from datetime import date
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from flysearch.compare import (  # noqa: E402
    RESULTS_DB,
    code_commit,
    host_description,
    load_experiment,
    load_runs,
    load_table_infos,
)

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes


def _t4_file(info: Any, path: Path) -> Path:
    """*info*'s successful configs written to *path* as a T4 results file (the package's input)."""
    results = [{"configuration": {"index": i}, "times": {"compilation_time": cost},
                "invalidity": "correct", "correctness": 1,
                "measurements": [{"name": "time", "value": ms, "unit": "ms"}]}
               for i, (ms, cost) in enumerate(zip(info.row_times, info.costs, strict=True)) if ms is not None]
    path.write_text(json.dumps({"schema_version": "1.0.0", "metadata": {"timeunit": "seconds"},
                                "results": results}))
    return path


class _Runs:
    """One (table, sampler)'s runs as the package's ``ResultsDescription`` hands them to a curve."""

    stochastic, minimization = True, True

    def __init__(self, table: str, sampler: str, device: str, best: np.ndarray, seconds: np.ndarray) -> None:
        self.application_name, self.device_name = table, device
        self.group_name = self.group_display_name = sampler
        self._best, self._seconds = best, seconds  # compiles x runs

    def get_results(self) -> Any:
        from autotuning_methodology.caching import Results

        steps = np.arange(1, self._best.shape[0] + 1, dtype=float)[:, None]
        fevals = np.broadcast_to(steps, self._best.shape).copy()
        return Results([fevals, self._seconds, self._best, self._best, np.zeros_like(self._best),
                        self._seconds[None], self._best[None]])


def package_scores(study: Path, results: Path) -> tuple[dict[str, dict[str, float]], int]:
    """{sampler: {table: the package's score}} over compiles 1..B (up to where random search reaches
    the optimum), and the budget B.

    Per (table, sampler) the runs' best-so-far times form one stochastic curve
    (``StochasticOptimizationAlgorithm``: the median rank over the runs at each compile), which the
    package's ``RandomSearchCalculatedBaseline`` standardises; the score is its mean."""
    from autotuning_methodology.baseline import RandomSearchCalculatedBaseline
    from autotuning_methodology.curves import StochasticOptimizationAlgorithm
    from autotuning_methodology.searchspace_statistics import SearchspaceStatistics

    exp = load_experiment(study)
    infos = {i.label: i for i in load_table_infos(exp)}
    runs = [r for r in load_runs(results / RESULTS_DB) if r["table_label"] in infos
            and r["seed"] in _seeds_of(exp, r["sampler"]) and r["budget"] == exp.budget]
    ks = np.arange(1, exp.budget + 1)
    out: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the package warns of runs that stopped at the optimum
        for n, (label, info) in enumerate(infos.items()):
            stats = SearchspaceStatistics(label, info.device, True, ["compilation_time"], ["time"],
                                          _t4_file(info, Path(tmp) / f"{n}.json"))
            baseline = RandomSearchCalculatedBaseline(stats)
            # Where random search already sits at the optimum the score is 0/0: the range ends there
            # (compare's own score skips those compiles too).
            optimum = stats.total_performance_absolute_optimum()
            fevals = ks[baseline.get_curve_over_fevals(ks) != optimum]
            for sampler in dict.fromkeys(r["sampler"] for r in runs):
                mine = [r for r in runs if r["table_label"] == label and r["sampler"] == sampler]
                best = np.column_stack([_padded(r["trajectory"].best_ms, exp.budget) for r in mine])
                seconds = np.column_stack([_padded(np.cumsum(r["trajectory"].cost_s), exp.budget)
                                           for r in mine])
                curve = StochasticOptimizationAlgorithm(_Runs(label, sampler, info.device, best, seconds))
                _stop, _x, median, _lo, _hi = curve.get_curve_over_fevals(
                    fevals, dist=stats.objective_performances_total_sorted, return_split=False)
                out.setdefault(sampler, {})[label] = float(np.mean(
                    baseline.get_standardised_curve(fevals, median, x_type="fevals")))
    return out, exp.budget


def _padded(values: Any, budget: int) -> np.ndarray:
    """The first *budget* values, the last repeated after a run that stopped early (at the optimum)."""
    values = list(values)[:budget]
    return np.array(values + [values[-1]] * (budget - len(values)), dtype=float)


def _seeds_of(exp: Any, sampler: str) -> tuple[int, ...]:
    spec = next(s for s in exp.samplers if s.label == sampler)
    return spec.seeds if spec.seeds is not None else exp.seeds


def _own_scores(results: Path) -> dict[str, dict[str, float]]:
    """``compare``'s score column, {sampler: {table: score}}."""
    with (results / "summary.csv").open(newline="") as fh:
        rows = [r for r in csv.DictReader(fh) if r["level"] == "table" and r["runs"] != "0"]
    return {s: {r["where"]: float(r["score"]) for r in rows if r["sampler"] == s}
            for s in dict.fromkeys(r["sampler"] for r in rows)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("study", type=Path, help="the experiment file")
    parser.add_argument("--results", type=Path, required=True,
                        help="its output folder (results.db, summary.csv)")
    parser.add_argument("--out", type=Path, help="markdown report (default: print it)")
    args = parser.parse_args()
    for path in (args.study, args.results / RESULTS_DB, args.results / "summary.csv"):
        if not path.is_file():
            print(f"error: {path} does not exist; run the experiment first (flysearch compare)",
                  file=sys.stderr)
            return 2
    scores, budget = package_scores(args.study, args.results)
    own = _own_scores(args.results)
    order = sorted(scores, key=lambda s: -np.mean(list(scores[s].values())))
    command = " ".join(["python", "lab/benchmarks/methodology_score.py", *sys.argv[1:]])
    lines = [
        f"# Willemsen et al.'s score from the autotuning-methodology package: `{args.study.stem}`", "",
        f"- command: `{command}`",
        f"- commit: {code_commit(REPO, outputs=[RESULTS]) or 'not a git checkout'}",
        f"- hardware: {host_description()} (scoring only; the runs: see the experiment's summary.md)",
        f"- versions: Python {platform.python_version()}, autotuning-methodology "
        f"{version('autotuning-methodology')}, numpy {np.__version__}",
        f"- date: {date.today().isoformat()}", "",
        f"Each run's best-so-far time after compiles 1..{budget} (up to where random search reaches the "
        "optimum), standardised by the package's "
        "`RandomSearchCalculatedBaseline` over the table's searched space (0: random search without "
        "replacement; 1: the optimum at every compile), averaged over the compiles and the table's "
        "runs, then over tables. *compare's own*: the `score` column of the experiment's summary.csv "
        "(flysearch's implementation of the same score), averaged over the same tables.", "",
        "| sampler | tables | score (package) | score (compare's own) | largest difference on a table |",
        "|---|---:|---:|---:|---:|"]
    for s in order:
        tables = sorted(scores[s])
        diff = max(abs(scores[s][t] - own[s][t]) for t in tables)
        lines.append(f"| {s} | {len(tables)} | {np.mean([scores[s][t] for t in tables]):.3f} | "
                     f"{np.mean([own[s][t] for t in tables]):.3f} | {diff:.3f} |")
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
        print(args.out)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
