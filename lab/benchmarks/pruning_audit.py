"""What a Triton family's analytic pruning throws away: race the unpruned space, then charge each rule.

    python lab/benchmarks/pruning_audit.py race --out lab/benchmarks/data/h200_unpruned \
        --workers 15                                                                      # on a GPU
    python lab/benchmarks/pruning_audit.py race --shapes lab/studies/shapes_h200_decode_dev.toml \
        --out lab/benchmarks/data/h200_unpruned_decode --workers 15                              # on a GPU
    python lab/benchmarks/pruning_audit.py race --family triton_gemm_splitk_fused \
        --out lab/benchmarks/data/h100_fused_unpruned --workers 15                               # on a GPU
    python lab/benchmarks/pruning_audit.py audit --out lab/benchmarks/results/pruning_audit.md
    python lab/benchmarks/pruning_audit.py audit --data lab/benchmarks/data/h100_fused_unpruned \
        --out lab/benchmarks/results/pruning_audit_fused.md

``race`` measures every config of the family's parameters (``--family``: the split-K family,
``triton_gemm_splitk``, by default, or the fused one, ``triton_gemm_splitk_fused``), with
``num_stages`` running to 5, and no constraint at all, on development shapes: by default four of
``studies/shapes_h200.toml`` (for split-K decode, small-M, prefill and square; for the fused family,
whose regimes are decode and K-heavy, two decode and two K-heavy shapes it raced), or every shape of
``--shapes``; it re-times each shape's top and dumps the tables (flysearch table files). Configs that
cannot run (too much shared memory) are recorded as failures.

``audit`` charges each of the family's constraints (the family is read from the tables), per table:
how many configs it rejects (and how many it is the first to reject), whether it rejects a config
within 1% of the unpruned optimum, and what the pruned space's optimum loses against the unpruned
one; and what leaving ``num_stages=5`` out would cost. Times are the race's, with the re-timed
medians of each top.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import glob
import json
import platform
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "lab" / "benchmarks"
sys.path.insert(0, str(ROOT))

from flysearch.compare import code_commit  # noqa: E402
from flysearch.kernels import get_space, table_kernel  # noqa: E402
from flysearch.space import Config, Constraint, Param, Space, get_arch, load_corpus  # noqa: E402
from flysearch.tables import GroundTruth, TableStore, dump_table_file, read_table_file  # noqa: E402

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

DATA = BENCHMARKS / "data" / "h200_unpruned"
DECODE_DATA = BENCHMARKS / "data" / "h200_unpruned_decode"
# The default shapes of each family's race, all of studies/shapes_h200.toml.
SHAPES = {
    "triton_gemm_splitk": ("l3-8b-qkv-m1", "l3-8b-qkv-m64", "l3-8b-qkv-m1024", "l3-8b-o-m4096"),
    "triton_gemm_splitk_fused": ("l3-8b-qkv-m1", "dsv3-kv_a-m4", "dsv3-q_a-m64", "dsv3-q_a-m256"),
}
UNPRUNED = "_unpruned"


def unpruned_space(family: str) -> Space:
    """*family*'s parameters with ``num_stages`` running to 5, and no constraint."""
    params = [p if p.name != "num_stages" else Param("num_stages", tuple(sorted({*p.values, 5})))
              for p in get_space(family).params]
    return Space(family + UNPRUNED, params, [])


def family_of(table: GroundTruth) -> str:
    """The family whose unpruned space *table* raced."""
    return str(table.meta.space["name"]).removesuffix(UNPRUNED)


