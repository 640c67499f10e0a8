"""``flysearch compare`` as a user runs it: where it writes (--out), quick overrides, progress lines
without a terminal, and Ctrl-C / SIGTERM stopping the command and its worker processes."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import json
import os
import queue
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from flysearch.cli import main
from tests.conftest import REPO, hub_file
from tests.processes import PROC, descendants, gone_within, kill_all, spawned, survivors

RESULTS = REPO / "lab" / "benchmarks" / "results" / "compare"
PROGRESS = re.compile(r"^(\S+): (\d+)/(\d+) runs, \d+ s$")


def _experiment(tmp_path: Path, *, budget: int = 5, seeds: str = "1", samplers: tuple[str, ...] = ("random",),
                tables: tuple[str, ...] = ("A100",), output: str = "committed",
                sources: tuple[Path, ...] = ()) -> Path:
    """A small experiment file whose own output folder is *output* (beside it), over the
    dedispersion tables of *tables*' GPUs, or the table files *sources*."""
    body = [f'[experiment]\nname = "tiny"\nbudget = {budget}\nseeds = {seeds}\nworkers = 1\n'
            f'output = "{output}"\n']
    files = sources or tuple(hub_file("dedispersion_milo", gpu) for gpu in tables)
    body += [f'[[table]]\nsource = "{source}"\n' for source in files]
    body += [f'[[sampler]]\nname = "{name}"\n' for name in samplers]
    path = tmp_path / "tiny.toml"
    path.write_text("".join(body))
    return path


def _compare(*args: object) -> Result:
    return CliRunner().invoke(main, ["compare", *map(str, args)])


def _digests(folder: Path) -> dict[str, str]:
    """Every file under *folder* with the SHA-256 of its bytes."""
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _run_ids(results_db: Path) -> set[str]:
    with sqlite3.connect(results_db) as conn:
        return {row[0] for row in conn.execute("select id from runs")}


# -- --out ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_the_files_own_output_folder_is_left_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --out the results go to a new folder in the working directory; with --out, there."""
    path = _experiment(tmp_path)
    committed = tmp_path / "committed"
    committed.mkdir()
    for name, data in (("summary.md", b"# committed\n"), ("summary.csv", b"level\n"), ("curves.png", b"png")):
        (committed / name).write_bytes(data)
    before = _digests(committed)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)

    first = _compare(path)
    assert first.exit_code == 0, first.output
    out = work / "compare-tiny"
    assert {"results.db", "summary.md", "summary.csv"} <= {p.name for p in out.iterdir()}
    assert any(p.suffix == ".png" for p in out.iterdir())
    assert f"--out {out.name}" in (out / "summary.md").read_text()  # the provenance names it

    chosen = tmp_path / "chosen"
    second = _compare(path, "--out", chosen, "--no-plots")
    assert second.exit_code == 0, second.output
    assert {"results.db", "summary.md", "summary.csv"} <= {p.name for p in chosen.iterdir()}
    assert f"--out {chosen}" in (chosen / "summary.md").read_text()
    assert _digests(committed) == before

    again = _compare(path, "--out", chosen, "--no-plots")
    assert again.exit_code == 0 and "0 runs done" in again.output and "1 already stored" in again.output


