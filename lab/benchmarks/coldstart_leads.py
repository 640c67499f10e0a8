"""How far ahead of the field can a cold start be? Every strategy's lead, table by table, over test runs.

    python lab/benchmarks/coldstart_leads.py lab/benchmarks/results/compare/coldstart_test/summary.csv \\
        lab/benchmarks/results/compare/coldstart_test{2,3,4,5,6,7,8,9,10}/summary.csv \\
        --base auto --gemm stochastic_cache_files/ --out lab/benchmarks/results/coldstart_leads.md

Issue 44 asks the default cold start (``--base``) to need at most half the best anchor's median
compiles to within 1% of the optimum on every test table, to reach 1% within the budget on at least
95% of its seeds, and on the GEMM caches (tables whose name contains a ``--gemm`` string) to reach a
mean fraction of the optimum of 0.98 at 50 compiles and 0.995 at 200. Read over the test runs of
``flysearch compare`` that set the base beside the anchors (Kernel Tuner's strategies, Optuna's
CMA-ES), this reports how often each of those targets holds, and how often *any* strategy of the
same runs -- the base or an anchor -- needs at most half of what every other one needs: the lead the
first target asks of the base, measured for the field. Only the base and the anchors count; other
samplers of the runs are left out. A median that is censored (fewer than half the seeds within the
budget) counts as more than the budget, and two censored medians are no lead.
"""

from __future__ import annotations

import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from _summary_report import is_anchor, parse_summaries, summary_names, table_rows, write_report  # noqa: E402

#: The targets of issue 44: the lead over the best anchor, the share of seeds within the budget, and
#: the GEMM caches' mean fractions of the optimum at 50 and 200 compiles.
LEAD, SEEDS, AT_50, AT_200 = 2.0, 0.95, 0.98, 0.995


@dataclass(frozen=True)
class Table:
    """One table of one run: each strategy's median compiles to within 1% (inf when censored),
    the base's share of seeds within the budget, and each strategy's mean fractions at 50 and 200
    (empty for a table that is not a GEMM cache)."""

    run: str
    name: str
    medians: dict[str, float]
    base_success: float
    fractions: dict[str, tuple[float, float]]

    def leader(self) -> str | None:
        """The strategy needing at most 1/LEAD of every other's median, if one does."""
        for s, m in self.medians.items():
            others = min(v for k, v in self.medians.items() if k != s)
            if math.isfinite(m) and m * LEAD <= others:
                return s
        return None


def tables(paths: list[Path], base: str, gemm: list[str]) -> list[Table]:
    """The tables of the runs *paths* on which *base* ran beside at least one anchor."""
    out = []
    for path in paths:
        rows = table_rows(path)
        if base not in rows:
            raise SystemExit(f"no sampler {base!r} in {path}; it has {', '.join(sorted(rows))}")
        pool = [base, *sorted(s for s in rows if is_anchor(s))]
        if len(pool) == 1:
            raise SystemExit(f"{path} holds no anchor (kt:<strategy> or cmaes-margin)")
        for name, row in sorted(rows[base].items()):
            here = {s: rows[s][name] for s in pool if name in rows[s]}
            fractions = ({s: (float(r["fraction_mean_at_50"]), float(r["fraction_mean_at_200"]))
                          for s, r in here.items()} if any(g in name for g in gemm) else {})
            out.append(Table(path.parent.name, name,
                             {s: float(r["compiles_1pct_median"] or "inf") for s, r in here.items()},
                             float(row["compiles_1pct_success"]), fractions))
    return out


def ratio(t: Table, base: str) -> float:
    """The base's median over the best anchor's (1 when both are censored)."""
    bar = min(v for s, v in t.medians.items() if s != base)
    own = t.medians[base]
    return 1.0 if math.isinf(own) and math.isinf(bar) else own / bar


