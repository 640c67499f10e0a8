"""Cold start on other kernels, read once from its comparison (lab/otherkernels/README.md).

    python lab/otherkernels/report.py

Reads ``lab/benchmarks/results/compare/otherkernels_coldstart/summary.csv`` (per-table medians over 10
seeds of ``auto`` and 21 anchors on the examples' 24 third held-out races: softmax, layer norm,
matmul on an H100) and writes ``lab/benchmarks/results/otherkernels_coldstart.md``: per table `auto`
against the best anchor (picked per table after the run), the declared shares, the methodology score
per kernel, sign tests with Holm's correction, and seconds to 1% with a cold and a warm compile cache.
A median of ">B" (fewer than half the seeds within the budget) counts as B + 1 and is shown as ">400".
"""

from __future__ import annotations

import argparse
import collections
import datetime as dt
import platform
import re
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "hardtest"))

from report import ANCHORS, BUDGET, COMPARE, RESULTS, ROOT, _cell, _compiles, _num, _rows, _tests

from flysearch.compare import code_commit
from flysearch.tables import read_table_file

EXPERIMENT = "otherkernels_coldstart"
TABLES = ROOT / "lab" / "benchmarks" / "data" / "autotune_h100_heldout3" / "races"
POSTHOC_ANCHORS = ("tpe-unseen[n_ei_candidates=96]", "ranker")
ALL_ANCHORS = (*ANCHORS, *POSTHOC_ANCHORS)
AMENDED = "seeds other than 10, by the protocol's amendment: "


def _kernel(table: str) -> str:
    return table.split("/", 1)[0].removesuffix("_kernel")


def _seconds(row: dict[str, str] | None, column: str) -> float:
    return float("nan") if row is None else _num(row[column])


def _races() -> dict[str, tuple[int, float]]:
    """Each race's name: its correct configs and their median compile seconds as the race recorded them."""
    out = {}
    for path in sorted(TABLES.glob("*.table.json.gz")):
        meta, rows = read_table_file(path)
        ok = [r for r in rows if r.ok]
        out[meta.name] = (len(ok), statistics.median(r.compile_s or 0.0 for r in ok))
    return out


