"""Summaries of a sampler comparison: per table and per (arch, regime) group, as markdown and CSV.

Rows are ``(level, where, sampler)``: ``level`` is ``"table"`` or ``"group"``. A group pools the runs
of its tables for the quantiles and success rates and averages its tables' performance scores (as
the autotuning methodology aggregates search spaces). Each table also gets a ``random (analytic)``
row: the expectation of random sampling without replacement over its feasible configs.
"""

from __future__ import annotations

import csv
import datetime as _dt
import math
from collections import Counter, defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from flysearch._atomicfile import atomic_write, write_text_atomic
from flysearch.compare._metrics import (
    CURVE_AT,
    EPSILONS,
    MILESTONES,
    QuantileStats,
    Trajectory,
    expected_draws,
    expected_seconds,
    performance_score,
    prob_found_within,
    quantile_stats,
)
from flysearch.compare._run import TableInfo
from flysearch.errors import FlysearchError, InputFormatError

__all__ = ["ANALYTIC", "experiment_summary", "fmt_csv", "summary_rows", "write_csv", "write_markdown"]

ANALYTIC = "random (analytic)"


def _eps_name(eps: float) -> str:
    return f"{round(eps * 100):d}pct"


_QUANTILES = ("median", "q25", "q75", "p90", "ci_low", "ci_high", "success")


def _stats_fields(prefix: str, s: QuantileStats) -> dict[str, float]:
    return {
        f"{prefix}_median": s.median,
        f"{prefix}_q25": s.q25,
        f"{prefix}_q75": s.q75,
        f"{prefix}_p90": s.p90,
        f"{prefix}_ci_low": s.ci_low,
        f"{prefix}_ci_high": s.ci_high,
        f"{prefix}_success": s.success,
    }


def _median(values: Sequence[float]) -> float:
    vals = sorted(v for v in values if not math.isnan(v))
    if not vals:
        return math.nan
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else 0.5 * (vals[mid - 1] + vals[mid])


def _mean(values: Sequence[float]) -> float:
    vals = [v for v in values if not math.isnan(v)]
    return sum(vals) / len(vals) if vals else math.nan


def _run_fields(runs: list[dict[str, Any]], optima: list[float], budget: int, seed: int) -> dict[str, Any]:
    """Quantiles over runs; ``optima[i]`` is the optimum run ``i`` is measured against."""
    trajs: list[Trajectory] = [r["trajectory"] for r in runs]
    out: dict[str, Any] = {"runs": len(runs)}
    for eps in EPSILONS:
        name = _eps_name(eps)
        compiles = [t.compiles_to(o * (1 + eps)) for t, o in zip(trajs, optima, strict=True)]
        seconds = [t.seconds_to(o * (1 + eps)) for t, o in zip(trajs, optima, strict=True)]
        out.update(_stats_fields(f"compiles_{name}", quantile_stats(compiles, seed=seed)))
        out.update(_stats_fields(f"seconds_{name}", quantile_stats(seconds, seed=seed)))
        # Warm-cache seconds, where every run recorded them (runs stored before did not: blank).
        if all(t.warm_recorded for t in trajs):
            warm = [t.warm_seconds_to(o * (1 + eps)) for t, o in zip(trajs, optima, strict=True)]
            out.update(_stats_fields(f"warm_seconds_{name}", quantile_stats(warm, seed=seed)))
        else:
            out.update({f"warm_seconds_{name}_{q}": math.nan for q in _QUANTILES})
    for k in sorted({*CURVE_AT, *MILESTONES}):
        if k <= budget:
            fractions = [t.fraction_at(k, o) for t, o in zip(trajs, optima, strict=True)]
            out[f"fraction_at_{k}"] = _median(fractions)
            # The mean too: Schoonhoven et al. (2022) and Kernel Tuner's studies report it.
            out[f"fraction_mean_at_{k}"] = _mean(fractions)
    out["best_over_optimum"] = _median(
        [
            o / t.best_at(budget) if not math.isnan(t.best_at(budget)) else 0.0
            for t, o in zip(trajs, optima, strict=True)
        ]
    )
    out["ms_per_trial"] = _median([float(r["ms_per_trial"]) for r in runs])
    out["trials"] = _median([float(r["trials"]) for r in runs])
    out["compiles"] = _median([float(r["compiles"]) for r in runs])
    return out


