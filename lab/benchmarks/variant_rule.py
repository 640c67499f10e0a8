"""Does a variant of a sampler beat it on a comparison's tables? The rule a development run states.

    python lab/benchmarks/variant_rule.py lab/benchmarks/results/compare/coldstart_startup/summary.csv \\
        --base auto --gemm GEMM --gemm gemm/ --out lab/benchmarks/results/coldstart_startup_rule.md

Reads one or more ``flysearch compare`` runs' ``summary.csv`` (their tables pooled: a rule over
tables that need different budgets) and sets each other sampler of them (a variant)
against ``--base``, table by table: on how many tables its median compiles to within 1% of the
optimum is lower, higher or the same (a run that never got there counts as more than the budget;
two censored medians tie), with the two-sided sign test's p (ties left out); and the mean over the
GEMM tables (those whose name contains a ``--gemm`` string) of each table's mean fraction of the
optimum reached at 50 and at 200 compiles; and the share of each sampler's runs, over all the
tables, that reached 1% within the budget. Prints the table and writes it to ``--out``.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from scipy.stats import binomtest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from _summary_report import parse_summaries, summary_names, table_rows, write_report  # noqa: E402


def compare(rows: dict[str, dict[str, dict[str, str]]], base: str, gemm: list[str]) -> list[str]:
    """The report's table: one line per sampler other than *base*, and *base*'s own fractions."""
    if base not in rows:
        raise SystemExit(f"no sampler {base!r} in the summary; it has {', '.join(sorted(rows))}")
    tables = sorted(rows[base])
    gemm_tables = [t for t in tables if any(g in t for g in gemm)]

    def median(sampler: str, table: str) -> float:
        return float(rows[sampler][table]["compiles_1pct_median"] or "inf")

    def fraction(sampler: str, at: int) -> str:
        cells = [rows[sampler][t][f"fraction_mean_at_{at}"] for t in gemm_tables]
        if not cells or not all(cells):  # no GEMM table, or a run shorter than *at* compiles
            return "-"
        return f"{statistics.mean(float(c) for c in cells):.3f}"

    def reached(sampler: str) -> str:
        """The share of all the sampler's runs, over the tables, that reached 1% within the budget."""
        cells = [rows[sampler][t] for t in tables]
        runs = sum(int(c["runs"]) for c in cells)
        return f"{sum(float(c['compiles_1pct_success']) * int(c['runs']) for c in cells) / runs:.1%}"

    lines = [f"| sampler | tables | fewer compiles to 1% than {base} | more | same | sign test p | "
             f"runs reaching 1% | GEMM tables | mean fraction at 50 | at 200 |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
             f"| {base} | {len(tables)} | - | - | - | - | {reached(base)} | {len(gemm_tables)} | "
             f"{fraction(base, 50)} | {fraction(base, 200)} |"]
    for sampler in sorted(set(rows) - {base}):
        missing = sorted(set(tables) - set(rows[sampler]))
        if missing:
            raise SystemExit(f"{sampler} did not run on {', '.join(missing)}")
        pairs = [(median(sampler, t), median(base, t)) for t in tables]
        lower, higher = sum(a < b for a, b in pairs), sum(a > b for a, b in pairs)
        p = binomtest(lower, lower + higher).pvalue if lower + higher else 1.0
        lines.append(f"| {sampler} | {len(tables)} | {lower} | {higher} | {len(tables) - lower - higher} | "
                     f"{p:.2f} | {reached(sampler)} | {len(gemm_tables)} | {fraction(sampler, 50)} | "
                     f"{fraction(sampler, 200)} |")
    return lines


def main() -> None:
    args = parse_summaries(__doc__.splitlines()[0], "a flysearch compare run's summary.csv",
                           "the sampler the others are set against",
                           "a string that names a GEMM table (repeatable)")
    lines = compare(table_rows(*args.summary), args.base, args.gemm)
    intro = ("Per table, each variant's median compiles to within 1% against the base's (a run that "
             "never got there counts as more than the budget); the sign test leaves ties out. Fractions: "
             "the mean over the GEMM tables of each table's mean fraction of the optimum reached.")
    write_report(ROOT, f"Variants of `{args.base}` against it: {summary_names(ROOT, args.summary)}", intro,
                 lines, args.out)


if __name__ == "__main__":
    main()
