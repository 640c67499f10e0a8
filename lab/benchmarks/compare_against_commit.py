"""Is ``flysearch compare`` faster than at an earlier commit, with the same summaries?

Runs each named experiment file (``lab/studies/<name>.toml``; ``studies/`` at a commit before the
lab moved there) twice on this machine, one after the other, into temporary folders: with the code of
*--base* (a ``git worktree`` of that commit, its own ``flysearch`` on ``PYTHONPATH``) and with the code
of this checkout. Reports each run's wall time, their ratio, and how many summary cells differ in the
columns both summaries have (the timing columns such as ``ms_per_trial`` excluded, since a trial's time
always differs). A differing cell means the runs themselves differ: a sampler changed between the
commits, not only the machinery around it.

Run it (the five H200 regime experiments by default; about 25 minutes on 2 cores), with the commit to
compare against:

    OMP_NUM_THREADS=1 python lab/benchmarks/compare_against_commit.py --base COMMIT \\
        --out lab/benchmarks/results/compare_against_commit.md
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from _same_summary import TIMING_COLUMNS  # noqa: E402

from flysearch.compare import code_commit  # noqa: E402

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

REGIMES = ("decode", "small_m", "k_heavy", "prefill", "square")


def _run(code: Path, study: Path, out: Path, *, out_flag: bool) -> float:
    """Wall seconds of one ``compare`` of *study* with the flysearch at *code*; results in *out*."""
    env = dict(os.environ, PYTHONPATH=str(code), OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"))
    # An old commit may lack --out: it writes to the file's own output folder, inside its worktree.
    args = [sys.executable, "-m", "flysearch", "compare", str(study), "--no-plots"]
    if out_flag:
        args += ["--out", str(out)]
    start = time.perf_counter()
    subprocess.run(args, cwd=code, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def _output_folder(study: Path) -> Path:
    import tomllib

    raw = tomllib.loads(study.read_text())
    return (study.parent / raw["experiment"]["output"]).resolve()


def _differing(base: Path, head: Path) -> tuple[int, int]:
    """Cells compared and cells that differ, over the columns and rows both summaries have."""
    def rows(path: Path) -> dict[tuple[str, str, str], dict[str, str]]:
        with path.open(newline="") as fh:
            return {(r["level"], r["where"], r["sampler"]): r for r in csv.DictReader(fh)}

    a, b = rows(base), rows(head)
    compared = differ = 0
    for key in a.keys() & b.keys():
        for column in a[key].keys() & b[key].keys() - TIMING_COLUMNS:
            compared += 1
            differ += a[key][column] != b[key][column]
    differ += len(a.keys() ^ b.keys())  # a row only one side has
    return compared, differ


def _has_out_flag(code: Path) -> bool:
    env = dict(os.environ, PYTHONPATH=str(code))
    text = subprocess.run([sys.executable, "-m", "flysearch", "compare", "--help"], cwd=code, env=env,
                          capture_output=True, text=True, check=True).stdout
    return "--out" in text


def _study(checkout: Path, name: str) -> Path:
    """The experiment file *name* of *checkout*: under ``lab/studies/``, or ``studies/`` in a checkout
    from before the lab moved there."""
    moved = checkout / "lab" / "studies" / f"{name}.toml"
    return moved if moved.exists() else checkout / "studies" / f"{name}.toml"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the earlier commit")
    ap.add_argument("--experiments", default=",".join(f"compare_h200_{r}" for r in REGIMES),
                    help="comma-separated experiment names (lab/studies/<name>.toml)")
    ap.add_argument("--out", type=Path, help="write the markdown here too")
    args = ap.parse_args()
    names = [n.strip() for n in args.experiments.split(",") if n.strip()]
    missing = [n for n in names if not _study(REPO, n).exists()]
    if missing:
        print(f"compare_against_commit: no lab/studies/{missing[0]}.toml", file=sys.stderr)
        return 2
    known = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{args.base}^{{commit}}"], cwd=REPO,
                           capture_output=True, check=False).returncode == 0
    if not known:
        print(f"compare_against_commit: {args.base!r} is not a commit of this repository", file=sys.stderr)
        return 2
    head = code_commit(REPO, outputs=[RESULTS])
    lines, total = [], [0.0, 0.0]
    with tempfile.TemporaryDirectory() as tmp:
        worktree = Path(tmp) / "base"
        # Experiment files read the shared data as ../../../shared from lab/studies/ (../../shared from
        # studies/ before the move): beside the worktree too.
        (Path(tmp) / "shared").symlink_to(REPO.parent / "shared")
        subprocess.run(["git", "worktree", "add", "-q", "--detach", str(worktree), args.base], cwd=REPO,
                       check=True)
        try:
            out_flag = _has_out_flag(worktree)
            for name in names:
                base_study = _study(worktree, name)
                head_study = _study(REPO, name)
                base_out = Path(tmp) / "base-out" / name if out_flag else _output_folder(base_study)
                head_out = Path(tmp) / "head-out" / name
                t_base = _run(worktree, base_study, base_out, out_flag=out_flag)
                t_head = _run(REPO, head_study, head_out, out_flag=True)
                compared, differ = _differing(base_out / "summary.csv", head_out / "summary.csv")
                total[0] += t_base
                total[1] += t_head
                lines.append(f"| {name} | {t_base:.1f} | {t_head:.1f} | {t_base / t_head:.2f} "
                             f"| {differ} of {compared} |")
                print(lines[-1], flush=True)
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=REPO, check=False)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    text = "\n".join([
        "# compare against an earlier commit",
        "",
        f"- command: `OMP_NUM_THREADS=1 python lab/benchmarks/compare_against_commit.py --base {args.base} "
        f"--experiments {','.join(names)}`",
        f"- commit: {head} against {args.base}",
        f"- hardware: {platform.machine()}, {os.cpu_count()} cores; load average at the end {load:.2f}",
        f"- versions: Python {platform.python_version()}",
        f"- date: {datetime.now(UTC):%Y-%m-%d}",
        "",
        "Each experiment file ran once with each commit's code, one after the other, with its own workers.",
        "`speed-up`: base wall time over this checkout's. `cells differing`: summary cells (columns and rows",
        "both summaries have, `ms_per_trial` excluded) whose values differ; any means the runs differ.",
        "",
        "| experiment | base s | this checkout s | speed-up | cells differing |",
        "|---|---:|---:|---:|---:|",
        *lines,
        f"| all | {total[0]:.1f} | {total[1]:.1f} | {total[0] / total[1]:.2f} | |",
        "",
    ])
    print(text)
    if args.out:
        args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
