"""Live studies on the H200 through the pipelined, claim-based runner (``flysearch.study``).

    python lab/benchmarks/live_h200.py --budget 48 --out lab/benchmarks/results/live_h200.json     # one GPU
    python lab/benchmarks/live_h200.py --skip-part-one --two-gpu 256x1536x7168 --two-gpu-budget 1200 \
        --two-gpu-sampler random --out lab/benchmarks/results/live_h200_two_gpu.json           # two GPUs

Part 1 (``--shapes``, ``--budget`` and ``--samplers`` as comma-separated lists): for shapes with
exhaustive tables in lab/benchmarks/data/h200, a live study per budget and sampler (``tpe``;
``costmodel`` with a prior trained on the *other* committed tables), cold Triton cache, SQLite
storage: compiles, wall-clock seconds, the share of the worker's wall-clock during which no pool
process ran a compile or a timing (the overhead; ``head_s`` of it before the first one started,
``tail_s`` after the last one ended), the re-timed winner and its tie set, and the winner's time in
the exhaustive table against the table's optimum. With ``--race`` each shape is also raced
exhaustively from a cold cache on the same machine, for the wall-clock comparison.

Part 2 (``--two-gpu SHAPE``): the same study (each sampler of ``--two-gpu-sampler``; budget
``--two-gpu-budget``) with one worker on one GPU and with two workers on two GPUs sharing one
SQLite study; and, as the bound that sharing cannot beat, two separate studies of half the budget
at once, one per GPU. Each worker gets the same number of compile processes in every run. Reports
configs/s over the whole wall-clock and between the first and the last compile or timing (the busy
window), the speed-ups, what the launcher itself cost (spawn and exit), how busy the compile
processes were and how long a compile took, and checks that no config was compiled twice.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "lab" / "benchmarks"
sys.path.insert(0, str(ROOT))

from flysearch.costmodel import fit_prior  # noqa: E402
from flysearch.study import ClaimStore, LiveSettings, StudySpec, run_live  # noqa: E402
from flysearch.tables import TableStore, read_table_file  # noqa: E402


def _tables() -> TableStore:
    store = TableStore(":memory:")
    for path in sorted(glob.glob(str(BENCHMARKS / "data" / "h200" / "*.table.json.gz"))):
        store.write(*read_table_file(path))
    return store


def _race_wall(shape_text: str, workers: int) -> dict:
    from flysearch.kernels import get_space
    from flysearch.race import RaceSettings, RaceShape, run_race
    from flysearch.space import parse_shape

    with tempfile.TemporaryDirectory() as tmp:
        store = TableStore(os.path.join(tmp, "race.db"))
        settings = RaceSettings(workers=workers, cache_dir=os.path.join(tmp, "cache"))
        shapes = [RaceShape(parse_shape(shape_text))]
        report = run_race(get_space("triton_gemm_splitk"), shapes, store, settings)
        return {"race_wall_s": round(report.wall_s, 1), "race_measured": report.measured}


def part_one(args: argparse.Namespace, store: TableStore, save: Callable[[list[dict]], None]) -> list[dict]:
    """The studies of part 1; *save* is called with the results so far after each one (a run cut
    short by a time limit keeps what it measured)."""
    results: list[dict] = []
    for text in args.shapes.split(","):
        name = f"triton_gemm/H200/{text}"
        table = store.load(name)
        optimum = table.best().time_ms
        race = _race_wall(text, args.compile_workers) if args.race else {}
        runs = [(int(b), s) for b in args.budget.split(",") for s in args.samplers.split(",")]
        for budget, sampler in runs:
            with tempfile.TemporaryDirectory() as tmp:
                prior_path = None
                if sampler == "costmodel":
                    prior_path = os.path.join(tmp, "prior.joblib")
                    fit_prior([store.load(n) for n in store.names() if n != name]).save(prior_path)
                job = StudySpec(name=f"live-{sampler}-{text}", evaluator="triton", sampler=sampler,
                                budget=budget, shape=text, storage=f"sqlite:///{tmp}/study.db",
                                db=f"{tmp}/tables.db", prior=prior_path,
                                live=LiveSettings(gpus=("0",), compile_workers=args.compile_workers,
                                                  timer_queue=args.timer_queue,
                                                  cache_dir=os.path.join(tmp, "cache")))
                start = time.perf_counter()
                (rep,) = run_live(job)
                wall = time.perf_counter() - start
            final = rep.finalists or {}
            winner = final.get("winner") or rep.summary.best_key
            row = table.rows.get(winner or "")
            results.append({
                "shape": text, "sampler": sampler, "budget": budget, "compiles": rep.summary.compiles,
                "trials": rep.summary.trials, "wall_s": round(wall, 2), "worker_wall_s": round(rep.wall_s, 2),
                "busy_s": round(rep.busy_s, 2), "overhead": round(rep.overhead, 4),
                "overhead_after_start": round(rep.overhead_after_start, 4),
                "overhead_after_ready": round(rep.overhead_after_ready, 4),
                "timer_ready_s": round(rep.timer_ready_s, 2),
                "compile_busy_s": round(rep.compile_busy_s, 2), "timer_busy_s": round(rep.timer_busy_s, 2),
                "compile_sum_s": round(rep.compile_sum_s, 2), "loop_s": round(rep.loop_s, 2),
                "startup_s": round(rep.startup_s, 2), "first_compile_s": round(rep.first_compile_s, 2),
                "loop_parts_s": {k: round(v, 2) for k, v in rep.loop_parts.items()},
                "head_s": round(rep.head_s, 2),
                "tail_s": round(rep.tail_s, 2), "winner": winner,
                "winner_live_ms": final.get("winner_ms"),
                "winner_spread": final.get("spread"), "tie_set": final.get("tie_set"),
                "table_ms_of_winner": row.time_ms if row else None, "table_optimum_ms": optimum,
                "winner_vs_optimum_in_table": (row.time_ms / optimum) if row and row.ok else None,
                "feasible": rep.summary.n_feasible, **race,
            })
            print(json.dumps(results[-1]), flush=True)
            save(results)
    return results


def _storage(args: argparse.Namespace, tmp: str, name: str) -> str:
    """The study's database: a file in *tmp*, or with ``--postgres`` a fresh database on the
    benchmark's PostgreSQL server."""
    if args.pg_server is None:
        return f"sqlite:///{tmp}/{name}.db"
    database = f"{name}_{os.path.basename(tmp)}".lower().replace("-", "_")
    if database not in args.pg_databases:
        args.pg_databases[database] = args.pg_server.create_database(database)
    return args.pg_databases[database]


