"""The report of ``lab/benchmarks/autotune_examples.py``: what the decorator found and what it cost,
against the exhaustive race, from the files a device run brought back (no GPU needed).

Reads RUNS/{cold,warm,dispatch,final,baseline_cold,baseline_warm}.json, RUNS/cold.db (the cold run's
store: each tuned key's study, in compile order) and RACES/*.table.json.gz, and writes one Markdown
file. Every figure is computed here from those files.
"""

from __future__ import annotations

import json
import statistics
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _load(path: Path) -> Any:
    return json.loads(path.read_text()) if path.exists() else None


def _read(path: Path) -> str:
    return path.read_text().strip() if path.exists() else "?"


def _tables(races: Path) -> dict[tuple[str, str], Any]:
    from flysearch.tables import GroundTruth, read_table_file

    out = {}
    for path in sorted(races.glob("*__*.table.json.gz")):
        example, key = path.name.removesuffix(".table.json.gz").split("__", 1)
        meta, rows = read_table_file(path)
        out[(example, key)] = GroundTruth(meta, {r.key: r for r in rows})
    return out


def _race_ms(table: Any) -> dict[str, float]:
    """Each correct config's race time, its re-timed median where the race re-timed it."""
    retimed = table.retimed_ms()
    return {r.key: retimed.get(r.key, r.time_ms) for r in table.ok_rows()}


def compiles_to_within(
    store: Path, kernel_name: str, key: str, times: Mapping[str, float], eps: float
) -> int | None:
    """The compile index at which the cold run's study of *key* first compiled a config whose race
    time is within *eps* of the race's optimum (``None``: never)."""
    import optuna

    from flysearch.study import trial_records
    from flysearch.tune import Tuner, TuneStore, store_url

    best = min(times.values())
    tuned = [t for t in TuneStore(store_url(store)).tuned(name=kernel_name) if t.key == key]
    if not tuned:
        return None
    study = optuna.load_study(study_name=Tuner.study_name(tuned[0].kernel, key), storage=f"sqlite:///{store}")
    for _t, r in sorted(trial_records(study), key=lambda tr: tr[1].compile_index or 0):
        if r.compile_index and r.key in times and times[r.key] <= best * (1 + eps):
            return r.compile_index
    return None


