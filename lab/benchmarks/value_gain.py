"""What one value of a kernel parameter buys: per raced table, the best config with the value and the
best without it, both from the same race (same session, same cuBLAS), re-timed where the race
re-timed its top.

    python lab/benchmarks/value_gain.py --data lab/benchmarks/data/h200_stages5 \\
        --data lab/benchmarks/data/h200_stages5_holdout --param num_stages --value 5 \\
        --out lab/benchmarks/results/splitk_stages5.md

A value earns its place in a family's value set when the best without it is measurably slower on
some shapes; comparing within one table, rather than against a table raced without the value in
another session, keeps session-to-session drift (a few percent on the H200) out of the answer.
"""

from __future__ import annotations

import argparse
import datetime as dt
import platform
import statistics
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from flysearch.compare import code_commit
from flysearch.race import vendor_ms
from flysearch.tables import GroundTruth, Row, read_table_file

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

ROOT = Path(__file__).resolve().parents[2]


def _value(text: str) -> Any:
    """The parameter value as the tables store it: an int where the text is one."""
    try:
        return int(text)
    except ValueError:
        return text


def _best(table: GroundTruth, keep: Any) -> tuple[float, Row] | None:
    """The fastest ok row that *keep* accepts, by the re-timed median where the top was re-timed."""
    retimed = table.retimed_ms()
    rows = [r for r in table.rows.values() if r.ok and keep(r)]
    if not rows:
        return None
    times = {r.key: retimed.get(r.key, r.time_ms) for r in rows}
    top = min(rows, key=lambda r: times[r.key])
    return times[top.key], top


def gains(folders: list[Path], param: str, value: Any) -> list[dict[str, Any]]:
    """One record per table of *folders* that raced *param* = *value*: the best with and without it."""
    out = []
    for folder in folders:
        for path in sorted(folder.glob("*.table.json.gz")):
            meta, rows = read_table_file(path)
            table = GroundTruth(meta, {r.key: r for r in rows})
            if not any(r.params.get(param) == value for r in rows):
                continue
            best = _best(table, lambda r: True)
            without = _best(table, lambda r: r.params.get(param) != value)
            if best is None or without is None:
                continue
            shape, vendor = meta.shape(), vendor_ms(meta)
            out.append({
                "folder": folder.name, "shape": f"{shape.M}x{shape.N}x{shape.K}", "regime": shape.regime,
                "best_ms": best[0], "without_ms": without[0], "best_value": best[1].params.get(param),
                "gain": without[0] / best[0] - 1.0, "vendor_ms": vendor,
            })
    return out


def _ratio(ms: float, vendor: float | None) -> str:
    return f"{ms / vendor:.3f}" if vendor else "-"


def report(records: list[dict[str, Any]], param: str, value: Any, command: str) -> str:
    lines = [
        f"# What `{param} = {value}` buys", "",
        f"- command: `{command}`",
        f"- commit: {code_commit(ROOT, outputs=[RESULTS])}",
        f"- hardware: tables raced on an NVIDIA H200 (see each folder's `race_report.json`); report on "
        f"{platform.machine()}",
        f"- date: {dt.date.today().isoformat()}", "",
        f"Per table, the best config and the best without `{param} = {value}`, both from the same race "
        "(re-timed medians where the race re-timed its top), and each against the cuBLAS time of that "
        f"session. *gain*: how much slower the best without `{param} = {value}` is.", "",
        f"| shape | regime | folder | best ms | its {param} | best without ms | gain | best / cuBLAS "
        "| without / cuBLAS |",
        "|---|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in sorted(records, key=lambda r: (r["regime"], r["folder"], r["shape"])):
        lines.append(
            f"| {r['shape']} | {r['regime']} | `{r['folder']}` | {r['best_ms']:.5f} | {r['best_value']} | "
            f"{r['without_ms']:.5f} | {100 * r['gain']:.2f}% | {_ratio(r['best_ms'], r['vendor_ms'])} | "
            f"{_ratio(r['without_ms'], r['vendor_ms'])} |"
        )
    by_regime: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in records:
        by_regime[r["regime"]].append(r)
        by_regime["all"].append(r)
    lines += ["", "Per regime:", "",
              f"| regime | tables | optimum at {value} | gain > 1% | median gain | largest gain "
              "| median best / cuBLAS | median without / cuBLAS |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for regime in sorted(by_regime, key=lambda g: (g == "all", g)):
        rs = by_regime[regime]
        with_v = [r["best_ms"] / r["vendor_ms"] for r in rs if r["vendor_ms"]]
        without_v = [r["without_ms"] / r["vendor_ms"] for r in rs if r["vendor_ms"]]
        lines.append(
            f"| {regime} | {len(rs)} | {sum(r['best_value'] == value for r in rs)} | "
            f"{sum(r['gain'] > 0.01 for r in rs)} | {100 * statistics.median(r['gain'] for r in rs):.2f}% | "
            f"{100 * max(r['gain'] for r in rs):.2f}% | "
            f"{statistics.median(with_v):.3f} | {statistics.median(without_v):.3f} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, action="append", required=True, help="folders of raced tables")
    ap.add_argument("--param", required=True)
    ap.add_argument("--value", required=True, type=_value)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    records = gains(args.data, args.param, args.value)
    if not records:
        ap.error(f"no table in --data raced {args.param} = {args.value}")
    text = report(records, args.param, args.value, " ".join(["python", *sys.argv]))
    args.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()
