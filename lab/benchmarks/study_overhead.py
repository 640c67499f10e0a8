"""What the study machinery costs per trial and per compile, by storage and by sampler.

    python lab/benchmarks/study_overhead.py --postgres auto --out lab/benchmarks/results/study_overhead.md

Replays two benchmark_hub tables of Kernel Tuner caches (``../shared/data``): convolution/MI250X
(10,240 configs, 4,362 feasible) and dedispersion/MI250X (22,272, 11,130 feasible). A replayed
compile costs a dictionary lookup, so a study's wall time is the machinery's own: the sampler's
suggestions, the constraints, the bookkeeping of every trial (rejected and duplicate suggestions
included) and the storage.

* **Storages** (the ``random`` sampler, whose suggestions cost almost nothing, so the storage sets
  the pace): in memory; Optuna's journal file (``JournalStorage(JournalFileBackend)``, passed as an
  object: one process); SQLite, the default (``sqlite:///``, shared between processes); PostgreSQL
  on loopback (``--postgres URL``, or ``auto`` to start a throwaway server with
  ``tests/pgserver.py`` where PostgreSQL is installed).
* **Samplers** (the default SQLite storage): every sampler flysearch has but ``costmodel``, which
  needs a prior (its speed is ``lab/benchmarks/costmodel_speed.py``'s), at the same budget; ``gp`` at
  a fifth of it (its suggestions take seconds on these spaces).

Each cell is the median over ``--repeat`` runs (seeds 0, 1, ...) of wall milliseconds per trial
and per unique compile. For scale: one Triton compile of the split-K GEMM for the H200 costs about
350 ms (``lab/benchmarks/results/compile_scaling_h200x2.json``).
"""

from __future__ import annotations

import argparse
import datetime
import itertools
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import optuna  # noqa: E402

from flysearch.evaluators import ReplayEvaluator  # noqa: E402
from flysearch.samplers import SAMPLERS  # noqa: E402
from flysearch.study import StudySpec, run_study  # noqa: E402
from flysearch.tables import GroundTruth, TableStore, read_kernel_tuner_cache, space_for_table  # noqa: E402

HUB = ROOT.parent / "shared" / "data" / "benchmark_hub"
TABLES = ("convolution_milo/MI250X", "dedispersion_milo/MI250X")
_RUNS = itertools.count()  # every run is a fresh study, also in a storage that outlives it


def load(name: str) -> GroundTruth:
    path = Path(name) if name.endswith(".json") else HUB / f"{name}.json.gz"
    meta, rows = read_kernel_tuner_cache(path)
    store = TableStore(":memory:")
    store.write(meta, rows)
    return store.load(meta.name)


def one_run(table: GroundTruth, sampler: str, budget: int, seed: int,
            storage: Callable[[], Any]) -> tuple[float, float, int, int]:
    """Set-up seconds (until the first trial is finished), then loop seconds, trials and compiles
    after it, of one fresh study."""
    space = space_for_table(table)
    settings = StudySpec(sampler=sampler, budget=budget, seed=seed, space=space.name, table=table.name)
    marks: list[float] = []
    t0 = time.perf_counter()
    summary = run_study(f"{table.name}:{sampler}:{seed}:{next(_RUNS)}", space, ReplayEvaluator(table),
                        settings, storage=storage(), progress=lambda _done, _total: marks.append(
                            time.perf_counter()))
    first = summary.trials - len(marks) + 1  # trials finished by the first mark
    return marks[0] - t0, marks[-1] - marks[0], summary.trials - first, summary.compiles


def cell(table: GroundTruth, sampler: str, budget: int, repeat: int,
         storage: Callable[[], Any]) -> dict[str, float]:
    runs = [one_run(table, sampler, budget, seed, storage) for seed in range(repeat)]
    return {
        "setup_s": statistics.median(s for s, _l, _t, _c in runs),
        "ms_trial": statistics.median(1000 * loop / max(t, 1) for _s, loop, t, _c in runs),
        "ms_compile": statistics.median(1000 * loop / max(c - 1, 1) for _s, loop, _t, c in runs),
        "trials_per_compile": statistics.median(t / max(c - 1, 1) for _s, _l, t, c in runs),
    }


def storages(tmp: Path, postgres: str | None) -> dict[str, Callable[[], Any]]:
    counter = itertools.count()

    def journal() -> Any:
        from optuna.storages.journal import JournalFileBackend, JournalStorage

        return JournalStorage(JournalFileBackend(str(tmp / f"j{next(counter)}.log")))

    out: dict[str, Callable[[], Any]] = {
        "memory": optuna.storages.InMemoryStorage,
        "journal file": journal,
        "SQLite (default)": lambda: f"sqlite:///{tmp}/s{next(counter)}.db",
    }
    if postgres:
        out["PostgreSQL (loopback)"] = lambda: postgres  # one database: the runs' study names differ
    return out