def race(args: argparse.Namespace) -> None:
    from flysearch.race import RaceSettings, RaceShape, run_race

    if args.shapes is None:
        corpus = {e.name: e for e in load_corpus(ROOT / "studies" / "shapes_h200.toml")}
        shapes = [corpus[name] for name in SHAPES[args.family]]
    else:
        shapes = load_corpus(args.shapes)
    db = Path(args.db or tempfile.mkdtemp()) / "unpruned.db"
    store = TableStore(str(db))
    kernel = table_kernel(args.family) + UNPRUNED
    settings = RaceSettings(kernel=kernel, family=args.family, workers=args.workers,
                            cache_dir=args.cache_dir, deadline_s=args.deadline)
    race_shapes = [RaceShape(e.shape, e.name, e.model, e.layer) for e in shapes]
    report = run_race(unpruned_space(args.family), race_shapes, store, settings,
                      progress=lambda line: print(line, flush=True))
    args.out.mkdir(parents=True, exist_ok=True)
    for name in store.names():
        dump_table_file(store.load(name), args.out / (name.replace("/", "__") + ".table.json.gz"))
    (args.out / "race_report.json").write_text(json.dumps({
        "provenance": {"command": " ".join(["python", *sys.argv]),
                       "commit": code_commit(ROOT, outputs=[RESULTS]),
                       "device": report.device, "versions": report.versions,
                       "date": dt.date.today().isoformat()},
        "wall_s": round(report.wall_s, 1), "stopped": report.stopped, "compiles": report.compiles,
        "compile_failures": report.compile_failures, "tables": store.names(),
    }, indent=1) + "\n")


def _confirmed(table: GroundTruth) -> GroundTruth:
    rows = dict(table.rows)
    for key, ms in table.retimed_ms().items():
        rows[key] = dataclasses.replace(rows[key], time_ms=ms)
    return GroundTruth(table.meta, rows)


def _warps_fill_64x64(c: Config, shape: object, arch: object) -> bool:
    """``warps_fill_tile`` as it was before these races: 8 warps only for tiles of 64 x 64 or more."""
    return int(c["num_warps"]) <= 4 or int(c["BLOCK_M"]) * int(c["BLOCK_N"]) >= 64 * 64


# Rules charged beside the family's, each with the name the audit prints.
EARLIER = (Constraint("warps_fill_tile, earlier (64 x 64)", _warps_fill_64x64),)


def audit_table(table: GroundTruth) -> tuple[list[str], dict[str, str]]:
    """The per-rule lines of *table*'s audit, and its summary cells."""
    family = get_space(family_of(table))
    shape, arch = table.meta.shape(), get_arch(table.meta.arch or "sm_90")
    values = {p.name: set(p.values) for p in family.params}
    ok = table.ok_rows()
    best = min(r.time_ms for r in ok)
    near = [r for r in ok if r.time_ms <= best * 1.01]
    lines = []
    kept = []
    first_by: dict[str, int] = {c.name: 0 for c in family.constraints}
    for r in table.rows.values():
        config = Config.from_dict(r.params)
        failing = [c.name for c in family.constraints if not c(config, shape, arch)]
        if failing:
            first_by[failing[0]] += 1
        elif all(r.params[k] in v for k, v in values.items()) and r.ok:
            kept.append(r)
    for c in (*family.constraints, *EARLIER):
        rejects = [r for r in table.rows.values() if not c(Config.from_dict(r.params), shape, arch)]
        near_hit = [r for r in near if r in rejects]
        lost = f"{len(near_hit)} ({', '.join(sorted(r.key for r in near_hit)[:2])})" if near_hit else "0"
        lines.append(f"| {table.meta.shape().M}x{shape.N}x{shape.K} | {c.name} | {len(rejects)} | "
                     f"{first_by.get(c.name, '-')} | {lost} |")
    pruned_best = min(r.time_ms for r in kept)
    four = min(r.time_ms for r in ok if r.params["num_stages"] != 5)
    summary = {
        "shape": f"{shape.M}x{shape.N}x{shape.K}", "regime": shape.regime, "configs": str(len(table.rows)),
        "ran": str(len(ok)), "kept": str(len(kept)), "best": f"{best:.5f}",
        "pruned_loss": f"{100 * (pruned_best / best - 1):.2f}%",
        "stages5_loss": f"{100 * (four / best - 1):.2f}%",
        "near": str(len(near)), "near_kept": str(sum(r in kept for r in near)),
    }
    return lines, summary


