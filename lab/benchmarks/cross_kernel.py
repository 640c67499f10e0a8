"""Cross-kernel transfer: a prior trained on one Triton GEMM family's tables, used on the other's.

    OMP_NUM_THREADS=1 python lab/benchmarks/cross_kernel.py --out lab/benchmarks/results/cross_kernel.md

Two directions, each against a cold start on the same tables, seeds and budget:

* **split-K -> TMA**: a prior trained on the 73 committed split-K H200 tables (``h200``,
  ``h200_extra``, ``h200_extra2``, ``h200_holdout``, ``h200_holdout2``) searches the persistent TMA
  family's tables: the twelve held-out shapes (``h200_tma_holdout``: neither the shape nor the
  kernel was ever trained on) and, apart, the 27 shapes whose split-K tables it trained on
  (``h200_tma``: the kernel is new, the shapes are not).
* **TMA -> split-K**: a prior trained on the 27 TMA tables of ``h200_tma`` searches the split-K
  tables of the twelve held-out shapes (``h200_kernels_holdout``).
* **split-K on the H200 -> fused split-K on an H100**: the split-K prior searches the fused split-K
  family's tables (``h100_fused``, ``h100_fused_holdout``: 13 decode and K-heavy shapes raced on an
  H100). The kernel's reduction moved inside its one launch and the GPU changed; the space is
  split-K's with SPLIT_K above 1.

A test table is handed to the prior under the training kernel's name (the prior is per kernel):
the model sees its configs' parameters and the shape; a parameter only one family has
(``SPLIT_K``, ``EPILOGUE_SUBTILE``) is a feature the other family's prior never saw. The sampler is
``costmodel``; the cold start is ``fastgp`` (flysearch's best cold-start sampler on the development
tables) and the analytic expectation of random sampling without replacement. Counted: unique
compiles until a config within 1% of the table's optimum is measured (5 seeds, budget 100).

``lab/benchmarks/results/cross_kernel.md`` is the first search of the held-out tables, by the prior as it
was then (its commit in the file); ``cross_kernel_rerun.md`` searches them again with today's prior
(a development number) and adds the fused family, searched there for the first time.

With ``--exclude-feature NAME`` the split-K prior that searches the TMA family never sees that
feature, and only the two split-K -> TMA sections run:

    OMP_NUM_THREADS=1 python lab/benchmarks/cross_kernel.py --exclude-feature g_split_fixed \
        --out lab/benchmarks/results/cross_kernel_exclude.md
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import glob
import platform
import shlex
import statistics
import sys
import time
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "lab" / "benchmarks"
sys.path.insert(0, str(ROOT))

from _costmodel_eval import evaluate_test_set  # noqa: E402

from flysearch.compare import code_commit  # noqa: E402
from flysearch.tables import GroundTruth, read_table_file  # noqa: E402

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

DATA = BENCHMARKS / "data"
SPLITK_TRAINING = ("h200", "h200_extra", "h200_extra2", "h200_holdout", "h200_holdout2")
SEEDS = (0, 1, 2, 3, 4)
BUDGET = 100


def _tables(folders: tuple[str, ...], kernel: str | None = None) -> list[GroundTruth]:
    out = []
    for folder in folders:
        for path in sorted(glob.glob(str(DATA / folder / "*.table.json.gz"))):
            meta, rows = read_table_file(path)
            if kernel is not None:  # handed to the other family's prior under its kernel's name
                meta = dataclasses.replace(meta, kernel=kernel)
            out.append(GroundTruth(meta, {r.key: r for r in rows}))
    return out


def _value(runs: list[int | None]) -> float:
    return statistics.median(BUDGET + 1 if r is None else r for r in runs)


def _fmt(x: float) -> str:
    return f">{BUDGET}" if x > BUDGET else f"{x:g}"


def _section(title: str, train: list[GroundTruth], tests: list[GroundTruth],
             exclude: tuple[str, ...] = ()) -> tuple[list[str], list[float]]:
    prior_runs = {r.table: r for r in evaluate_test_set(train, tests, seeds=SEEDS, budget=BUDGET,
                                                        exclude_features=exclude)}
    cold_runs = {r.table: r for r in evaluate_test_set(train, tests, seeds=SEEDS, budget=BUDGET,
                                                       sampler="fastgp")}
    without = f", leaving out {', '.join(exclude)}" if exclude else ""
    lines = [f"## {title}", "",
             f"Prior trained on {len(train)} tables{without}; {len(tests)} test tables.", "",
             "| table | regime | configs | prior: median to 1% | per seed "
             "| prior's rank of the first within 1% | fastgp: median | random: expected |",
             "|---|---|---:|---:|---|---:|---:|---:|"]
    medians, cold, rand = [], [], []
    for t in sorted(tests, key=lambda t: (t.meta.shape().M, t.name)):
        p, c = prior_runs[t.name], cold_runs[t.name]
        runs = p.sampler[0.01]
        m, cm = _value(runs), _value(c.sampler[0.01])
        medians.append(m)
        cold.append(cm)
        expected = (p.random_expected or {}).get(0.01)
        rand.append(expected if expected is not None else float("nan"))
        rank = p.prior_rank.get(0.01)
        lines.append(f"| {t.name} | {t.meta.shape().regime} | {len(t.rows)} | {_fmt(m)} | "
                     f"{', '.join('-' if r is None else str(r) for r in runs)} | "
                     f"{'-' if rank is None else rank} | {_fmt(cm)} | "
                     f"{'-' if expected is None else f'{expected:.1f}'} |")
    worst = max(BUDGET + 1 if r is None else r for t in tests for r in prior_runs[t.name].sampler[0.01])
    lines += ["", f"Median of the per-table medians: prior {statistics.median(medians):g} (worst single run "
              f"{_fmt(worst)}), fastgp {statistics.median(cold):g}, random {statistics.median(rand):.1f}; "
              f"prior within 8 on {sum(m <= 8 for m in medians)} of {len(medians)} tables "
              "(target of the kernels issue: median <= 8).", ""]
    return lines, medians


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=BENCHMARKS / "results" / "cross_kernel.md")
    ap.add_argument("--exclude-feature", action="append", default=[],
                    help="a feature the split-K prior searching the TMA family leaves out (repeatable); "
                         "only the split-K -> TMA sections run")
    ap.add_argument("--development", default=None,
                    help="why these tables were seen before: labels the file's numbers development numbers")
    args = ap.parse_args()
    exclude = tuple(args.exclude_feature)
    start = time.monotonic()
    splitk = _tables(SPLITK_TRAINING)
    lines = [
        "# Cross-kernel transfer: a prior trained on one Triton GEMM family, used on the other", "",
        f"- command: `{shlex.join(['python', *sys.argv])}`",
        f"- commit: {code_commit(ROOT, outputs=[RESULTS])}",
        f"- hardware: {platform.machine()} CPU; the tables were raced on an NVIDIA H200, the fused "
        "family's on an NVIDIA H100",
        f"- versions: Python {platform.python_version()}, "
        + ", ".join(f"{p} {version(p)}" for p in ("scikit-learn", "numpy", "optuna")),
        f"- date: {dt.date.today().isoformat()}",
        f"- {len(SEEDS)} seeds, budget {BUDGET}; the held-out shapes "
        "(`lab/studies/shapes_h200_kernels_holdout.toml`) were committed before they were raced",
        *([f"- **development numbers**: {args.development}"] if args.development else []), "",
    ]
    section, _ = _section("split-K -> TMA, held-out shapes (`h200_tma_holdout`)", splitk,
                          _tables(("h200_tma_holdout",), kernel="triton_gemm"), exclude)
    lines += section
    section, _ = _section("split-K -> TMA, shapes the prior trained on (`h200_tma`)", splitk,
                          _tables(("h200_tma",), kernel="triton_gemm"), exclude)
    lines += section
    if not exclude:
        section, _ = _section("TMA -> split-K, held-out shapes (`h200_kernels_holdout`)",
                              _tables(("h200_tma",)),
                              _tables(("h200_kernels_holdout",), kernel="triton_gemm_tma"))
        lines += section
        section, _ = _section("split-K on the H200 -> fused split-K on an H100 (`h100_fused*`)", splitk,
                              _tables(("h100_fused", "h100_fused_holdout"), kernel="triton_gemm"))
        lines += section
    lines.append(f"({time.monotonic() - start:.0f} s)")
    args.out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