def provenance(command: str) -> list[str]:
    def run(*cmd: str) -> str:
        try:
            return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, check=True).stdout.strip()
        except (OSError, subprocess.CalledProcessError):
            return "?"

    info = Path("/proc/cpuinfo")
    text = info.read_text() if info.exists() else ""
    names = [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("model name")]
    cpu = names[0] if names else platform.processor() or "?"
    import numpy
    import sqlalchemy

    return [
        f"- command: `{command}`",
        f"- commit: {run('git', 'rev-parse', '--short', 'HEAD')}"
        + (" (with uncommitted changes)" if run("git", "status", "--porcelain", "flysearch") else ""),
        f"- hardware: {os.cpu_count()} cores, {cpu}; load average at start {os.getloadavg()[0]:.2f}",
        f"- versions: Python {platform.python_version()}, optuna {optuna.__version__}, "
        f"SQLAlchemy {sqlalchemy.__version__}, numpy {numpy.__version__}",
        f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=100, help="unique compiles per study")
    parser.add_argument("--repeat", type=int, default=3, help="runs (seeds) per cell")
    parser.add_argument("--postgres", default=None, help="a PostgreSQL URL, or 'auto'")
    parser.add_argument("--samplers", default=",".join(s for s in SAMPLERS if s != "costmodel"))
    parser.add_argument("--out", default=None, help="write the markdown here too")
    parser.add_argument("--gemm", default=None, metavar="FILE",
                        help="a Schoonhoven et al. GEMM cache (17,956 configs) to time the samplers on too")
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    server = None
    postgres = args.postgres
    if postgres == "auto":
        from tests.pgserver import PostgresServer

        server = PostgresServer()
        if server.available:
            print(f"no PostgreSQL: {server.available}", file=sys.stderr)
            server, postgres = None, None
        else:
            server.start()
            postgres = server.create_database("overhead")
    lines = ["# Study machinery overhead per trial and per compile", "",
             *provenance("python lab/benchmarks/study_overhead.py " + " ".join(sys.argv[1:])), ""]
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tables = {name: load(name) for name in TABLES}
            heads = " | ".join(f"{n}: set-up s | ms/trial | ms/compile" for n in TABLES)
            lines += [f"## Storages (sampler `random`, budget {args.budget}, median of {args.repeat} seeds)",
                      "", f"| storage | {heads} |", "|---|" + "---:|---:|---:|" * len(TABLES)]
            for label, make in storages(Path(tmp), postgres).items():
                cells = [cell(tables[n], "random", args.budget, args.repeat, make) for n in TABLES]
                lines.append(f"| {label} | " + " | ".join(
                    f"{c['setup_s']:.2f} | {c['ms_trial']:.2f} | {c['ms_compile']:.2f}" for c in cells)
                    + " |")
                print(lines[-1], file=sys.stderr)
            sqlite = storages(Path(tmp), None)["SQLite (default)"]
            names = [*TABLES, *([args.gemm] if args.gemm else [])]
            if args.gemm:
                tables[args.gemm] = load(args.gemm)
            labels = {n: tables[n].name for n in names}
            lines += ["", f"## Samplers (default SQLite storage, budget {args.budget}; gp: "
                      f"{max(args.budget // 5, 1)}; median of {args.repeat} seeds)", "",
                      "One Triton compile of the split-K GEMM for the H200 costs about 350 ms "
                      "(`lab/benchmarks/results/compile_scaling_h200x2.json`); a `kt:` sampler runs its "
                      "whole Kernel Tuner strategy before its first suggestion, so its cost is in the "
                      "set-up, not in ms/trial. Configs measured (the feasible space): "
                      + ", ".join(f"{labels[n]} {len(tables[n].rows):,}" for n in names) + ".", "",
                      "| sampler | " + " | ".join(f"{labels[n]}: ms/trial | ms/compile | trials/compile"
                                                   for n in names) + " |",
                      "|---|" + "---:|---:|---:|" * len(names)]
            for sampler in args.samplers.split(","):
                budget = max(args.budget // 5, 1) if sampler == "gp" else args.budget
                cells = [cell(tables[n], sampler, budget, args.repeat, sqlite) for n in names]
                lines.append(f"| {sampler} | " + " | ".join(
                    f"{c['ms_trial']:.2f} | {c['ms_compile']:.2f} | {c['trials_per_compile']:.2f}"
                    for c in cells) + " |")
                print(lines[-1], file=sys.stderr)
    finally:
        if server is not None:
            server.stop()
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