def test_report_only_reads_the_out_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _experiment(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = _compare(path, "--report-only", "--no-plots")
    assert result.exit_code == 2 and "--out" in result.output  # nothing run here yet: say where to look
    assert not (tmp_path / "committed").exists()
    out = tmp_path / "o"
    assert _compare(path, "--out", out, "--no-plots").exit_code == 0
    (out / "summary.md").unlink()
    result = _compare(path, "--out", out, "--report-only", "--no-plots")
    assert result.exit_code == 0, result.output
    assert (out / "summary.md").is_file() and not (tmp_path / "committed").exists()
    # --json: the summary rows summary.csv holds, and the files written, on stdout alone
    shown = json.loads(_compare(path, "--out", out, "--report-only", "--no-plots", "--json").stdout)
    with (out / "summary.csv").open() as f:
        csv_rows = list(csv.DictReader(f))
    assert [r["sampler"] for r in shown["summary"]] == [r["sampler"] for r in csv_rows]
    assert {Path(p).name for p in shown["files"]} == {"summary.md", "summary.csv"}


def test_a_committed_experiment_with_overrides_leaves_the_repository_alone(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    hub_file("dedispersion_milo", "A100")
    study = REPO / "studies" / "compare_hub_dedispersion_A100.toml"
    committed = RESULTS / "compare_hub_dedispersion_A100"
    before = _digests(committed)
    assert before  # the committed summary and figures are there to protect
    monkeypatch.chdir(tmp_path)
    result = _compare(study, "--seeds", "0", "--budget", "5", "--samplers", "random", "--no-plots")
    assert result.exit_code == 0, result.output
    out = tmp_path / "compare-compare_hub_dedispersion_A100"
    assert _run_ids(out / "results.db") == {"dedispersion_milo/A100|random|seed=0|budget=5"}
    assert (out / "summary.md").is_file() and (out / "summary.csv").is_file()
    assert _digests(committed) == before


# -- overrides ------------------------------------------------------------------------------------


@pytest.mark.slow
def test_overrides_pick_seeds_budget_samplers_and_tables(tmp_path: Path) -> None:
    path = _experiment(tmp_path, budget=50, seeds="5", samplers=("random", "qmc"), tables=("A100", "MI250X"))
    out = tmp_path / "o"
    result = _compare(path, "--out", out, "--no-plots", "--seeds", "1-2", "--budget", "4",
                      "--samplers", "qmc,grid", "--tables", "MI250X")
    assert result.exit_code == 0, result.output
    table = "dedispersion_milo/MI250X"
    assert _run_ids(out / "results.db") == {f"{table}|{s}|seed={seed}|budget=4"
                                            for s in ("qmc", "grid") for seed in (1, 2)}
    summary = (out / "summary.md").read_text()
    assert "budget B = 4" in summary and "2 seeds" in summary and "dedispersion_milo/A100" not in summary
    assert "--seeds 1-2 --budget 4 --samplers qmc,grid --tables MI250X" in summary
    # a table by its position in the file, seeds as a list; the earlier runs stay stored
    result = _compare(path, "--out", out, "--no-plots", "--seeds", "0,3", "--budget", "4",
                      "--samplers", "random", "--tables", "1")
    assert result.exit_code == 0, result.output
    assert {i for i in _run_ids(out / "results.db") if "|random|" in i} == {
        f"dedispersion_milo/A100|random|seed={seed}|budget=4" for seed in (0, 3)}
    summary = (out / "summary.md").read_text()
    assert "| qmc |" not in summary and "MI250X" not in summary  # only the runs asked for this time


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--seeds", "3-1"], "--seeds '3-1': the range 3-1 runs backwards"),
        (["--seeds", "x"], "--seeds 'x' is not a list of seeds"),
        (["--seeds", "0,0"], "--seeds '0,0' repeats seed 0"),
        (["--seeds", ""], "--seeds '' is not a list of seeds"),
        (["--budget", "0"], "--budget must be a positive number of compiles"),
        (["--samplers", "nope"], "Unknown sampler 'nope' in --samplers"),
        (["--samplers", ","], "--samplers ',' names no sampler"),
        (["--tables", "H100"], "--tables 'H100' matches no table"),
        (["--tables", "3"], "--tables '3': there is no [[table]] #3"),
        (["--out", "tiny.toml"], "cannot be a folder"),
    ],
)
def test_bad_overrides_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, args: list[str],
                                    message: str) -> None:
    path = _experiment(tmp_path)
    monkeypatch.chdir(tmp_path)
    result = _compare(path, "--no-plots", *args)
    assert result.exit_code == 2, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error")]
    assert len(errors) == 1 and message in errors[0] and "Traceback" not in result.output, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tiny.toml"]  # nothing written


def test_seeds_syntax() -> None:
    from flysearch.compare import parse_seeds

    assert parse_seeds("0-4") == (0, 1, 2, 3, 4)
    assert parse_seeds("3") == (3,)
    assert parse_seeds(" 0, 2-3 ,9") == (0, 2, 3, 9)


# -- progress -------------------------------------------------------------------------------------