def _analytic_row(info: TableInfo, budget: int) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": 0}
    for eps in EPSILONS:
        name, target = _eps_name(eps), info.optimum_ms * (1 + eps) * (1 + 1e-9)
        good = [t is not None and t <= target for t in info.row_times]
        g, n = sum(good), len(info.row_times)
        if g == 0:
            out[f"compiles_{name}_median"] = math.inf
            out[f"compiles_{name}_success"] = 0.0
            continue
        out[f"compiles_{name}_mean"] = expected_draws(n, g)
        out[f"compiles_{name}_success"] = prob_found_within(n, g, budget)
        out[f"compiles_{name}_median"] = _analytic_median(n, g)
        bad_c = [c for c, ok in zip(info.costs, good, strict=True) if not ok]
        good_c = [c for c, ok in zip(info.costs, good, strict=True) if ok]
        out[f"seconds_{name}_mean"] = expected_seconds(bad_c, good_c)
        bad_w = [c for c, ok in zip(info.warm_costs, good, strict=True) if not ok]
        good_w = [c for c, ok in zip(info.warm_costs, good, strict=True) if ok]
        out[f"warm_seconds_{name}_mean"] = expected_seconds(bad_w, good_w)
    return out


def _analytic_median(n: int, g: int) -> float:
    """Smallest k with P(found within k) >= 1/2."""
    lo, hi = 1, n - g + 1
    while lo < hi:
        mid = (lo + hi) // 2
        if prob_found_within(n, g, mid) >= 0.5:
            hi = mid
        else:
            lo = mid + 1
    return float(lo)


def summary_rows(
    runs: list[dict[str, Any]], infos: list[TableInfo], budget: int, *, seed: int = 0
) -> list[dict[str, Any]]:
    """Summary rows per table and per group, each sampler plus the analytic random reference."""
    by_label = {i.label: i for i in infos}
    by_table: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in runs:
        if r["table_label"] in by_label:
            by_table[(r["table_label"], r["sampler"])].append(r)
    samplers = sorted({s for _t, s in by_table}, key=lambda s: [x["sampler"] for x in runs].index(s))
    rows, scores = [], {}
    for info in infos:
        for sampler in samplers:
            rs = by_table.get((info.label, sampler), [])
            if not rs:
                continue
            row = {"level": "table", "where": info.label, "group": info.group, "sampler": sampler}
            row.update(_run_fields(rs, [info.optimum_ms] * len(rs), budget, seed))
            row["score"] = scores[(info.label, sampler)] = performance_score(
                [r["trajectory"] for r in rs], info.ok_times, budget
            )
            rows.append(row)
        row = {"level": "table", "where": info.label, "group": info.group, "sampler": ANALYTIC}
        row.update(_analytic_row(info, budget))
        rows.append(row)
    for group in sorted({i.group for i in infos}):
        members = [i for i in infos if i.group == group]
        for sampler in samplers:
            rs, optima, member_scores = [], [], []
            for info in members:
                these = by_table.get((info.label, sampler), [])
                rs += these
                optima += [info.optimum_ms] * len(these)
                if these:
                    member_scores.append(scores[(info.label, sampler)])
            if not rs:
                continue
            row = {
                "level": "group",
                "where": group,
                "group": group,
                "sampler": sampler,
                "tables": len(member_scores),
            }
            row.update(_run_fields(rs, optima, budget, seed))
            row["score"] = sum(member_scores) / len(member_scores)
            rows.append(row)
    return rows


