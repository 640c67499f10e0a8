"""Users' own tables: race external-style Kernel Tuner caches on the H200, then reuse the cost model
on them through the documented import path.

    python lab/benchmarks/external_h200.py race --out lab/benchmarks/data/external_h200 \
        --workers 15                                                                    # on a GPU
    OMP_NUM_THREADS=1 python lab/benchmarks/external_h200.py eval \
        --out lab/benchmarks/results/external_h200.md
    OMP_NUM_THREADS=1 python lab/benchmarks/external_h200.py loo --regime decode \
        --out lab/benchmarks/results/external_h200_dev.md                                     # development

``race`` measures each shape of ``lab/studies/external_h200.toml`` (a test set: committed before it was
raced, never trained on) as a user of another tuner would: flysearch's split-K Triton GEMM over
another value grid (no 256-row or 256-deep tiles, no SPLIT_K 16, but num_stages up to 5, which
flysearch's space lacks) with only the shared-memory limit applied, and writes each table as a
Kernel Tuner cache whose parameters go by other names (BM, BN, BK, GM, SK). A config whose top time
was confirmed in interleaved rounds after the race carries that median as its time.

``eval`` imports every cache the documented way (``flysearch tables import FILE --shape
problem_size:MNK --kernel triton_gemm_splitk --arch sm_90 --rename BM=BLOCK_M,...``, here through
:func:`flysearch.tables.import_tables`), trains one prior on all committed H200 tables, the
unpruned development races and the external-style caches of ``EXTERNAL_TRAINING`` among them
(never the evaluated set), and runs the ``costmodel`` sampler for 5
seeds with a budget of 100 compiles per table, counting the compiles until a config within 1% (and
5%) of the table's own optimum is measured.
For contrast it reports the same tables imported with the shape and arch but no kernel family (the
prior guides, but does not walk its order, and no family constraint applies). About a minute on 2
cores.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import glob
import json
import platform
import statistics
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "lab" / "benchmarks"
sys.path.insert(0, str(ROOT))

from _costmodel_eval import evaluate_test_set  # noqa: E402

from flysearch.compare import code_commit  # noqa: E402
from flysearch.export import write_kernel_tuner_cache  # noqa: E402
from flysearch.space import REGIMES, Param, Space, load_corpus  # noqa: E402
from flysearch.tables import (  # noqa: E402
    Declaration,
    GroundTruth,
    TableStore,
    import_tables,
    read_table_file,
)

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

SHAPES = ROOT / "lab" / "studies" / "external_h200.toml"
DATA = BENCHMARKS / "data" / "external_h200"
TRAINING = ("h200", "h200_extra", "h200_extra2", "h200_holdout", "h200_holdout2")
# Development races over the unpruned value set (lab/benchmarks/pruning_audit.py): the only tables that
# measure what the family's rules once removed (8 warps on 16 x 64 and 16 x 128 tiles, num_stages 5).
UNPRUNED = ("h200_unpruned", "h200_unpruned_decode")
# External-style caches that train priors: the decode development races
# (lab/studies/external_h200_dev.toml) and the test sets already evaluated and reported (seen, so now
# development data). The set being evaluated is never among them.
EXTERNAL_TRAINING = ("external_h200", "external_h200_b", "external_h200_dev")
# flysearch's names -> the external tables' names.
EXTERNAL_NAMES = {"BLOCK_M": "BM", "BLOCK_N": "BN", "BLOCK_K": "BK", "GROUP_M": "GM", "SPLIT_K": "SK"}
EXTERNAL_GRID = (
    Param("BLOCK_M", (16, 32, 64, 128)),
    Param("BLOCK_N", (32, 64, 128, 256)),
    Param("BLOCK_K", (32, 64, 128)),
    Param("GROUP_M", (1, 8)),
    Param("SPLIT_K", (1, 2, 4, 8)),
    Param("num_warps", (4, 8)),
    Param("num_stages", (2, 3, 4, 5)),
)
# The documented import of an external cache: its shape from problem_size, the family, the arch and
# flysearch's names back.
DOCUMENTED = Declaration(shape_from="MNK", kernel="triton_gemm_splitk", arch="sm_90",
                         rename={v: k for k, v in EXTERNAL_NAMES.items()})
SEEDS = (0, 1, 2, 3, 4)
BUDGET = 100


def external_space() -> Space:
    """The external grid with only the hard limit a tuner of this kernel must apply."""
    from flysearch.kernels import get_space

    smem = next(c for c in get_space("triton_gemm_splitk").constraints if c.name == "smem_fits")
    return Space("external_splitk", list(EXTERNAL_GRID), [smem])


def race(args: argparse.Namespace) -> None:
    from flysearch.race import RaceSettings, RaceShape, run_race

    corpus = [e for e in load_corpus(args.shapes) if not args.only or e.name in args.only]
    db = Path(args.db or tempfile.mkdtemp()) / "external.db"
    store = TableStore(str(db))
    settings = RaceSettings(kernel="splitk_gemm", workers=args.workers, cache_dir=args.cache_dir,
                            deadline_s=args.deadline)
    start = time.monotonic()
    report = run_race(external_space(), [RaceShape(e.shape, e.name, e.model, e.layer) for e in corpus],
                      store, settings, progress=lambda line: print(line, flush=True))
    args.out.mkdir(parents=True, exist_ok=True)
    written = []
    by_shape = {n.rsplit("/", 1)[1]: n for n in store.names()}
    for entry in corpus:
        name = by_shape.get(f"{entry.shape.M}x{entry.shape.N}x{entry.shape.K}")
        if name is None:
            continue
        table = store.load(name)
        for key, ms in table.retimed_ms().items():  # the confirmed time of the re-timed top
            table.rows[key] = dataclasses.replace(table.rows[key], time_ms=ms)
        path = args.out / f"{entry.name}.json.gz"
        write_kernel_tuner_cache(table, path, rename=EXTERNAL_NAMES)
        written.append({"shape": entry.name, "table": name, "configs": len(table.rows),
                        "ok": sum(r.ok for r in table.rows.values()), "file": path.name})
    (args.out / "race_report.json").write_text(json.dumps({
        "provenance": {"command": " ".join(["python", *sys.argv]),
                       "commit": code_commit(ROOT, outputs=[RESULTS]),
                       "device": report.device, "versions": report.versions,
                       "date": dt.date.today().isoformat()},
        "wall_s": round(time.monotonic() - start, 1), "stopped": report.stopped,
        "compiles": report.compiles, "compile_failures": report.compile_failures, "tables": written,
    }, indent=1) + "\n")
    print(f"wrote {len(written)} caches to {args.out}")


def _training(evaluated: Path | None = None) -> list[GroundTruth]:
    """Every committed H200 table of the split-K kernel but those of the *evaluated* folder."""
    tables = []
    for folder in (*TRAINING, *UNPRUNED):
        for path in sorted(glob.glob(str(BENCHMARKS / "data" / folder / "*.table.json.gz"))):
            meta, rows = read_table_file(path)
            meta.kernel = "triton_gemm"  # the unpruned races measured the same kernel
            tables.append(GroundTruth(meta, {r.key: r for r in rows}))
    for folder in EXTERNAL_TRAINING:
        data = BENCHMARKS / "data" / folder
        if evaluated is not None and data.resolve() == evaluated.resolve():
            continue
        for table in _imported(sorted(glob.glob(str(data / "*.json.gz"))), DOCUMENTED):
            table.meta.kernel = "triton_gemm"
            tables.append(table)
    return tables


def _imported(files: list[str], declaration: Declaration) -> list[GroundTruth]:
    db = Path(tempfile.mkdtemp()) / "external.db"
    for file in files:  # one at a time: each cache declares its own shape from its problem_size
        import_tables([file], db=db, declaration=declaration)
    store = TableStore(str(db))
    return [store.load(n) for n in store.names()]


def _cell(runs: list[int | None]) -> str:
    return ", ".join("-" if r is None else str(r) for r in runs)


def _counted(runs: list[int | None]) -> list[int]:
    """Each run's compiles, a run that never got there counted as ``BUDGET + 1``."""
    return [BUDGET + 1 if r is None else r for r in runs]