def audit(args: argparse.Namespace) -> None:
    start = time.monotonic()
    tables, races = [], []
    for data in args.data:
        paths = sorted(glob.glob(str(data / "*.table.json.gz")))
        if not paths:
            sys.exit(f"no tables in {data}; race them first (see the docstring)")
        for path in paths:
            meta, rows = read_table_file(path)
            tables.append(_confirmed(GroundTruth(meta, {r.key: r for r in rows})))
        prov = json.loads((data / "race_report.json").read_text())["provenance"]
        where = data.resolve().relative_to(ROOT)
        races.append(f"`{where}/race_report.json`: `{prov['command']}`, {prov['date']}, "
                     f"{', '.join(f'{k} {v}' for k, v in prov['versions'].items())}")
    families = {family_of(t) for t in tables}
    devices = {t.meta.device for t in tables}
    if len(families) > 1 or len(devices) > 1:
        sys.exit(f"the tables mix families ({', '.join(sorted(families))}) or GPUs "
                 f"({', '.join(sorted(devices))}); audit one family on one GPU at a time")
    family, device = families.pop(), devices.pop()
    tables.sort(key=lambda t: (t.meta.shape().M, t.meta.shape().N, t.meta.shape().K))
    rule_lines, summaries = [], []
    for table in tables:
        lines, summary = audit_table(table)
        rule_lines += lines
        summaries.append(summary)
    out = [
        f"# What the `{family}` space's pruning throws away",
        "",
        f"- command: `{' '.join(['python', *sys.argv])}`",
        f"- commit: {code_commit(ROOT, outputs=[RESULTS])}",
        f"- hardware: {platform.machine()} CPU; the tables were raced on an {device} "
        f"({'; '.join(races)})",
        f"- versions: Python {platform.python_version()}, optuna {version('optuna')}",
        f"- date: {dt.date.today().isoformat()}",
        "",
        f"Every config of `{family}`'s value sets, with `num_stages` running to 5 and no "
        "constraint, raced on development shapes (times: the race's, the top re-timed in 10 "
        "interleaved rounds). *kept*: configs that run, pass every family rule and lie in the family's "
        "value sets; *pruned loss*: the pruned space's best against the unpruned best; *stages-5 loss*: "
        "the best config with num_stages <= 4 against the best.",
        "",
        "| shape | regime | configs | ran | kept | unpruned best ms | pruned loss | stages-5 loss | "
        "within 1% | of them kept |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|",
        *(f"| {s['shape']} | {s['regime']} | {s['configs']} | {s['ran']} | {s['kept']} | {s['best']} | "
          f"{s['pruned_loss']} | {s['stages5_loss']} | {s['near']} | {s['near_kept']} |" for s in summaries),
        "",
        "Per rule: configs it rejects, configs it is the first to reject (in the family's order), and the "
        "configs within 1% of the unpruned optimum it rejects (the first two named); *earlier* rows charge "
        "a rule as it stood before these races, for comparison.",
        "",
        "| shape | rule | rejects | first to reject | rejects within 1% |",
        "|---|---|---:|---:|---|",
        *rule_lines,
        "",
        f"({time.monotonic() - start:.0f} s)",
    ]
    args.out.write_text("\n".join(out) + "\n")
    print("\n".join(out))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("race", help="race the unpruned space on a GPU and dump the tables")
    r.add_argument("--family", choices=sorted(SHAPES), default="triton_gemm_splitk",
                   help="the Triton family whose unpruned space is raced")
    r.add_argument("--shapes", type=Path, default=None, help="shape corpus (default: 4 of shapes_h200)")
    r.add_argument("--out", type=Path, default=DATA)
    r.add_argument("--workers", type=int, default=None)
    r.add_argument("--cache-dir", default=None)
    r.add_argument("--deadline", type=float, default=None)
    r.add_argument("--db", default=None)
    a = sub.add_parser("audit", help="charge each rule (CPU)")
    a.add_argument("--data", type=Path, nargs="+", default=[DATA, DECODE_DATA])
    a.add_argument("--out", type=Path, default=BENCHMARKS / "results" / "pruning_audit.md")
    args = ap.parse_args()
    race(args) if args.command == "race" else audit(args)


if __name__ == "__main__":
    main()