def write_csv(rows: list[dict[str, Any]], path: str | Path) -> Path:
    """Write the summary rows as CSV (one column per metric, blank where a row has none)."""
    columns: list[str] = []
    for r in rows:
        columns += [k for k in r if k not in columns]
    path = Path(path)
    with atomic_write(path, newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns)
        writer.writeheader()
        for r in rows:
            writer.writerow({k: fmt_csv(r.get(k)) for k in columns})
    return path


def fmt_csv(value: Any) -> Any:
    """*value* as :func:`write_csv` writes it: a float to 6 significant digits, NaN blank, an
    infinity ``"inf"``; anything else unchanged."""
    if isinstance(value, float):
        if math.isnan(value):
            return ""
        return "inf" if math.isinf(value) else f"{value:.6g}"
    return value


def _n(value: Any, digits: int = 0) -> str:
    """*value* with *digits* decimals; a count (``digits=0``) that is a median of an even number of
    runs keeps its half (``2.5``, not ``2``)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float) and math.isinf(value):
        return ">B"
    if digits == 0 and isinstance(value, float) and not value.is_integer():
        return f"{value:.1f}"
    return f"{value:.{digits}f}"


def _pct(value: Any) -> str:
    return "–" if value is None or math.isnan(value) else f"{100 * value:.0f}%"


def _line(r: dict[str, Any], budget: int) -> str:
    one = "compiles_1pct"
    if r["sampler"] == ANALYTIC:
        cells = [
            f"**{ANALYTIC}**",
            f"{_n(r.get(one + '_median'))} (mean {_n(r.get(one + '_mean'), 1)})",
            "",
            "",
            _pct(r.get(one + "_success")),
        ] + [_n(r.get(f"compiles_{_eps_name(e)}_mean"), 1) for e in (0.0, 0.02, 0.05)]
        seconds = [_n(r.get(f"{kind}seconds_{e}pct_mean"), 1) for kind in ("", "warm_") for e in (1, 5)]
        cells += ["", "", *seconds, "", ""]
        return "| " + " | ".join(cells) + " |"
    ci = f"[{_n(r[one + '_ci_low'])}, {_n(r[one + '_ci_high'])}]"
    cells = [
        r["sampler"],
        f"**{_n(r[one + '_median'])}** {ci}",
        f"{_n(r[one + '_q25'])}–{_n(r[one + '_q75'])}",
        _n(r[one + "_p90"]),
        _pct(r[one + "_success"]),
    ] + [
        f"{_n(r[f'compiles_{_eps_name(e)}_median'])} ({_pct(r[f'compiles_{_eps_name(e)}_success'])})"
        for e in (0.0, 0.02, 0.05)
    ]
    fractions = "/".join(f"{r[f'fraction_at_{k}']:.3f}" for k in MILESTONES if f"fraction_at_{k}" in r)
    cells += [
        fractions,
        _n(r.get("score"), 3),
        *(_n(r[f"{kind}seconds_{e}pct_median"], 1) for kind in ("", "warm_") for e in (1, 5)),
        _n(r["ms_per_trial"], 1),
        _n(r["compiles"]),
    ]
    return "| " + " | ".join(cells) + " |"


_HEADER = (
    "| sampler | compiles to 1%: median [95% CI] | IQR | p90 | success ≤ B | to 0% (succ.) | to 2% (succ.) "
    "| to 5% (succ.) | fraction of optimum at {ks} | score | cold s to 1% | cold s to 5% | warm s to 1% "
    "| warm s to 5% | ms/trial | compiles used |\n"
    "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
)


def write_markdown(
    rows: list[dict[str, Any]],
    infos: list[TableInfo],
    path: str | Path,
    *,
    title: str,
    budget: int,
    seeds: str,
    command: str,
    notes: Sequence[str] = (),
    versions: dict[str, str] | None = None,
    provenance: Sequence[str] = (),
) -> Path:
    """Write the summary as markdown: its provenance, the tables measured, then one table per group
    and per table."""
    ks = "/".join(str(k) for k in MILESTONES if k <= budget)
    today = _dt.date.today().isoformat()
    vers = ", ".join(f"{k} {v}" for k, v in (versions or {}).items())
    lines = [
        f"# {title}",
        "",
        *(f"- {line}" for line in provenance),
        *([""] if provenance else []),
        f"Replayed {today} ({vers}); budget B = {budget} unique compiles; {seeds}. "
        f"Regenerate: `{command}`.",
        "",
        "Medians count unique compiles until the best time found is within 1% of the table optimum; "
        "a run that never gets there within B is censored (`>B`), so a median of `>B` means fewer than "
        "half the seeds succeeded. CI: seeded bootstrap (2000 resamples) of the median. Score: "
        "Willemsen et al. (2024) performance score relative to random search over compiles 1..B "
        "(0 = random search, 1 = optimum). `random (analytic)`: random sampling without replacement "
        "(median draws, mean (n+1)/(g+1); the to-0/2/5% columns give the means). `compiles used` and "
        "`ms/trial`: what the runs actually spent; a run stops once it has found the best config of its "
        "space (`stop_at_optimum`), which changes no other column. Seconds to 1%/5% (medians): with a "
        "cold compile cache, every config compiled until then costs its compile seconds (as the race "
        "measured them) plus its timing seconds; with a warm cache, its timing seconds only (Triton "
        "reuses a compiled binary across shapes, so warm is the realistic case for a Triton kernel; "
        "FlyDSL's binaries are shape-specialised, so cold is the case for FlyDSL); `–` where the runs "
        "were stored before flysearch recorded warm seconds.",
        "",
        "## Tables",
        "",
        "| table | group | device | measured | feasible | ok | optimum ms | space opt. / opt. | source |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for i in infos:
        lines.append(
            f"| {i.label} | {i.group} | {i.device} | {i.date} | {i.n_feasible} | {i.n_ok} | "
            f"{i.optimum_ms:.5g} | {i.space_optimum_ms / i.optimum_ms:.4f} | {i.source} |"
        )
    lines += [""] + [f"- {n}" for n in notes] + ([""] if notes else [])
    for level, heading in (("group", "Per group"), ("table", "Per table")):
        lines += [f"## {heading}", ""]
        for where in dict.fromkeys(r["where"] for r in rows if r["level"] == level):
            lines += [f"### {where}", "", _HEADER.format(ks=ks)]
            lines += [_line(r, budget) for r in rows if r["level"] == level and r["where"] == where]
            lines.append("")
    path = Path(path)
    write_text_atomic(path, "\n".join(lines))
    return path


# -- an experiment's outputs ------------------------------------------------------------------------


def experiment_summary(exp: Any) -> list[dict[str, Any]]:
    """The summary rows of a finished (or partial) experiment, as ``summary.csv`` holds them: per
    table and per group, each sampler plus the analytic random reference."""
    from flysearch.compare._run import RESULTS_DB, load_runs, load_table_infos

    infos = load_table_infos(exp)
    return summary_rows(_asked_for(load_runs(Path(exp.output) / RESULTS_DB), exp, infos), infos, exp.budget)


def report_experiment(exp: Any, *, plots: bool = True, command: str = "") -> list[Path]:
    """Write ``summary.md``, ``summary.csv`` and the figures of a finished (or partial) experiment."""
    from flysearch.compare._run import RESULTS_DB, load_runs, load_table_infos, model_samplers_available

    out = Path(exp.output)
    infos = load_table_infos(exp)
    runs = _asked_for(load_runs(out / RESULTS_DB), exp, infos)
    versions = _versions_of(runs)
    rows = summary_rows(runs, infos, exp.budget)
    notes = []
    missing = model_samplers_available()
    if missing and any(s.name in ("costmodel", "surrogate") for s in exp.samplers):
        notes.append(missing + ".")
    if exp.times == "retimed":
        notes.append(
            f"Noise-aware times: {sum(i.n_retimed > 0 for i in infos)} of {len(infos)} tables were re-timed "
            f"({sum(i.n_retimed for i in infos)} configs); a re-timed config answers with its median over "
            "the rounds, every other config with its race time, so the optima and the 1% and 2% sets "
            "are the re-timed ones."
        )
    if not exp.prior_on_tables and any(s.needs_prior for s in exp.samplers):
        notes.append("costmodel's prior (and the lists of fixed-list, decision-tree and winners-first) "
                     "trains on the [[prior_table]] entries only, never on a table of this experiment.")
    command = command or f"flysearch compare {exp.name}"
    written = [
        write_csv(rows, out / "summary.csv"),
        write_markdown(
            rows,
            infos,
            out / "summary.md",
            title=exp.title or f"Sampler comparison: {exp.name}",
            budget=exp.budget,
            seeds=_seeds_phrase(exp),
            command=command,
            notes=notes,
            versions=versions,
            provenance=provenance_lines(runs, command, out),
        ),
    ]
    if plots:
        from flysearch.compare._plots import plot_boxes, plot_curves

        for info in infos:
            written += plot_curves(runs, info, exp.budget, out, versions)
        for group in dict.fromkeys(i.group for i in infos):
            written += plot_boxes(runs, infos, group, exp.budget, out, versions)
    return written


def _asked_for(runs: list[dict[str, Any]], exp: Any, infos: list[TableInfo]) -> list[dict[str, Any]]:
    """The stored *runs* of *exp*'s tables, samplers, seeds and budget: a folder that a run with
    other overrides (``--seeds``, ``--budget``, ...) also wrote into holds others, which would mix
    into the summary.

    Raises:
        FlysearchError: none of the stored runs is one of them.
    """
    tables = {i.label for i in infos}
    seeds = {s.label: set(exp.seeds if s.seeds is None else s.seeds) for s in exp.samplers}
    kept = [r for r in runs if r["table_label"] in tables and r["budget"] == exp.budget
            and r["seed"] in seeds.get(r["sampler"], ())]
    if runs and not kept:
        raise FlysearchError(
            f"None of the {len(runs)} runs stored in {Path(exp.output)} has these tables, samplers, seeds "
            "and budget; run them first (without --report-only), or give the overrides they were run with."
        )
    return kept


def _seeds_phrase(exp: Any) -> str:
    """The experiment's seeds per sampler: ``"20 seeds per sampler"``, or ``"20 seeds per sampler;
    10 for kt:pso, kt:mls"`` when some samplers run other seeds (a sampler's own ``seeds``)."""
    other: dict[int, list[str]] = {}
    for s in exp.samplers:
        if s.seeds is not None and len(s.seeds) != len(exp.seeds):
            other.setdefault(len(s.seeds), []).append(s.label)
    extra = "".join(f"; {n} for {', '.join(labels)}" for n, labels in other.items())
    return f"{len(exp.seeds)} seeds per sampler{extra}"


