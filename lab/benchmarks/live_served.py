"""Live studies run as separate commands, with and without a worker server (``flysearch serve``).

    python lab/benchmarks/live_served.py --out lab/benchmarks/results/live_served_h200.json        # H200
    python lab/benchmarks/live_served.py --report lab/benchmarks/results/live_served_h200.json     # markdown
    OMP_NUM_THREADS=1 python lab/benchmarks/live_served.py --evaluator simulated --budget 24 \\
        --compile-workers 2 --out /tmp/live_served_sim.json                              # any CPU

Each study is one ``flysearch study run --evaluator triton --shape S ...`` command in a fresh
process, as a user or a job queue runs them, with a fresh (cold) Triton cache and its own SQLite
study. For every (shape, budget, sampler) it runs twice: ``own`` (the command runs the study in its
own process, which starts its GPU timer and compile processes) and ``served`` (``--server``: the
command hands its study to a warm study process of one worker server started at the beginning,
which takes its timer and compile processes warm from the same server; the server keeps the
``costmodel`` studies' cost models loaded, ``flysearch serve --prior``), in alternating order.
Before a served study the benchmark waits until the server's spares are warm again (the time it
waited is recorded; the timer's and the study process's replacements warm up during the previous
study, compile processes are replaced when it ends).

Reported per study: the command's wall-clock (process start to exit), the study's wall-clock and
its overhead (the share of it during which no compile or timing ran, as the pool processes
measured it), when the GPU was ready, the processes taken from the server, and the re-timed winner
against the exhaustive table's optimum. The server's own environment points Triton's cache at a
directory of its own; the benchmark checks that nothing was compiled there, so the served
processes compiled into each study's cache, as the study's own would have. The summary and the
``--report`` markdown are ``_live_served.served_summary``'s and ``served_report``'s.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BENCHMARKS = ROOT / "lab" / "benchmarks"
sys.path.insert(0, str(ROOT))

from _live_served import served_report, served_summary  # noqa: E402

from flysearch.costmodel import fit_prior  # noqa: E402
from flysearch.evaluators import wait_warm  # noqa: E402
from flysearch.tables import TableStore, read_table_file  # noqa: E402

TABLE_GLOB = str(BENCHMARKS / "data" / "h200" / "*.table.json.gz")


def _tables(path: str) -> TableStore:
    store = TableStore(path)
    for file in sorted(glob.glob(TABLE_GLOB)):
        store.write(*read_table_file(file))
    return store


def _flysearch(*args: str) -> list[str]:
    return [sys.executable, "-m", "flysearch", *args]


def _study(args: argparse.Namespace, shape: str, sampler: str, budget: int, mode: str, sock: str,
           prior: str | None, tables_db: str) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = ["study", "run", "--evaluator", args.evaluator, "--sampler", sampler, "--budget", str(budget),
               "--storage", f"sqlite:///{tmp}/study.db", "--compile-workers", str(args.compile_workers),
               "--json", f"{tmp}/report.json"]
        if args.evaluator == "simulated":
            cmd += ["--table", f"triton_gemm/H200/{shape}", "--db", tables_db, "--scale", str(args.scale)]
        else:
            cmd += ["--shape", shape, "--db", f"{tmp}/tables.db"]
        if prior:
            cmd += ["--prior", prior]
        if mode == "served":
            cmd += ["--server", sock]
        start = time.perf_counter()
        out = subprocess.run(_flysearch(*cmd), capture_output=True, text=True, cwd=tmp)
        command_s = time.perf_counter() - start
        if out.returncode != 0:
            raise RuntimeError(f"study failed ({out.returncode}): {out.stderr.strip()[-2000:]}")
        (rep,) = json.loads(Path(f"{tmp}/report.json").read_text())
    return {"command_wall_s": round(command_s, 2), "report": rep}


def _row(shape: str, sampler: str, budget: int, mode: str, waited: float, run: dict, table) -> dict:
    rep = run["report"]
    final = rep.get("finalists") or {}
    winner = final.get("winner") or rep["summary"].get("best_key")
    row = table.rows.get(winner or "")
    optimum = table.best().time_ms
    return {
        "shape": shape, "sampler": sampler, "budget": budget, "mode": mode,
        "waited_for_server_s": round(waited, 2), "command_wall_s": run["command_wall_s"],
        "wall_s": round(rep["wall_s"], 2), "busy_s": round(rep["busy_s"], 2),
        "overhead": round(rep["overhead"], 4), "overhead_after_ready": round(rep["overhead_after_ready"], 4),
        "timer_ready_s": round(rep["timer_ready_s"], 3), "first_compile_s": round(rep["first_compile_s"], 3),
        "startup_s": round(rep["startup_s"], 3), "head_s": round(rep["head_s"], 3),
        "tail_s": round(rep["tail_s"], 3), "worker": rep["worker"],
        "setup_parts_s": {k: round(v, 3) for k, v in rep.get("setup_parts", {}).items()},
        "served_workers": rep.get("served_workers", 0), "compiles": rep["summary"]["compiles"],
        "trials": rep["summary"]["trials"], "device": rep.get("device", ""), "winner": winner,
        "winner_vs_optimum_in_table": (row.time_ms / optimum) if row is not None and row.ok else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--evaluator", default="triton", choices=("triton", "simulated"))
    parser.add_argument("--shapes", default="1x6144x4096,256x1536x7168,4096x4096x4096")
    parser.add_argument("--samplers", default="tpe-unseen,costmodel")
    parser.add_argument("--budget", default="48,200", help="Budgets, comma-separated.")
    parser.add_argument("--compile-workers", type=int, default=14)
    parser.add_argument("--modes", default="own,served")
    parser.add_argument("--scale", type=float, default=1.0, help="Simulated: time scale.")
    parser.add_argument("--out", default=None)
    parser.add_argument("--report", metavar="FILE", help="print a markdown summary of a result file")
    args = parser.parse_args()
    if args.report:
        try:
            print(served_report(json.loads(Path(args.report).read_text())), end="")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            parser.error(f"{args.report} is not a live_served result file: {exc}")
        return
    work = tempfile.mkdtemp(prefix="live-served-")
    tables_db = os.path.join(work, "tables.db")
    store = _tables(tables_db)
    sock = os.path.join(work, "server", "workers.sock")
    server_cache = os.path.join(work, "server-cache")
    serve = ["serve", "--evaluator", args.evaluator, "--compile-workers", str(args.compile_workers),
             "--socket", sock]
    if args.evaluator == "simulated":
        first = args.shapes.split(",")[0]
        serve += ["--table", f"triton_gemm/H200/{first}", "--db", tables_db]
    # Each shape's cost model is trained on the other tables, before the server starts, which keeps
    # them loaded in its study processes (--prior); a study run without the server loads its own.
    priors: dict[str, str] = {}
    if "costmodel" in args.samplers.split(","):
        for shape in args.shapes.split(","):
            name = f"triton_gemm/H200/{shape}"
            priors[shape] = os.path.join(work, f"prior-{shape}.joblib")
            fit_prior([store.load(x) for x in store.names() if x != name]).save(priors[shape])
            serve += ["--prior", priors[shape]]
    doc: dict = {"command": " ".join(["python", "lab/benchmarks/live_served.py", *sys.argv[1:]]),
                 "python": platform.python_version(), "cpus": os.cpu_count(),
                 "date": time.strftime("%Y-%m-%d"),
                 "evaluator": args.evaluator, "compile_workers": args.compile_workers}
    start = time.perf_counter()
    server = subprocess.Popen(_flysearch(*serve), env={**os.environ, "TRITON_CACHE_DIR": server_cache},
                              stderr=subprocess.PIPE, text=True)
    rows: list[dict] = []

    def save() -> None:
        doc["studies"] = rows
        doc["summary"] = served_summary(rows)
        if args.out:
            Path(args.out).write_text(json.dumps(doc, indent=2) + "\n")

    try:
        wait_warm(sock, timeout_s=300)
        doc["server_warm_s"] = round(time.perf_counter() - start, 2)
        print(f"server warm after {doc['server_warm_s']} s", flush=True)
        modes = args.modes.split(",")
        n = 0
        for shape in args.shapes.split(","):
            name = f"triton_gemm/H200/{shape}"
            table = store.load(name)
            for budget in (int(b) for b in args.budget.split(",")):
                for sampler in args.samplers.split(","):
                    prior = priors[shape] if sampler == "costmodel" else None
                    for mode in (modes if n % 2 == 0 else modes[::-1]):
                        waited = 0.0
                        if mode == "served":
                            t = time.perf_counter()
                            wait_warm(sock, timeout_s=120)
                            waited = time.perf_counter() - t
                        run = _study(args, shape, sampler, budget, mode, sock, prior, tables_db)
                        rows.append(_row(shape, sampler, budget, mode, waited, run, table))
                        print(json.dumps(rows[-1]), flush=True)
                        save()
                    n += 1
    finally:
        server.terminate()
        try:
            _out, err = server.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            _out, err = server.communicate()
        doc["server_log"] = err.strip().splitlines()[-3:]
    compiled_there = [str(p) for p in Path(server_cache).rglob("*") if p.is_file()] if os.path.isdir(
        server_cache) else []
    doc["files_in_server_cache"] = len(compiled_there)
    save()
    print(json.dumps(doc["summary"], indent=2))
    if compiled_there:
        raise SystemExit(f"{len(compiled_there)} files were compiled into the server's own cache: served "
                         "processes did not take the study's environment")


if __name__ == "__main__":
    main()