def counts(rows: list[Table], base: str) -> dict[str, int]:
    """How many of *rows* meet each target: ``tables``; ``half`` (the base at most half the best
    anchor), ``below`` (at most the best anchor), ``seeds`` (95% of its seeds within the budget),
    ``both`` (the first two targets); ``anchor_leads`` (an anchor at most half of every other
    strategy); and over the GEMM caches (``caches``), the base at 0.98 at 50 compiles (``at_50``)
    and 0.995 at 200 (``at_200``), and the best strategy of each cache, picked after the fact
    (``best_50``, ``best_200``)."""
    half = [ratio(t, base) * LEAD <= 1 for t in rows]
    seeds = [t.base_success >= SEEDS for t in rows]
    caches = [t.fractions for t in rows if t.fractions]
    return {"tables": len(rows), "half": sum(half), "below": sum(ratio(t, base) <= 1 for t in rows),
            "seeds": sum(seeds), "both": sum(h and s for h, s in zip(half, seeds, strict=True)),
            "anchor_leads": sum(t.leader() not in (None, base) for t in rows), "caches": len(caches),
            "at_50": sum(f[base][0] >= AT_50 for f in caches),
            "at_200": sum(f[base][1] >= AT_200 for f in caches),
            "best_50": sum(max(v[0] for v in f.values()) >= AT_50 for f in caches),
            "best_200": sum(max(v[1] for v in f.values()) >= AT_200 for f in caches)}


def report(rows: list[Table], base: str) -> list[str]:
    """The report's lines: per run, per strategy, the base's ratios, and the GEMM caches."""
    runs = list(dict.fromkeys(t.run for t in rows))
    lines = ["## Per run", "",
             f"| run | tables | {base} <= 1/2 of the best anchor | {base} <= the best anchor | "
             f"{base} within the budget on >= 95% of seeds | both targets | an anchor <= 1/2 of all others |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for run in [*runs, "all"]:
        c = counts([t for t in rows if run in ("all", t.run)], base)  # "all" last: kept below
        lines.append(f"| {run} | {c['tables']} | {c['half']} | {c['below']} | {c['seeds']} | {c['both']} | "
                     f"{c['anchor_leads']} |")
    strategies = sorted({s for t in rows for s in t.medians}, key=lambda s: (s != base, s))
    lines += ["", "## Per strategy, over all the tables", "",
              "| strategy | tables | lowest median (ties count for each) | <= 1/2 of every other |",
              "|---|---:|---:|---:|"]
    for s in strategies:
        ts = [t for t in rows if s in t.medians]
        lowest = sum(t.medians[s] == min(t.medians.values()) and math.isfinite(t.medians[s]) for t in ts)
        lines.append(f"| {s} | {len(ts)} | {lowest} | {sum(t.leader() == s for t in ts)} |")
    ratios = sorted(ratio(t, base) for t in rows)
    q = statistics.quantiles(ratios, n=10, method="inclusive")
    lines += ["", f"- {base}'s median over the best anchor's, over the {len(rows)} tables: "
              f"10th percentile {q[0]:.2f}, median {statistics.median(ratios):.2f}, 90th percentile "
              f"{q[8]:.2f} (the first target asks at most {1 / LEAD:g} on every table)"]
    caches = [t for t in rows if t.fractions]
    if caches:
        lines += ["", "## The GEMM caches: mean fraction of the optimum", "",
                  f"| table | {base} at 50 | best at 50 | {base} at 200 | best at 200 |",
                  "|---|---:|---|---:|---|"]
        for t in caches:
            b50 = max(t.fractions, key=lambda s: t.fractions[s][0])
            b200 = max(t.fractions, key=lambda s: t.fractions[s][1])
            lines.append(f"| {t.name} | {t.fractions[base][0]:.3f} | {b50} {t.fractions[b50][0]:.3f} | "
                         f"{t.fractions[base][1]:.3f} | {b200} {t.fractions[b200][1]:.3f} |")
        lines += ["", f"- {base} reaches {AT_50} at 50 compiles on {c['at_50']} of {c['caches']} caches "
                  f"and {AT_200} at 200 on {c['at_200']}; the best strategy of each cache, picked after "
                  f"the fact, on {c['best_50']} and {c['best_200']}"]
    return lines


def main() -> None:
    args = parse_summaries(__doc__.splitlines()[0], "a flysearch compare test run's summary.csv",
                           "the default cold start", "a string that names a GEMM cache (repeatable)")
    lines = report(tables(args.summary, args.base, args.gemm), args.base)
    intro = ("Per table, the median compiles to within 1% of the optimum of the base and of each anchor "
             "in the same run (a censored median counts as more than the budget). `<= 1/2 of all others`: "
             "the strategy needs at most half of every other strategy's median, the lead issue 44 asks of "
             "the base. The GEMM caches' fractions are each strategy's mean over its seeds.")
    write_report(ROOT, f"How far ahead of the field a cold start gets: {summary_names(ROOT, args.summary)}",
                 intro, lines, args.out)


if __name__ == "__main__":
    main()