def provenance_lines(runs: list[dict[str, Any]], command: str, output: Path | None = None) -> list[str]:
    """The summary's opening lines: the command, the commit and machine of the runs (as each run
    recorded them; runs stored before flysearch recorded them count as not recorded) and of this
    report (its *output* folder's files aside), and the dates."""
    from flysearch.compare._provenance import code_commit, host_description

    def tally(key: str) -> str:
        counts = Counter(r.get(key) or "not recorded" for r in runs)
        return "; ".join(f"{v} ({n} runs)" if len(counts) > 1 else v for v, n in counts.items()) or "no runs"

    finished = sorted(str(r["finished"])[:10] for r in runs if r.get("finished"))
    days = "-" if not finished else finished[0] if finished[0] == finished[-1] else \
        f"{finished[0]} to {finished[-1]}"
    report_commit = code_commit(Path(__file__).resolve().parents[2],
                                outputs=[output.resolve()] if output else []) or "not a git checkout"
    return [f"command: `{command}`",
            f"commit: the runs {tally('commit')}; this report {report_commit}",
            f"hardware: the runs {tally('host')}; this report {host_description()}",
            f"date: the runs {days}; this report {_dt.date.today().isoformat()}"]


def _versions_of(runs: list[dict[str, Any]]) -> dict[str, str]:
    import json

    for r in runs:
        if r.get("versions"):
            return dict(json.loads(r["versions"]))
    return {}