def _md_table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def write_report(races: Path, runs: Path, out: Path, commit: str = "") -> None:
    cold, warm = _load(runs / "cold.json"), _load(runs / "warm.json")
    dispatch, final = _load(runs / "dispatch.json"), _load(runs / "final.json")
    base_cold, base_warm = _load(runs / "baseline_cold.json"), _load(runs / "baseline_warm.json")
    tables = _tables(races)
    machine = (cold or {}).get("machine", {})
    lines = [
        "# flysearch.autotune on kernels flysearch does not ship",
        "",
        "- command: `python lab/benchmarks/autotune_examples.py report "
        f"--races {races} --runs {runs} --out {out}` over the files of the device run "
        "(`tune` cold and warm, `dispatch`, `baseline`, `race`, `final`:"
        " see the script's docstring)",
        f"- device run: `{_read(runs / 'command.txt')}`"
        " (its output: `runs/log.txt` beside it)",
        f"- commit: {commit or 'unknown'}",
        f"- hardware: {machine.get('device', '?')}, {machine.get('cpus', '?')} CPU cores; torch "
        f"{machine.get('torch', '?')}, Triton {machine.get('triton', '?')}, CUDA {machine.get('cuda', '?')}",
        f"- date: {machine.get('date', '?')}",
        "",
    ]
    # What the run covers, and what it does not.
    from autotune_examples import EXAMPLES, N_KEYS

    tuned_keys = [(r["example"], r["key"]) for r in (cold or {}).get("runs", [])]
    ran = sorted({e for e, _ in tuned_keys}, key=EXAMPLES.index)
    unraced = [f"{e} {k}" for e, k in tuned_keys if (e, k) not in tables]
    lines += [
        "## What this run covers",
        "",
        f"Kernels tuned: {', '.join(ran) or 'none'} ({len(tuned_keys)} keys); not run: "
        f"{', '.join(e for e in EXAMPLES if e not in ran) or 'none'} (each example has {N_KEYS} keys). "
        f"Tuned but not raced (the call's deadline): {', '.join(unraced) or 'none'}. "
        f"Warm-cache run: {'made' if warm else 'not made'}; triton.autotune warm: "
        f"{'made' if base_warm else 'not made'}.",
        "",
    ]
    # Quality: the winners against the race's re-timed top, re-timed together.
    pairs = (final or {}).get("pairs", [])
    rows, cold_ratios = [], []
    by_key = {(r["example"], r["key"]): r for r in (cold or {}).get("runs", [])}
    warm_by_key = {(r["example"], r["key"]): r for r in (warm or {}).get("runs", [])}
    first = {}
    for p in pairs:
        k = (p["example"], p["key"])
        run = by_key.get(k, {})
        report = run.get("report", {})
        table = tables.get(k)
        within1 = within5 = None
        if table is not None and (runs / "cold.db").exists():
            times = _race_ms(table)
            name = {"softmax": "softmax_kernel", "layernorm": "layernorm_kernel", "matmul": "matmul_kernel"}
            kernel = name.get(p["example"], p["example"])
            within1 = compiles_to_within(runs / "cold.db", kernel, p["key"], times, 0.01)
            within5 = compiles_to_within(runs / "cold.db", kernel, p["key"], times, 0.05)
        first[k] = within1
        cold_ratios.append(p.get("cold_ratio"))
        rows.append(
            [
                p["example"],
                p["key"],
                p["n_configs"],
                report.get("sampler", ""),
                report.get("compiles", ""),
                within1,
                within5,
                f"{p.get('cold_ratio', float('nan')):.4f}",
                f"{p['warm_ratio']:.4f}" if "warm_ratio" in p else "not run",
                run.get("wall_s", ""),
                warm_by_key.get(k, {}).get("wall_s", "not run"),
            ]
        )
    ok = [r for r in cold_ratios if r is not None]
    n1 = sum(r <= 1.01 for r in ok)
    n3 = sum(r <= 1.03 for r in ok)
    lines += [
        "## Winners against the exhaustive race",
        "",
        f"Each (kernel, key): the cold run's and the warm run's winners and the race's three best configs, "
        f"re-timed together in {(final or {}).get('rounds', '?')} interleaved rounds; the ratio is a "
        "winner's median over the best of the race's. *to 1%* / *to 5%*: the compile at which the cold "
        "run's study first compiled a config whose race time is within 1% / 5% of the race's optimum.",
        "",
        f"**Within 1%: {n1} of {len(ok)} pairs; within 3%: {n3} of {len(ok)}** (target: 90% within 1%, all "
        "within 3%).",
        "",
        *_md_table(
            [
                "kernel",
                "key",
                "feasible",
                "sampler",
                "compiles",
                "to 1%",
                "to 5%",
                "cold / race",
                "warm / race",
                "cold wall s",
                "warm wall s",
            ],
            rows,
        ),
        "",
    ]
    # Transfer: keys tuned with a prior.
    transfer = [
        first[(r["example"], r["key"])]
        for r in (cold or {}).get("runs", [])
        if r["report"].get("sampler") == "costmodel" and (r["example"], r["key"]) in first
    ]
    reached = [c for c in transfer if c is not None]
    if transfer:
        med = statistics.median([c if c is not None else float("inf") for c in transfer])
        lines += [
            "## Learning across keys",
            "",
            f"Keys tuned with a prior trained on the kernel's earlier keys: {len(transfer)}; they reach "
            f"1% of the race's optimum in a median of **{med} compiles** ({len(reached)} of {len(transfer)} "
            "within their budget; target: a median of at most 3).",
            "",
        ]
    # Wall clock against triton.autotune.
    if base_cold:
        lines += [
            "## Wall clock against triton.autotune",
            "",
            "triton.autotune was run over a random subset of each kernel's first key's feasible configs, "
            "with an empty Triton cache (cold) and again in a new process with the cache it filled (warm); "
            "its cost over the whole feasible list is estimated as the subset's seconds per config times "
            "the feasible configs of each key. flysearch's figure is measured: the decorator's tuning of "
            "that key, compiles and finalists' rounds included.",
            "",
        ]
        per = {r["example"]: r for r in base_cold["runs"]}
        per_warm = {r["example"]: r for r in (base_warm or {}).get("runs", [])}
        wrows, ratios_c, ratios_w = [], [], []
        for p in pairs:
            k = (p["example"], p["key"])
            if p["example"] not in per or k not in by_key:
                continue
            est_c = per[p["example"]]["per_config_s"] * p["n_configs"]
            est_w = per_warm.get(p["example"], {}).get("per_config_s", float("nan")) * p["n_configs"]
            rc = by_key[k]["wall_s"] / est_c
            rw = warm_by_key.get(k, {}).get("wall_s", float("nan")) / est_w
            ratios_c.append(rc)
            ratios_w.append(rw)
            wrows.append(
                [
                    p["example"],
                    p["key"],
                    f"{by_key[k]['wall_s']:.1f}",
                    f"{est_c:.0f}",
                    f"{rc:.3f}",
                    f"{warm_by_key.get(k, {}).get('wall_s', float('nan')):.1f}",
                    f"{est_w:.0f}",
                    f"{rw:.3f}",
                ]
            )
        lines += [
            f"Median ratio, cold: **{statistics.median(ratios_c):.3f}**, max {max(ratios_c):.3f}; warm: "
            + (f"**{statistics.median(ratios_w):.3f}**, max {max(ratios_w):.3f}" if base_warm and warm
               else "not run")
            + " (target: at most 0.10).",
            "",
            *_md_table(
                [
                    "kernel",
                    "key",
                    "flysearch cold s",
                    "triton.autotune cold s (est.)",
                    "ratio",
                    "flysearch warm s",
                    "triton.autotune warm s (est.)",
                    "ratio",
                ],
                wrows,
            ),
            "",
            "Measured triton.autotune subsets:",
            "",
            *_md_table(
                ["kernel", "key", "configs", "cold s", "cold s/config", "warm s", "warm s/config"],
                [
                    [
                        r["example"],
                        r["key"],
                        r["configs"],
                        r["wall_s"],
                        r["per_config_s"],
                        per_warm.get(r["example"], {}).get("wall_s", ""),
                        per_warm.get(r["example"], {}).get("per_config_s", ""),
                    ]
                    for r in base_cold["runs"]
                ],
            ),
            "",
        ]
    if dispatch:
        tunes = sum(k["tunes"] for k in dispatch["keys"])
        wrong = sum(not k["right"] for k in dispatch["keys"])
        lines += [
            "## A second process",
            "",
            f"A new process with the cold run's store called every key: **{tunes} tunes** (target 0), "
            f"{wrong} wrong outputs. The decorator's cost per call over launching the chosen config "
            "directly (host time, median of interleaved rounds of "
            f"{dispatch['overhead'][0]['calls'] if dispatch['overhead'] else '?'} calls):",
            "",
            *_md_table(
                ["kernel", "key", "direct us", "autotune us", "overhead us"],
                [
                    [
                        o["example"],
                        o["key"],
                        f"{o['direct_us']:.2f}",
                        f"{o['autotune_us']:.2f}",
                        f"{o['overhead_us']:.2f}",
                    ]
                    for o in dispatch["overhead"]
                ],
            ),
            "",
        ]
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(out)


if __name__ == "__main__":
    from autotune_examples import main

    main(["report", *sys.argv[1:]])