def test_progress_lines_without_a_terminal(tmp_path: Path) -> None:
    path = _experiment(tmp_path, seeds="2")
    result = _compare(path, "--out", tmp_path / "o", "--no-plots")
    assert result.exit_code == 0, result.output
    lines = [m.groups() for m in map(PROGRESS.match, result.stderr.splitlines()) if m]
    assert lines and lines[-1] == ("tiny", "2", "2")
    assert "\x1b" not in result.stderr  # no terminal control codes in a log


def test_progress_lines_are_at_most_one_per_interval() -> None:
    from flysearch.cli._progress import PlainProgress

    now = [0.0]
    lines: list[str] = []
    progress = PlainProgress("e", interval_s=5.0, clock=lambda: now[0], echo=lines.append)
    for done in range(20):
        now[0] += 1.0
        progress(done, 20, "")
        progress.tick()
    assert lines == [f"e: {n}/20 runs, {n + 1} s" for n in (0, 5, 10, 15)]
    now[0] += 30.0
    progress.tick()  # a long run: still a line every interval
    assert lines[-1] == "e: 19/20 runs, 50 s"
    now[0] += 1.0
    progress.finish()  # and one at the end
    assert lines[-1] == "e: 19/20 runs, 51 s" and len(lines) == 6


# -- stopping -------------------------------------------------------------------------------------