def _scale_job(args: argparse.Namespace, sampler: str, tmp: str, name: str, budget: int,
               seed: int = 0) -> StudySpec:
    prior_path = None
    if sampler == "costmodel":
        store = _tables()
        table = f"triton_gemm/H200/{args.two_gpu}"
        prior_path = os.path.join(tmp, "prior.joblib")
        if not os.path.exists(prior_path):
            fit_prior([store.load(n) for n in store.names() if n != table]).save(prior_path)
    # A study's own Triton cache: separate studies must not load each other's binaries.
    return StudySpec(name=name, evaluator="triton", sampler=sampler, budget=budget, seed=seed,
                     shape=args.two_gpu, storage=_storage(args, tmp, name), db=f"{tmp}/tables.db",
                     prior=prior_path,
                     live=LiveSettings(compile_workers=args.compile_workers, depth=args.depth, finalists=0,
                                       timer_queue=args.timer_queue, table=f"live/{name}",
                                       cache_dir=os.path.join(tmp, f"cache-{name}")))


def _with_gpus(job: StudySpec, *gpus: str) -> StudySpec:
    """*job* run with one worker on each of *gpus*."""
    return replace(job, live=replace(job.live, gpus=gpus))


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return round(statistics.median(values), 4) if values else None


def _scale_run(label: str, args: argparse.Namespace, sampler: str) -> dict:
    """One run of part 2: ``one_gpu`` (one worker, in this process), ``two_gpus`` (two workers
    sharing one study) or ``two_separate`` (two separate studies of half the budget each, one per
    GPU, at once: what the host gives two GPUs with nothing shared)."""
    with tempfile.TemporaryDirectory() as tmp:
        budget = args.two_gpu_budget
        launched, start = time.time(), time.perf_counter()
        if label == "one_gpu":
            reports = run_live(_with_gpus(_scale_job(args, sampler, tmp, "scale", budget), "0"))
        elif label == "two_gpus":
            reports = run_live(_with_gpus(_scale_job(args, sampler, tmp, "scale", budget), "0", "1"))
        else:
            # Different seeds: with one seed, both would compile the same configs.
            # Two studies on two GPUs: one each, at once.
            jobs = [_scale_job(args, sampler, tmp, f"scale{g}", budget // 2, seed=int(g)) for g in ("0", "1")]
            reports = run_live([_with_gpus(job, "0", "1") for job in jobs])
        wall, ended = time.perf_counter() - start, time.time()
        store = TableStore(f"{tmp}/tables.db")
        rows = [row for r in reports for row in store.load(r.table).rows.values()]
        store.close()
        # The claims once every worker stopped (a report's own counts are taken when its worker
        # stops, while another may still be compiling).
        claim_counts = []
        for name in sorted({r.summary.study_name for r in reports}):
            claims = ClaimStore(_storage(args, tmp, name), name)
            claim_counts.append(claims.counts())
            claims.close()
    compiled = sum(r.compiled for r in reports)
    # Between the first compile or timing and the last, in the slowest worker: the study
    # without its start-up (process spawn, imports, set-up) and shutdown.
    window = max(r.wall_s - r.head_s - r.tail_s for r in reports)
    out = {
        "wall_s": round(wall, 2), "compiled": compiled, "configs_per_s": round(compiled / wall, 2),
        "busy_window_s": round(window, 2), "window_configs_per_s": round(compiled / window, 2),
        # Before the first worker started its study (process spawn, imports) and after the last
        # one stopped (process exit) -- the launcher's own cost.
        "launch_s": round(min(r.started_at for r in reports) - launched, 2),
        "exit_s": round(ended - max(r.ended_at for r in reports), 2),
        "per_worker": [{
            "compiled": r.compiled, "timed": r.timed, "trials": r.summary.trials,
            "wall_s": round(r.wall_s, 2), "overhead": round(r.overhead, 4),
            "overhead_after_start": round(r.overhead_after_start, 4),
            "overhead_after_ready": round(r.overhead_after_ready, 4),
            "timer_ready_s": round(r.timer_ready_s, 2),
            "startup_s": round(r.startup_s, 2), "first_compile_s": round(r.first_compile_s, 2),
            "compile_busy_s": round(r.compile_busy_s, 2), "compile_sum_s": round(r.compile_sum_s, 2),
            "compile_s_per_config": round(r.compile_sum_s / max(r.compiled, 1), 3),
            # Share of the compile processes' time after the first compile began that they compiled.
            "compile_process_use": round(r.compile_sum_s / (args.compile_workers * max(
                r.wall_s - r.first_compile_s - r.tail_s, 1e-9)), 3),
            "timer_busy_s": round(r.timer_busy_s, 2),
            # The GPU's share of the worker's wall-clock, and its seconds per config timed (which
            # depend on the configs: a slow kernel takes longer to time).
            "gpu_busy_share": round(r.timer_busy_s / max(r.wall_s, 1e-9), 3),
            "timer_s_per_config": round(r.timer_busy_s / max(r.timed, 1), 4),
            "loop_s": round(r.loop_s, 2),
            "loop_ms_per_compile": round(1000 * r.loop_s / max(r.compiled, 1), 1),
            "loop_parts_s": {k: round(v, 2) for k, v in r.loop_parts.items()},
            "pipeline_mean": r.pipeline_mean,
            "head_s": round(r.head_s, 2), "tail_s": round(r.tail_s, 2)} for r in reports],
        # Medians over the configs measured: a compile (in its process), a timing (the timer's
        # whole task), and of it, loading the binary onto the GPU.
        "median_s": {
            "compile": _median([row.compile_s for row in rows]),
            "timing": _median([row.bench_s for row in rows]),
            "load": _median([row.extra.get("load_s") for row in rows]),
        },
        # The timer's seconds over all workers: the GPU work of the configs this run timed.
        "timer_work_s": round(sum(r.timer_busy_s for r in reports), 2),
        "claims": claim_counts if label == "two_separate" else claim_counts[0],
        "study_compiles": ([r.summary.compiles for r in reports] if label == "two_separate"
                           else max(r.summary.compiles for r in reports)),
    }
    if label != "two_separate":
        # Every compile has its claim, and a claim is compiled once (no worker died here).
        out["double_compiles"] = compiled - sum(claim_counts[0].values())
    print(json.dumps({label: out}), flush=True)
    return out


def part_two(args: argparse.Namespace, sampler: str) -> dict:
    out: dict = {"shape": args.two_gpu, "budget": args.two_gpu_budget, "sampler": sampler,
                 "compile_workers_per_worker": args.compile_workers, "depth": args.depth,
                 "timer_queue": args.timer_queue,
                 "storage": "sqlite" if args.pg_server is None else "postgresql"}
    for label in args.two_gpu_runs.split(","):
        out[label] = _scale_run(label, args, sampler)
    one = out.get("one_gpu")
    for label in ("two_gpus", "two_separate"):
        if one and label in out:
            out[f"{label}_speedup"] = round(out[label]["configs_per_s"] / one["configs_per_s"], 3)
            out[f"{label}_window_speedup"] = round(
                out[label]["window_configs_per_s"] / one["window_configs_per_s"], 3)
            # Above 1: the same number of configs took more GPU seconds to time (other configs,
            # or a GPU slowed by the other one).
            out[f"{label}_timer_work_ratio"] = round(
                out[label]["timer_work_s"] / max(one["timer_work_s"], 1e-9), 3)
    return out


def _start_postgres(args: argparse.Namespace, doc: dict) -> object:
    """A throwaway PostgreSQL server on loopback (the tests' helper), durable writes on."""
    sys.path.insert(0, str(ROOT / "tests"))
    from pgserver import PostgresServer

    server = PostgresServer()
    if server.available:
        raise SystemExit(f"--postgres: {server.available}")
    server.start(fsync=True)
    args.pg_server = server
    import sqlalchemy as sa

    engine = sa.create_engine(server.url("postgres"))
    with engine.connect() as c:
        doc["postgres"] = c.exec_driver_sql("select version()").scalar()
    engine.dispose()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shapes", default="1x6144x4096,256x1536x7168,4096x4096x4096")
    parser.add_argument("--samplers", default="tpe,costmodel")
    parser.add_argument("--budget", default="48", help="Budgets, comma-separated.")
    parser.add_argument("--compile-workers", type=int, default=14)
    parser.add_argument("--depth", type=int, default=None, help="Trials in flight per worker (part 2).")
    parser.add_argument("--timer-queue", type=int, default=LiveSettings.timer_queue,
                        help="Configs sent to the GPU's timer at once (LiveSettings.timer_queue).")
    parser.add_argument("--race", action="store_true", help="Also race each shape exhaustively (cold).")
    parser.add_argument("--two-gpu", default=None, help="Shape for the one-vs-two GPU comparison.")
    parser.add_argument("--two-gpu-budget", type=int, default=300)
    parser.add_argument("--two-gpu-sampler", default="random", help="Samplers, comma-separated.")
    parser.add_argument("--two-gpu-runs", default="one_gpu,two_gpus,two_separate",
                        help="Which runs of part 2, comma-separated (one_gpu, two_gpus, two_separate).")
    parser.add_argument("--skip-part-one", action="store_true")
    parser.add_argument("--postgres", action="store_true",
                        help="Part 2's studies on a PostgreSQL server started for the run (initdb and "
                             "pg_ctl on PATH; fsync on) instead of SQLite files.")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    args.pg_server, args.pg_databases = None, {}
    import optuna
    import torch

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    doc = {"device": torch.cuda.get_device_name(0), "gpus": torch.cuda.device_count(),
           "torch": torch.__version__, "python": platform.python_version(),
           "date": time.strftime("%Y-%m-%d"), "cpus": os.cpu_count()}

    def save(results: list[dict]) -> None:
        doc["live"] = results
        if args.out:
            Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")

    if not args.skip_part_one:
        part_one(args, _tables(), save)
    if args.two_gpu:
        server = _start_postgres(args, doc) if args.postgres else None
        try:
            doc["two_gpu"] = [part_two(args, sampler) for sampler in args.two_gpu_sampler.split(",")]
        finally:
            if server is not None:
                server.stop()
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