def report(rows: dict[str, dict[str, dict[str, str]]], command: str) -> str:
    summary = (COMPARE / EXPERIMENT / "summary.md").read_text()
    runs = re.search(r"^- commit: the runs (.*?); this report", summary, flags=re.M).group(1)
    hosts = re.search(r"^- hardware: the runs (.*?); this report", summary, flags=re.M).group(1)
    tables = sorted(rows)
    missing = sorted({s for t in tables for s in ("auto", *ALL_ANCHORS) if s not in rows[t]})
    if missing:
        raise SystemExit(f"{EXPERIMENT}: no runs of {', '.join(missing)} on some tables")
    kernels = sorted({_kernel(t) for t in tables})
    races = _races()
    seeds = {s: sorted({int(rows[t][s]["runs"]) for t in tables}) for s in ("auto", *ALL_ANCHORS)}
    fewer = ", ".join(f"`{s}` {'/'.join(map(str, n))}" for s, n in seeds.items() if n != [10])
    lines = ["# Cold start on other kernels: softmax, layer norm, matmul (H100)", "",
             f"- command: `{command}`",
             f"- commit: {code_commit(ROOT, outputs=[RESULTS])} (this report); the comparison's runs {runs}",
             f"- hardware: the tables raced on an NVIDIA H100 80GB HBM3 (2026-12-07); the replays {hosts}",
             f"- versions: Python {platform.python_version()}; the replays' in "
             f"`compare/{EXPERIMENT}/summary.md`",
             f"- date: {dt.date.today().isoformat()}",
             "- protocol: `lab/otherkernels/README.md`, committed before any sampler ran on these tables; "
             "the tables had been raced, and their optima read, for `@flysearch.autotune`'s third held-out "
             "test (so they are not a fresh test set); run once", "",
             "Each row: one of the examples' third held-out keys, raced exhaustively (top re-timed). "
             "Compiles to 1% of the re-timed optimum: medians over 10 seeds "
             f"({AMENDED + fewer if fewer else 'every sampler'}), "
             f"budget {BUDGET}; `>{BUDGET}`: "
             "fewer than half the seeds got there. *best anchor*: the anchor with the fewest, of "
             f"{len(ALL_ANCHORS)} ({', '.join(f'`{a}`' for a in ALL_ANCHORS)}), picked per table after "
             "the run.", "",
             "| table | kernel | configs | `auto` | best anchor | `auto` / best | `auto` seeds within "
             f"{BUDGET} |", "|---|---|---:|---:|---|---:|---:|"]
    ratios: dict[str, list[float]] = collections.defaultdict(list)
    for t in tables:
        auto = _compiles(rows[t]["auto"])
        anchor = min(ALL_ANCHORS, key=lambda a: (_compiles(rows[t][a]), a))
        best = _compiles(rows[t][anchor])
        ratios[_kernel(t)].append(auto / best)
        lines.append(f"| {t.split('/')[-1]} | {_kernel(t)} | {races[t][0]} | {_cell(auto)} | "
                     f"`{anchor}` {_cell(best)} | {auto / best:.2f} | "
                     f"{_num(rows[t]['auto']['compiles_1pct_success']):.0%} |")
    every = [r for k in kernels for r in ratios[k]]
    n = len(every)
    seeds_ok = min(_num(rows[t]["auto"]["compiles_1pct_success"]) for t in tables)
    lines += ["", "## The declared shares", "",
              f"- `auto` needs at most the best anchor's median compiles on "
              f"**{sum(r <= 1 for r in every)} of {n}** tables; at most 1.5x it on "
              f"{sum(r <= 1.5 for r in every)} of {n}; worst "
              f"{max(every):.2f}x; geometric mean of `auto` / best {statistics.geometric_mean(every):.2f}",
              "- per kernel: " + "; ".join(
                  f"{k} {sum(r <= 1 for r in ratios[k])} of {len(ratios[k])} at most the best, "
                  f"{sum(r <= 1.5 for r in ratios[k])} within 1.5x" for k in kernels),
              f"- share of `auto`'s seeds within {BUDGET} compiles: at least {seeds_ok:.0%} on every "
              "table", ""]
    lines += ["Methodology score (Willemsen et al., relative to random search over compiles 1..400; "
              "mean over the kernel's tables), best first by its lowest kernel:", "",
              "| sampler | " + " | ".join(kernels) + " |", "|---|" + "---:|" * len(kernels)]
    scores = {s: {k: statistics.fmean(_num(rows[t][s]["score"]) for t in tables if _kernel(t) == k)
                  for k in kernels} for s in ("auto", *ALL_ANCHORS)}
    for s, by in sorted(scores.items(), key=lambda kv: -min(kv[1].values())):
        lines.append(f"| `{s}` | " + " | ".join(f"{by[k]:.3f}" for k in kernels) + " |")
    above = [k for k in kernels if scores["auto"][k] > max(scores[a][k] for a in ALL_ANCHORS)]
    lines += ["", f"- `auto`'s score above every anchor's on: {', '.join(above) or 'no kernel'}", "",
              "Sign tests over the tables (Holm-corrected over the anchors):", ""]
    lines += _tests(rows, "auto", list(ALL_ANCHORS))
    lines += ["", "## Seconds to 1%", "",
              "Medians over seeds of the seconds until a config within 1% was found: with a cold compile "
              "cache each config costs its race compile seconds plus its timing seconds, with a warm one "
              "its timing seconds only. These races recorded almost no compile seconds (median "
              f"{statistics.median(c for _n, c in races.values()):.2g} s a config: the decorator's race "
              "did not record its compile pool's seconds), so cold and warm differ little here. "
              "Tables where `auto`'s median is at most every anchor's:", ""]
    for label, column in (("cold cache", "seconds_1pct_median"), ("warm cache", "warm_seconds_1pct_median")):
        wins = sum(_seconds(rows[t]["auto"], column) <= min(_seconds(rows[t][a], column) for a in ALL_ANCHORS)
                   for t in tables)
        median = statistics.median(_seconds(rows[t]["auto"], column) for t in tables)
        lines.append(f"- {label}: {wins} of {n} tables; `auto`'s median over tables {median:.3g} s")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=RESULTS / "otherkernels_coldstart.md")
    args = ap.parse_args(argv)
    given = argv if argv is not None else sys.argv[1:]
    command = " ".join(["python", "lab/otherkernels/report.py", *given])
    args.out.write_text(report(_rows(EXPERIMENT), command))
    print(args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