@contextlib.contextmanager
def _compare_process(path: Path, args: list[str]) -> Iterator[tuple[subprocess.Popen[str], dict[int, str]]]:
    """``flysearch compare`` of *path* started in a session of its own (stderr piped), and the dict
    the caller fills with the processes it started (:func:`tests.processes.descendants`); the end kills
    each one still there, so that a failed test leaves no process behind."""
    proc = subprocess.Popen([sys.executable, "-m", "flysearch", "compare", str(path), *args], cwd=path.parent,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    children: dict[int, str] = {}
    try:
        yield proc, children
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        kill_all(children)


# A committed table (lab/benchmarks/data), so that the stopping tests run wherever the repository is.
COMMITTED_TABLE = REPO / "lab/benchmarks/data/h100_coldstart8/triton_gemm__H100__128x2048x8192.table.json.gz"


@pytest.mark.skipif(not PROC, reason="reads processes from /proc")
@pytest.mark.parametrize(("signum", "code"),
                         [(signal.SIGTERM, 143), (signal.SIGINT, 130), (signal.SIGKILL, -signal.SIGKILL)])
def test_a_signal_stops_the_command_and_its_workers(tmp_path: Path, signum: int, code: int) -> None:
    """SIGTERM to the command, or Ctrl-C to its process group (as a terminal sends it), ends the
    command and every worker within 5 s; the runs stored by then are kept, and a rerun resumes.
    SIGKILL to the command alone (which it cannot see), as soon as its workers exist (starting up,
    importing: before they can run any code of their own), ends every process it started within 5 s
    too, and leaves its results database whole."""
    path = _experiment(tmp_path, budget=200, seeds="1", sources=(COMMITTED_TABLE,))
    out = tmp_path / "o"
    args = ["--out", str(out), "--no-plots", "--workers", "2", "--seeds", "0-399"]
    with _compare_process(path, args) as (proc, children):
        lines: queue.Queue[str] = queue.Queue()
        reader = threading.Thread(target=lambda: [lines.put(line) for line in proc.stderr], daemon=True)  # type: ignore[union-attr]
        reader.start()
        deadline, stored, workers = time.monotonic() + 300, 0, []
        while not ((stored >= 1 or signum == signal.SIGKILL) and len(workers) >= 2):
            assert time.monotonic() < deadline and proc.poll() is None, "the comparison never got going"
            try:
                m = PROGRESS.match(lines.get(timeout=1).strip())
                stored = max(stored, int(m.group(2))) if m else stored
            except queue.Empty:
                pass
            workers = spawned(descendants(proc.pid))
        children.update(descendants(proc.pid))  # the workers and multiprocessing's resource tracker
        start = time.monotonic()
        if signum == signal.SIGINT:
            os.killpg(proc.pid, signum)
        else:
            proc.send_signal(signum)
        assert proc.wait(timeout=30) == code
        elapsed = gone_within(children, 30, start)
        assert not survivors(children)
        assert elapsed < 5, f"took {elapsed:.1f} s to stop"
    reader.join(timeout=10)
    rest = []
    while not lines.empty():
        rest.append(lines.get())
    assert "Traceback" not in "".join(rest)
    with sqlite3.connect(out / "results.db") as conn:
        assert conn.execute("pragma integrity_check").fetchone()[0] == "ok"
        if signum == signal.SIGKILL:
            return
        seeds = sorted(int(s) for (s,) in conn.execute("select seed from runs"))
    assert any("stopped" in line.lower() for line in rest), rest
    assert 1 <= len(seeds) < 400
    more = next(s for s in range(400) if s not in seeds)
    again = _compare(path, *args[:-2], "--workers", "1", "--seeds", ",".join(map(str, [*seeds, more])))
    assert again.exit_code == 0, again.output
    assert "1 runs done" in again.output and f"{len(seeds)} already stored" in again.output


H200_TABLE = REPO / "lab" / "benchmarks" / "data" / "h200" / "triton_gemm__H200__256x1536x7168.table.json.gz"


@pytest.mark.slow
@pytest.mark.skipif(not PROC, reason="reads processes from /proc")
def test_a_worker_that_dies_is_one_line_that_says_how_and_the_same_command_resumes(tmp_path: Path) -> None:
    """A worker killed under the command (as the out-of-memory killer does) is no user error: one
    line says a worker died and how, every other worker is ended, exit code 1; a rerun resumes."""
    path = tmp_path / "k.toml"
    path.write_text(f'[experiment]\nname = "k"\nbudget = 200\nseeds = 1\n[[table]]\nsource = "{H200_TABLE}"\n'
                    '[[sampler]]\nname = "random"\n')
    out = tmp_path / "o"
    args = ["--out", str(out), "--no-plots", "--workers", "2", "--seeds", "0-399"]
    with _compare_process(path, args) as (proc, children):
        deadline = time.monotonic() + 300
        while len(workers := spawned(descendants(proc.pid))) < 2:
            assert time.monotonic() < deadline and proc.poll() is None, "the comparison started no workers"
            time.sleep(0.05)
        children.update(descendants(proc.pid))
        os.kill(workers[0], signal.SIGKILL)
        _, err = proc.communicate(timeout=60)
        gone_within(children, 30)  # the other worker and the resource tracker end too
        assert not survivors(children)
    errors = [line for line in err.splitlines() if line.startswith("Error")]
    assert proc.returncode == 1 and "Traceback" not in err, err
    assert errors == ["Error: A compare worker process died (killed by SIGKILL); the runs stored so far are "
                      "kept, and running the same command again resumes after them (SIGKILL is often the "
                      "kernel's out-of-memory killer: fewer --workers need less memory)."]
    seeds = sorted(int(re.search(r"\|seed=(\d+)\|", run).group(1)) for run in _run_ids(out / "results.db"))
    more = next(s for s in range(400) if s not in seeds)
    again = _compare(path, *args[:-4], "--workers", "1", "--seeds", ",".join(map(str, [*seeds, more])))
    assert again.exit_code == 0, again.output
    assert "1 runs done" in again.output and f"{len(seeds)} already stored" in again.output


def test_a_run_whose_sampler_raises_is_one_line_and_the_stored_runs_stay(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import optuna

    from flysearch.compare import _run
    from flysearch.samplers import _registry

    class Broken(optuna.samplers.RandomSampler):
        def sample_independent(self, *args: object) -> object:
            raise RuntimeError("the sampler broke")

    monkeypatch.setitem(_registry._BUILDERS, "random", lambda r: Broken(seed=r.seed))
    monkeypatch.setattr(_run, "runs_portable", lambda: True)  # one worker: runs in this process
    path = _experiment(tmp_path, budget=5, seeds="1", samplers=("grid", "random"))
    out = tmp_path / "o"
    result = _compare(path, "--out", out, "--workers", "1")
    assert result.exit_code == 2
    line = result.output.strip().splitlines()[-1]
    assert "Run dedispersion_milo/A100|random|seed=0|budget=5 failed: RuntimeError: the sampler broke" in line
    assert "Traceback" not in result.output
    assert {r.split("|")[1] for r in _run_ids(out / "results.db")} == {"grid"}