def _median(runs: list[int | None]) -> str:
    m = statistics.median(_counted(runs))
    return f">{BUDGET}" if m > BUDGET else f"{m:g}"


def _provenance(hardware: str) -> list[str]:
    """A results file's provenance lines: command, commit, *hardware*, versions, date."""
    return [
        f"- command: `{' '.join(['python', *sys.argv])}`",
        f"- commit: {code_commit(ROOT, outputs=[RESULTS])}",
        f"- hardware: {platform.machine()} CPU; {hardware}",
        f"- versions: Python {platform.python_version()}, "
        + ", ".join(f"{p} {version(p)}" for p in ("scikit-learn", "numpy", "optuna")),
        f"- date: {dt.date.today().isoformat()}",
    ]


def _write(out: Path, lines: list[str]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def evaluate(args: argparse.Namespace) -> None:
    start = time.monotonic()
    files = sorted(glob.glob(str(args.data / "*.json.gz")))
    if not files:
        sys.exit(f"no Kernel Tuner caches in {args.data}; race them first (see the docstring)")
    train = _training(args.data)
    shape_only = dataclasses.replace(DOCUMENTED, kernel=None)
    results = {}
    for label, declaration in (("documented", DOCUMENTED), ("shape_only", shape_only)):
        tests = _imported(files, declaration)
        if label == "shape_only":  # another kernel name would find no prior: train on the same kernel
            for t in tests:
                t.meta.kernel = "triton_gemm"
        results[label] = {r.table: r for r in evaluate_test_set(train, tests, seeds=SEEDS, budget=BUDGET)}
        results[label + "_tables"] = {t.name: t for t in tests}
    lines = [
        "# Users' own tables: the cost model on external-style Kernel Tuner caches",
        "",
        *_provenance("the caches were measured on an NVIDIA H200 "
                     f"(`{args.data.resolve().relative_to(ROOT)}/race_report.json`)"),
        f"- test set: `{args.shapes.resolve().relative_to(ROOT)}` (committed before the race); prior trained "
        f"on the {len(train)} committed H200 tables; {len(SEEDS)} seeds, budget {BUDGET}",
        *([f"- **development number**: {args.development}"] if args.development else []),
        "",
        "Compiles until a config within 1% of the table's own optimum is measured, per seed (`-`: not "
        "within the budget). *Documented path*: `flysearch tables import FILE --shape problem_size:MNK "
        "--kernel triton_gemm_splitk --arch sm_90 --rename BM=BLOCK_M,BN=BLOCK_N,BK=BLOCK_K,GM=GROUP_M,"
        "SK=SPLIT_K`. *Without --kernel*: the same, less the kernel family.",
        "",
        "| table | configs | regime | family rules keep | optimum kept | documented: median to 1% | per seed "
        "| to 5% | without --kernel: median to 1% | per seed |",
        "|---|---:|---|---:|---|---:|---|---:|---:|---|",
    ]
    medians, worst = [], []
    for name in sorted(results["documented"], key=lambda n: results["documented_tables"][n].meta.shape().M):
        doc, plain = results["documented"][name], results["shape_only"][name]
        table = results["documented_tables"][name]
        kept, best_kept = _family_kept(table)
        runs = doc.sampler[0.01]
        medians.append(statistics.median(_counted(runs)))
        worst.append(max(_counted(runs)))
        lines.append(
            f"| {name} | {len(table.rows)} | {table.meta.shape().regime} | {kept} | {best_kept} | "
            f"{_median(runs)} | {_cell(runs)} | {_median(doc.sampler[0.05])} | "
            f"{_median(plain.sampler[0.01])} | {_cell(plain.sampler[0.01])} |")
    lines += [
        "",
        f"Documented path over the {len(medians)} tables: median of the per-table medians "
        f"{statistics.median(medians):g}, worst single run {max(worst)} (target: median <= 3, worst <= 8).",
        "",
        "*family rules keep*: the table's configs that `triton_gemm_splitk`'s constraints keep (replay "
        "searches only these); *optimum kept*: whether a config within 1% of the table's optimum is "
        "among them.",
        "",
        f"({time.monotonic() - start:.0f} s)",
    ]
    _write(args.out, lines)


def leave_one_out_dev(args: argparse.Namespace) -> None:
    """Development: hold out, one at a time, each table that measures num_stages=5 (the unpruned
    races and the external-style caches of ``EXTERNAL_TRAINING``) of the *regime*s asked for; train
    on every other committed H200 table and search it as ``eval`` does. No test set takes part."""
    from flysearch.compare import leave_one_out

    start = time.monotonic()
    tables = _training()
    regimes = {t.name: t.meta.shape().regime for t in tables}
    stage5 = [t for t in tables if not t.name.startswith("triton_gemm/")
              and (not args.regime or regimes[t.name] in args.regime)]
    seeds = tuple(range(args.seeds))
    results = leave_one_out(stage5, seeds=seeds, budget=BUDGET, extra=tables, workers=args.workers,
                            progress=lambda name: print(f"held out {name}", flush=True))
    lines = [
        "# Development: the prior on the tables that measure num_stages = 5, left out one at a time",
        "",
        *_provenance("the tables were measured on an NVIDIA H200"),
        f"- held out: the {len(stage5)} {'/'.join(args.regime or [])}{' ' if args.regime else ''}tables of "
        f"`{'`, `'.join((*UNPRUNED, *EXTERNAL_TRAINING))}`; "
        f"each prior trained on the {len(tables) - 1} others; "
        f"{len(seeds)} seed(s), budget {BUDGET}. **Development numbers**: these tables shaped the method.",
        "",
        "| table | regime | prior's rank of a config within 1% | search: compiles to 1% per seed | to 5% |",
        "|---|---|---:|---|---|",
    ]
    medians, worst = [], []
    for r in results:
        runs = r.sampler[0.01]
        medians.append(statistics.median(_counted(runs)))
        worst.append(max(_counted(runs)))
        regime = regimes[r.table]
        lines.append(f"| {r.table} | {regime} | {r.prior_rank[0.01]} | {_cell(runs)} | "
                     f"{_cell(r.sampler[0.05])} |")
    lines += [
        "",
        f"Over the {len(medians)} tables: median of the per-table medians {statistics.median(medians):g}, "
        f"worst single run {max(worst)}; {sum(w <= 8 for w in worst)} of {len(worst)} tables within 8 "
        "compiles in every seed.",
        "",
        f"({time.monotonic() - start:.0f} s)",
    ]
    _write(args.out, lines)


def _family_kept(table: GroundTruth) -> tuple[int, str]:
    from flysearch.space import table_profile
    from flysearch.tables import space_for_table

    space = space_for_table(table)
    arch = table_profile(table.meta.arch, table.meta.device)
    feasible = {c.key for c in space.enumerate(table.meta.shape(), arch, allow_empty=True).feasible}
    best = table.best().time_ms or 0.0
    near = [r for r in table.ok_rows() if r.time_ms <= best * 1.01]
    return len(feasible), "yes" if any(r.key in feasible for r in near) else "no"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("race", help="race the shapes on a GPU and write Kernel Tuner caches")
    r.add_argument("--shapes", type=Path, default=SHAPES, help="the test set's shape file")
    r.add_argument("--out", type=Path, default=DATA)
    r.add_argument("--only", action="append", help="race only these shapes (by name); repeatable")
    r.add_argument("--workers", type=int, default=None)
    r.add_argument("--cache-dir", default=None)
    r.add_argument("--deadline", type=float, default=None, help="stop starting work after this many s")
    r.add_argument("--db", default=None, help="folder of the race's table database (default: a temp one)")
    e = sub.add_parser("eval", help="import the caches the documented way and search them (CPU)")
    e.add_argument("--shapes", type=Path, default=SHAPES, help="the test set's shape file")
    e.add_argument("--data", type=Path, default=DATA)
    e.add_argument("--out", type=Path, default=BENCHMARKS / "results" / "external_h200.md")
    e.add_argument("--development", metavar="WHY", default=None,
                   help="label the result a development number (the test set was seen before), saying why")
    d = sub.add_parser("loo", help="development: leave out each table measuring num_stages=5 (CPU)")
    d.add_argument("--regime", action="append", choices=REGIMES,
                   help="only tables of this regime; repeatable")
    d.add_argument("--seeds", type=int, default=1)
    d.add_argument("--workers", type=int, default=2)
    d.add_argument("--out", type=Path, default=BENCHMARKS / "results" / "external_h200_dev.md")
    args = ap.parse_args()
    {"race": race, "eval": evaluate, "loo": leave_one_out_dev}[args.command](args)


if __name__ == "__main__":
    main()
