"""Live studies as separate commands, with and without a worker server: the result file's summary.

A served-study benchmark (``lab/benchmarks/live_served.py``) runs each (shape, budget, sampler) study
twice as its own command: ``own`` (the command starts its own GPU timer and compile processes) and
``served`` (it takes them, warm, from a worker server). Its result file holds one row per study
(``shape``, ``sampler``, ``budget``, ``mode``, the command's and the study's wall-clock, the
study's overhead, when its GPU was ready, the winner against the table's optimum).
:func:`served_summary` reduces the rows per mode and budget and pairs each served study with its
``own`` twin; :func:`served_report` writes a whole result file as markdown.
"""

from __future__ import annotations

import statistics
from typing import Any

__all__ = ["served_report", "served_summary"]

MODES = ("own", "served")


def _pairs(rows: list[dict[str, Any]]) -> dict[tuple[Any, ...], dict[str, dict[str, Any]]]:
    """The studies by (shape, budget, sampler), each with its row per mode (``own``, ``served``)."""
    out: dict[tuple[Any, ...], dict[str, dict[str, Any]]] = {}
    for r in rows:
        out.setdefault((r["shape"], r["budget"], r["sampler"]), {})[r["mode"]] = r
    return out


def served_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per mode and budget (``"<mode>_<budget>"``): the studies, the median and range of the
    overhead, the latest GPU readiness, the median command and study wall-clock; per budget
    (``"command_wall_ratio_<budget>"``): the median over pairs of a served command's wall-clock
    over its ``own`` twin's."""
    out: dict[str, Any] = {}
    for budget in sorted({r["budget"] for r in rows}):
        for mode in MODES:
            sel = [r for r in rows if r["budget"] == budget and r["mode"] == mode]
            if not sel:
                continue
            ov = [r["overhead"] for r in sel]
            out[f"{mode}_{budget}"] = {
                "studies": len(sel), "overhead_median": statistics.median(ov), "overhead_min": min(ov),
                "overhead_max": max(ov), "timer_ready_s_max": max(r["timer_ready_s"] for r in sel),
                "command_wall_s_median": statistics.median(r["command_wall_s"] for r in sel),
                "wall_s_median": statistics.median(r["wall_s"] for r in sel),
            }
        ratios = [m["served"]["command_wall_s"] / m["own"]["command_wall_s"]
                  for (_shape, b, _sampler), m in _pairs(rows).items()
                  if b == budget and {"own", "served"} <= set(m)]
        if ratios:
            out[f"command_wall_ratio_{budget}"] = statistics.median(ratios)
    return out


def _winner_ratio(r: dict[str, Any]) -> str:
    x = r.get("winner_vs_optimum_in_table")
    return f"{x:.3f}" if x is not None else "-"


def served_report(doc: dict[str, Any]) -> str:
    """A markdown summary of a result file *doc*: per study, the command with its own processes
    against the command served by the worker server (studies without both are left out), then the
    overhead ranges per budget and the files the server compiled into its own cache."""
    out = [
        f"# Live studies as separate commands, with and without a worker server ({doc['date']})",
        "",
        f"`{doc['command']}` (commit {doc.get('code_commit', '?')}; {doc['evaluator']} evaluator, "
        f"{doc['compile_workers']} compile processes, {doc['cpus']} CPUs; the server was warm after "
        f"{doc['server_warm_s']} s). Regenerate this file with `python lab/benchmarks/live_served.py "
        "--report FILE`.",
        "",
        "| shape | sampler | budget | command s: own | served | study s: own | served | overhead: own "
        "| served | GPU ready s: own | served | winner / optimum: own | served |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (shape, budget, sampler), by_mode in sorted(_pairs(doc["studies"]).items()):
        o, s = by_mode.get("own"), by_mode.get("served")
        if o is None or s is None:
            continue
        out.append(
            f"| {shape} | {sampler} | {budget} | {o['command_wall_s']:.1f} | {s['command_wall_s']:.1f} | "
            f"{o['wall_s']:.1f} | {s['wall_s']:.1f} | "
            f"{100 * o['overhead']:.1f}% | {100 * s['overhead']:.1f}% | "
            f"{o['timer_ready_s']:.1f} | {s['timer_ready_s']:.3f} | "
            f"{_winner_ratio(o)} | {_winner_ratio(s)} |")
    out.append("")
    summary = served_summary(doc["studies"])
    for budget in sorted({r["budget"] for r in doc["studies"]}):
        parts = []
        for mode in MODES:
            m = summary.get(f"{mode}_{budget}")
            if m:
                parts.append(f"{mode} {100 * m['overhead_min']:.1f}-{100 * m['overhead_max']:.1f}% "
                             f"(median {100 * m['overhead_median']:.1f}%)")
        line = f"- Budget {budget}: overhead " + ", ".join(parts)
        if f"command_wall_ratio_{budget}" in summary:
            line += f"; served commands took {summary[f'command_wall_ratio_{budget}']:.2f}x as long (median)"
        out.append(line + ".")
    out.append(f"- Files compiled into the server's own cache: {doc.get('files_in_server_cache', '?')}.")
    return "\n".join(out) + "\n"