def key_mistake(exp: Any, *, plots: bool = True, command: str = "") -> list[Path]:
    """The key-mistake experiment: run each table's winner on every other table of the same kernel.

    When M (or any dimension) is missing from the autotune key, the config tuned for the first shape
    seen serves every shape; the matrix gives the slowdown of each such choice, per kernel family.
    """
    import numpy as np

    from flysearch.compare._metrics import transfer_matrix
    from flysearch.compare._run import load_table

    tables = [load_table(spec, exp.db) for spec in exp.tables]
    kernels = Counter(t.meta.kernel for t in tables)
    if max(kernels.values()) < 2:
        raise InputFormatError(
            f"Experiment {exp.name!r} has one table per kernel ({', '.join(kernels)}); a key mistake runs "
            "one table's winner on another table of its kernel, so name at least two of one kernel."
        )
    out = Path(exp.output)
    out.mkdir(parents=True, exist_ok=True)
    command = command or f"flysearch compare {exp.name}"
    lines = [
        f"# {exp.title or 'Key mistake: ' + exp.name}",
        "",
        f"Computed {_dt.date.today()} from the tables alone (no search). Regenerate: `{command}`.",
        "",
        "Row: the table (shape/device) a config was tuned on; column: where it runs. Cell: time of "
        "that config / the column's optimum. `not raced`: the config failed there or lies outside that "
        "table's pruned space, so its time is unknown (with M missing from the key it would still run "
        "there, at a cost these tables cannot tell). Geomean and worst are over the raced cells.",
        "",
    ]
    csv_rows, written = [], []
    for kernel in kernels:
        members = [t for t in tables if t.meta.kernel == kernel]
        if len(members) < 2:
            lines += [f"## {kernel}", "", f"Only one table ({members[0].name}): no other shape to run its "
                      "winner on.", ""]
            continue
        labels = [_short_label(t) for t in members]
        times = [{k: (r.time_ms if r.ok else None) for k, r in t.rows.items()} for t in members]
        m = transfer_matrix([t.best().key for t in members], times)
        lines += [
            f"## {kernel}",
            "",
            "| tuned on \\ runs on | " + " | ".join(labels) + " | geomean | worst |",
            "|---|" + "---|" * (len(labels) + 2),
        ]
        for i, label in enumerate(labels):
            off = [m[i, j] for j in range(len(labels)) if j != i]
            finite = [v for v in off if np.isfinite(v)]
            geo = float(np.exp(np.mean(np.log(finite)))) if finite else math.nan
            cells = ["not raced" if not np.isfinite(v) else f"{v:.2f}x" for v in m[i]]
            worst = max(finite, default=math.nan)
            lines.append(f"| {label} | " + " | ".join(cells) + f" | {_n(geo, 2)}x | {_n(worst, 2)}x |")
            csv_rows += [
                {"kernel": kernel, "tuned_on": label, "runs_on": labels[j], "slowdown": m[i, j]}
                for j in range(len(labels))
            ]
        lines.append("")
        if plots:
            from flysearch.compare._plots import plot_matrix, slug

            note = "data: " + "; ".join(
                f"{t.meta.source} on {t.meta.device} measured {t.meta.date}" for t in members
            )
            written += plot_matrix(
                labels,
                m,
                f"{kernel}: slowdown of another table's winner",
                out,
                f"key_mistake_{slug(kernel)}",
                note + f" — computed {_dt.date.today()}",
            )
    written.append(write_csv(csv_rows, out / "key_mistake.csv"))
    write_text_atomic(out / "key_mistake.md", "\n".join(lines))
    return [*written, out / "key_mistake.md"]


def _short_label(table: Any) -> str:
    shape = table.meta.shape()
    return f"{shape.M}x{shape.N}x{shape.K}" if shape is not None else table.meta.device
