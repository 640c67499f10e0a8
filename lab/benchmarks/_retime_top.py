"""Result files of a top re-timing (``lab/benchmarks/retime_top.py``): does each table's optimum hold?

An exhaustive race times each config once. A re-timing of a table's top compiles the configs near
its best again and times each once per round, in a fresh order per round; its result file holds,
per table (``{"table": name, "configs": [...]}``) and config, the race's time (``race_ms``), every
round's time, their median (``median_ms``, ``None`` when the config failed or was not re-timed) and
their spread (``spread``, (max - min) / median).
These functions read such files: the keys within 1% of the re-timed best (:func:`retime_top_within`,
:func:`retime_top_keys`), the medians (:func:`retime_top_medians`), where the race's best lands
once re-timed (:func:`retime_top_summary`) and a markdown summary of a whole file
(:func:`retime_top_report`).

Example:
    >>> table = {"table": "t", "configs": [
    ...     {"key": "a", "race_ms": 1.0, "median_ms": 1.03, "spread": 0.01},
    ...     {"key": "b", "race_ms": 1.1, "median_ms": 1.0, "spread": 0.02}]}
    >>> retime_top_within(table), retime_top_summary(table)["place"]
    (['b'], 2)
"""

from __future__ import annotations

import json
import statistics
from pathlib import Path
from typing import Any

__all__ = ["retime_top_keys", "retime_top_medians", "retime_top_report", "retime_top_summary",
           "retime_top_within"]


def retime_top_within(table: dict[str, Any], eps: float = 0.01) -> list[str]:
    """The keys of one result-file table's configs whose re-timed median is within *eps* of the
    re-timed best (the table's 1% set by the better measurement; empty if nothing was re-timed)."""
    timed = [c for c in table["configs"] if c["median_ms"]]
    best = min((c["median_ms"] for c in timed), default=0.0)
    return [c["key"] for c in timed if c["median_ms"] <= best * (1 + eps)]


def retime_top_keys(path: str | Path) -> dict[str, list[str]]:
    """Table name -> the keys within 1% of its re-timed optimum (:func:`retime_top_within`), from
    the result file at *path* (tables with nothing re-timed left out)."""
    tables = json.loads(Path(path).read_text())["tables"]
    return {table["table"]: keys for table in tables if (keys := retime_top_within(table))}


def retime_top_medians(path: Path) -> dict[str, dict[str, float]]:
    """Table name -> config key -> re-timed median (ms) of the result file at *path*, the configs
    without a median left out; empty when there is no such file."""
    if not path.is_file():
        return {}
    doc = json.loads(path.read_text())
    return {t["table"]: {c["key"]: c["median_ms"] for c in t["configs"] if c["median_ms"]}
            for t in doc["tables"]}


def retime_top_summary(table: dict[str, Any]) -> dict[str, Any] | None:
    """One table of a result file: where the race's best lands once re-timed (``place``, 1-based,
    and ``race_best_x``, its re-timed median over the re-timed best), the re-timed gap from the
    first to the second, how many configs are within 1% of the best by each measurement, every
    config's round spread, and the median race / re-timed ratio; ``None`` if nothing was re-timed."""
    timed = [c for c in table["configs"] if c["median_ms"]]
    if not timed:
        return None
    retimed = sorted(timed, key=lambda c: (c["median_ms"], c["key"]))
    race_best = min(timed, key=lambda c: (c["race_ms"], c["key"]))
    best = retimed[0]["median_ms"]
    return {
        "configs": len(timed),
        "place": [c["key"] for c in retimed].index(race_best["key"]) + 1,
        "race_best_x": race_best["median_ms"] / best,
        "gap": retimed[1]["median_ms"] / best - 1 if len(retimed) > 1 else float("nan"),
        "within_race": sum(c["race_ms"] <= race_best["race_ms"] * 1.01 for c in timed),
        "within_retimed": len(retime_top_within(table)),
        "spreads": [c["spread"] for c in timed],
        "scale": statistics.median(c["race_ms"] / c["median_ms"] for c in timed),
    }


def retime_top_report(doc: dict[str, Any]) -> str:
    """A markdown summary of a whole result file *doc*: does each table's optimum hold under
    re-timing? (Its header names the run: command, code commit, rounds, how many configs.)"""
    lines = [
        f"# The top of each H200 table re-timed: {doc['date']}, {doc['device']}",
        "",
        f"`{doc['command']}` (code {doc['code_commit']}; {doc['rounds']} interleaved rounds, the configs"
        f" within {doc['within']:.0%} of each table's best, {doc['min_k']} to {doc['max_k']} per table,"
        f" {doc['wall_s']} s). Regenerate this file with "
        "`python lab/benchmarks/retime_top.py --report FILE`.",
        "",
        "| table | configs | race's best, re-timed: place (x re-timed best) | re-timed gap to the 2nd |"
        " within 1%: race / re-timed | median round spread | scale (race / re-timed) |",
        "|---|---:|---|---:|---|---:|---:|",
    ]
    for t in doc["tables"]:
        row = retime_top_summary(t)
        if row is None:
            lines.append(f"| {t['table']} | 0 | no config re-timed | | | | |")
            continue
        lines.append(f"| {t['table']} | {row['configs']} | {row['place']} ({row['race_best_x']:.3f}) |"
                     f" {row['gap']:.1%} | {row['within_race']} / {row['within_retimed']} |"
                     f" {statistics.median(row['spreads']):.2%} | {row['scale']:.3f} |")
    return "\n".join(lines) + "\n"
