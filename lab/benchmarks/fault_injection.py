"""Faults at random moments, and the invariants checked after each (issue 72, the fault-injection run).

Each fault runs in a fresh folder. A seeded random number generator picks a target, a moment and,
where several processes share one study or store, which of them are hit:

* **SIGKILL** or **SIGTERM** after a random delay (up to the command's usual length) of
  - ``flysearch study run``: a replayed study of a committed H200 table
    (``lab/benchmarks/data/h200``), ``random`` or ``tpe``, one process (*study*) or three processes on
    one SQLite study, same ``--name`` and ``--storage`` (*shared study*: one to three of them hit);
  - ``flysearch tune run``: a CPU kernel under ``@flysearch.autotune``, two processes on one untuned
    key of one store (*autotune*);
  - ``flysearch compare``: an experiment of 2 tables x 2 samplers x 2 seeds, 2 workers, with its
    figures (*compare*);
  - ``flysearch study run --evaluator simulated``: a live study on a CPU (a compile pool and a timer
    process playing a table back in real time; ``flysearch race`` has no path without a GPU), its
    report written with ``--json`` (*simulated live*);
  - ``flysearch model train`` writing over a good prior (*model train*);
  - ``flysearch export triton`` writing over an existing ``--out`` and ``--json`` (*export*);
* **disk full**: a study whose storage is on a tmpfs of a few MB filled to a random free space, so
  that SQLite's write fails at a random trial (without ``mount``, RLIMIT_FSIZE at that size with
  SIGXFSZ ignored: a write past it fails with EFBIG); then the space is freed.

Then the command is run again to completion, and these invariants are checked (the columns of
the report):

* *lost or repeated compile*: in every stored study the compiled trials carry compile indices
  1..n once each and no config key twice (read with :func:`flysearch.study.trial_records`); a live
  study's table holds a row for exactly its compiled configs; a comparison stores each run once;
* *budget*: a study's unique compiles equal its budget (a comparison's runs: at most the budget,
  and all of it unless the run stopped at the table's optimum);
* *RUNNING trial*: no trial of any stored study is left ``RUNNING``;
* *orphan*: every process descended from a killed one (found in ``/proc`` just before the kill)
  is gone 5 s after the killed process ended, and no process of the fault's sessions or with its
  folder as working directory is left once the rerun ends;
* *half-written file*: right after the kill, every output is absent or complete: SQLite files pass
  ``integrity_check``; a prior loads, JSON and Python parse, a PNG ends with its ``IEND`` chunk, an
  SVG parses; an overwritten file equals the old one or the new one, a comparison's summary the
  rerun's (digits aside: it reports wall times);
* *traceback*: no line ``Traceback`` on the standard error of a killed, surviving or rerun process;
* *exit or message*: survivors and reruns exit 0, a SIGTERM'd process stops within 30 s with 143
  (or -15 before its handler is installed), a command that met the full disk ends in one
  ``Error:`` line that says so;
* *result incomplete*: after the rerun the command's result is there: the tuned key's winner, the
  live study's finalists, every comparison run and figure, the new prior, the export.

A fault whose victims had all finished before the signal is *missed*: not counted, and drawn again.
Temporary files left by a SIGKILL (``.<name>.*.tmp`` of :mod:`flysearch._atomicfile`, a storage's
``*.new``) are counted, not violations. Run from the repository root (``OMP_NUM_THREADS=1``)::

    python lab/benchmarks/fault_injection.py --faults 200 --seed 0 \
        --out lab/benchmarks/results/fault_injection.md

It takes most of an hour on two cores. To run it in chunks (a shell whose commands are cut after a
few minutes), add ``--state run.json --minutes 8`` and repeat the same command until it exits with
something else than 3: each chunk starts no fault after 8 minutes, and the next one resumes from
the state file and draws what the whole run would have drawn (the state names its commit: code
changed in between starts a new run).
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import datetime as dt
import io
import json
import os
import platform
import random
import re
import resource
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

import optuna  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

from flysearch.compare import code_commit, host_description, load_runs  # noqa: E402
from flysearch.costmodel import load_prior  # noqa: E402
from flysearch.errors import FlysearchError  # noqa: E402
from flysearch.study import open_storage, summarize, trial_records  # noqa: E402
from flysearch.tables import TableStore, import_tables  # noqa: E402
from flysearch.tune import TuneStore, store_url  # noqa: E402

RESULTS = "lab/benchmarks/results"  # where the lab writes results: their changes are not code changes

TABLES = sorted((REPO / "lab" / "benchmarks" / "data" / "h200").glob("*.table.json.gz"))

LOST, BUDGET, RUNNING, ORPHAN, HALF, TRACEBACK, EXIT, INCOMPLETE = (
    "lost or repeated compile", "budget", "RUNNING trial", "orphan", "half-written file", "traceback",
    "exit or message", "result incomplete")
INVARIANTS = (LOST, BUDGET, RUNNING, ORPHAN, HALF, TRACEBACK, EXIT, INCOMPLETE)
SIGKILL, SIGTERM, DISK = "SIGKILL", "SIGTERM", "disk full"

ORPHAN_S = 5.0  # a killed process's descendants must be gone this long after it ended
TERM_S = 30.0  # a SIGTERM'd process must stop within this
WAIT_S = 300.0  # any other process must end within this
TMPFS_BYTES = 8 << 20  # the full disk: SQLite's WAL grows to ~4 MB before a checkpoint


# -- processes -------------------------------------------------------------------------------------

def _stat(pid: int) -> tuple[str, int, int, str] | None:
    """``(state, ppid, session, starttime)`` of *pid* from ``/proc``, or ``None`` once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[3]), fields[19]


def _all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def descendants(root: int) -> dict[int, str]:
    """Every process whose parent chain leads to *root*: pid -> its start time (a pid reused by a
    newer process is not the same process)."""
    children: dict[int, list[int]] = {}
    starts: dict[int, str] = {}
    for pid in _all_pids():
        stat = _stat(pid)
        if stat is not None:
            children.setdefault(stat[1], []).append(pid)
            starts[pid] = stat[3]
    out, todo = {}, list(children.get(root, []))
    while todo:
        pid = todo.pop()
        if pid in starts and pid not in out:
            out[pid] = starts[pid]
            todo.extend(children.get(pid, []))
    return out


def alive(pid: int, start: str) -> bool:
    """Whether process *pid* started at *start* is still running (a zombie has ended)."""
    stat = _stat(pid)
    return stat is not None and stat[3] == start and stat[0] != "Z"


def leftovers(folder: Path, sessions: set[int]) -> dict[int, str]:
    """Processes of the fault: in one of its *sessions* (each command starts its own) or working
    in *folder*; pid -> its start time."""
    out = {}
    me = os.getpid()
    for pid in _all_pids():
        stat = _stat(pid)
        if pid == me or stat is None or stat[0] == "Z":
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            cwd = ""
        if stat[2] in sessions or cwd == str(folder) or cwd.startswith(f"{folder}/"):
            out[pid] = stat[3]
    return out


def command_line(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:160]
    except OSError:
        return "?"


def still_alive(procs: dict[int, str], within_s: float) -> dict[int, str]:
    """Those of *procs* (pid -> start time) still alive after waiting up to *within_s* for them."""
    deadline = time.monotonic() + within_s
    while True:
        left = {pid: start for pid, start in procs.items() if alive(pid, start)}
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.05)


def kill_all(procs: dict[int, str]) -> None:
    """SIGKILL *procs* (pid -> start time) and wait until they are gone."""
    for pid, start in procs.items():
        if alive(pid, start):
            with _quiet():
                os.kill(pid, signal.SIGKILL)
    still_alive(procs, 10.0)


def _ignore_sigxfsz(limit: int | None) -> Callable[[], None]:
    def setup() -> None:
        if limit is not None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return setup


@dataclass
class Proc:
    """One command of a fault, its output in files beside it."""

    tag: str
    argv: list[str]
    popen: subprocess.Popen[bytes]
    out: Path
    err: Path
    started: float
    ended: float | None = None

    @classmethod
    def start(cls, tag: str, argv: list[str], folder: Path, fsize: int | None = None) -> Proc:
        logs = folder / "logs"
        logs.mkdir(exist_ok=True)
        out, err = logs / f"{tag}.out", logs / f"{tag}.err"
        with out.open("wb") as fo, err.open("wb") as fe:
            popen = subprocess.Popen(argv, cwd=folder, stdout=fo, stderr=fe, stdin=subprocess.DEVNULL,
                                     env=_env(), start_new_session=True,
                                     preexec_fn=_ignore_sigxfsz(fsize) if fsize else None)
        return cls(tag, argv, popen, out, err, time.monotonic())

    def wait(self, timeout: float) -> int | None:
        try:
            rc = self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            return None
        if self.ended is None:
            self.ended = time.monotonic()
        return rc

    def seconds(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def text(self) -> str:
        return self.err.read_text(errors="replace") + self.out.read_text(errors="replace")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FLYSEARCH_DEBUG", "FLYSEARCH_AUTOTUNE_DB")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    env.setdefault("OMP_NUM_THREADS", "1")
    env["COLUMNS"] = "200"
    return env


def flysearch(*args: str) -> list[str]:
    return [sys.executable, "-m", "flysearch", *args]


# -- the checks --------------------------------------------------------------------------------------

class Found:
    """The violations of one fault: invariant -> count, and the first example of each."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.why: dict[str, str] = {}

    def add(self, invariant: str, why: str) -> None:
        self.counts[invariant] += 1
        self.why.setdefault(invariant, why)

    def check(self, ok: bool, invariant: str, why: str) -> None:
        if not ok:
            self.add(invariant, why)


def sqlite_sound(path: Path) -> str:
    """``""`` if *path* is a sound SQLite file (its ``integrity_check`` says ok), else why not."""
    try:
        conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=30)
        try:
            rows = conn.execute("pragma integrity_check").fetchall()
        finally:
            conn.close()
    except sqlite3.Error as exc:
        return f"{path.name}: {exc}"
    return "" if rows == [("ok",)] else f"{path.name}: {rows[:3]}"


def check_databases(folder: Path, found: Found) -> None:
    """Every SQLite file under *folder* (its WAL and journal aside) is sound."""
    for path in sorted(folder.rglob("*.db")):
        why = sqlite_sound(path)
        found.check(not why, HALF, why)


def python_parses(data: bytes) -> bool:
    try:
        ast.parse(data.decode())
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return False
    return True


def json_parses(data: bytes) -> bool:
    try:
        json.loads(data)
    except ValueError:
        return False
    return True


def png_whole(data: bytes) -> bool:
    return data.startswith(b"\x89PNG\r\n\x1a\n") and data[-12:-8] == b"\0\0\0\0" and data[-8:-4] == b"IEND"


def svg_parses(data: bytes) -> bool:
    try:
        ElementTree.fromstring(data)
    except ElementTree.ParseError:
        return False
    return True


def masked(text: str) -> str:
    """*text* with every run of digits as ``#``: a report's wall times differ run to run."""
    return re.sub(r"\d+", "#", text)


def prior_loads(path: Path) -> str:
    try:
        prior = load_prior(path)
    except FlysearchError as exc:
        return str(exc)
    return "" if prior.schema else f"{path.name} has no schema"


def check_study_storage(url: str, found: Found, *, budget: int | None = None) -> int:
    """The invariants of every study stored at *url*; the number of studies."""
    storage = open_storage(url, create=False)
    try:
        studies = storage.get_all_studies()
        for frozen in studies:
            study = optuna.load_study(study_name=frozen.study_name, storage=storage)
            running = study.get_trials(deepcopy=False, states=(TrialState.RUNNING,))
            found.check(not running, RUNNING, f"{frozen.study_name}: {len(running)} trials RUNNING")
            compiled = [(r.compile_index, r.key) for _t, r in trial_records(study)
                        if r.compile_index is not None and r.duplicate_of is None]
            indices = sorted(i for i, _ in compiled)
            keys = Counter(k for _, k in compiled)
            found.check(indices == list(range(1, len(indices) + 1)), LOST,
                        f"{frozen.study_name}: compile indices {indices}")
            twice = [k for k, n in keys.items() if n > 1]
            found.check(not twice, LOST, f"{frozen.study_name}: compiled twice: {twice[:2]}")
            want = budget or summarize(study).settings.get("budget")
            found.check(len(compiled) == want, BUDGET,
                        f"{frozen.study_name}: {len(compiled)} compiles, budget {want}")
    finally:
        _dispose(storage)
    return len(studies)


def _dispose(storage: Any) -> None:
    """Close a storage's connections (a folder on a tmpfs must be unmounted after)."""
    engine = getattr(storage, "engine", None)
    if engine is not None:
        engine.dispose()


def compiled_keys(url: str) -> set[str]:
    storage = open_storage(url, create=False)
    try:
        out = set()
        for frozen in storage.get_all_studies():
            study = optuna.load_study(study_name=frozen.study_name, storage=storage)
            out |= {r.key for _t, r in trial_records(study) if r.compile_index is not None}
        return out
    finally:
        _dispose(storage)


def check_tracebacks(procs: list[Proc], found: Found) -> None:
    for p in procs:
        text = p.text()
        if "Traceback" in text:
            line = next(t for t in text.splitlines() if "Traceback" in t)
            tail = text[text.index(line):].strip().splitlines()[-1]
            found.add(TRACEBACK, f"{p.tag}: {tail[:200]}")


def stray_files(folder: Path) -> int:
    """Temporary files a killed write left: ``.<name>.*.tmp`` (atomic writes), ``*.new`` (a
    storage being built)."""
    return sum(1 for p in folder.rglob("*") if p.is_file() and "logs" not in p.parts
               and ((p.name.startswith(".") and p.name.endswith(".tmp")) or p.name.endswith(".new")))


# -- the targets -----------------------------------------------------------------------------------

@dataclass
class Plan:
    """What one fault runs: the concurrent commands (the first *victims* of them are hit), the
    command run again after, and what the checks need."""

    commands: list[list[str]]
    rerun: list[str]
    state: dict[str, Any] = field(default_factory=dict)


class Target:
    """A command to hit: how its folder is made, and what is checked after the kill and the rerun."""

    name = ""
    guess_s = 5.0  # the command's length before one is measured
    outputs: tuple[str, ...] = ()  # files it writes over: half its faults hit while one is written

    def __init__(self, base: Base) -> None:
        self.base = base

    def plan(self, folder: Path, rng: random.Random) -> Plan:
        raise NotImplementedError

    def after_kill(self, folder: Path, plan: Plan, found: Found) -> None:
        check_databases(folder, found)

    def after_rerun(self, folder: Path, plan: Plan, found: Found) -> None:
        raise NotImplementedError


@dataclass
class Base:
    """What every fault starts from, made once in *folder*: a table database of the committed
    tables, and (when first asked) a good prior and an export to write over."""

    folder: Path
    made: dict[str, Any] = field(default_factory=dict)

    def once(self, name: str, make: Callable[[Path], Any]) -> Any:
        if name not in self.made:
            self.made[name] = make(self.folder)
        return self.made[name]

    @property
    def db(self) -> Path:
        def make(folder: Path) -> Path:
            import_tables([str(t) for t in TABLES], db=folder / "tables.db")
            return folder / "tables.db"
        return self.once("db", make)


def one_table(path: Path, db: Path) -> str:
    """Import the table file *path* into *db*; its name."""
    return import_tables([str(path)], db=db)[0].tables[0].name


class ReplayStudy(Target):
    name = "study"
    guess_s = 4.0
    processes = 1
    budget = 20

    def plan(self, folder: Path, rng: random.Random) -> Plan:
        table = one_table(rng.choice(TABLES), folder / "tables.db")
        url = f"sqlite:///{self.storage_path(folder)}"
        command = flysearch("study", "run", "--table", table, "--db", "tables.db", "--storage", url,
                            "--sampler", rng.choice(["random", "tpe"]), "--seed", str(rng.randrange(1000)),
                            "--budget", str(self.budget), "--name", "fi")
        return Plan([command] * self.processes, command, {"url": url})

    def storage_path(self, folder: Path) -> Path:
        return folder / "studies.db"

    def after_rerun(self, folder: Path, plan: Plan, found: Found) -> None:
        n = check_study_storage(plan.state["url"], found, budget=self.budget)
        found.check(n == 1, INCOMPLETE, f"{n} studies stored")


class SharedStudy(ReplayStudy):
    name = "shared study (3 processes)"
    guess_s = 7.0
    processes = 3
    budget = 30


class DiskStudy(ReplayStudy):
    name = "study"
    guess_s = 4.0

    def storage_path(self, folder: Path) -> Path:
        return folder / "disk" / "studies.db"


WORKLOAD = '''"""A CPU kernel under @flysearch.autotune (what the fault-injection run tunes)."""
import numpy as np

import flysearch

SPACE = {"chunk": [64, 128, 256, 512, 1024, 2048], "unroll": [1, 2, 4, 8]}


def reference(x, out, n, **_):
    return x * 2


@flysearch.autotune(space=SPACE, key=["n"], reference=reference, outputs=["out"], budget=%d, finalists=2,
                    rounds=2, warmup=1, rep=1)
def scale(x, out, n, chunk, unroll):
    for i in range(0, n, chunk):
        out[i:i + chunk] = x[i:i + chunk] * 2


def workload(n):
    x = np.arange(float(n))
    scale(x, np.empty(n), n)
'''


class Autotune(Target):
    name = "autotune (2 processes, 1 key)"
    guess_s = 10.0
    budget = 10

    def plan(self, folder: Path, rng: random.Random) -> Plan:
        (folder / "work.py").write_text(WORKLOAD % self.budget)
        n = rng.choice([1024, 2048, 4096, 8192])
        (folder / "keys.toml").write_text(f"[[key]]\nn = {n}\n")
        command = flysearch("tune", "run", "work.py:workload", "--keys", "keys.toml", "--store", "store.db")
        return Plan([command, command], command, {"url": store_url(folder / "store.db")})

    def after_rerun(self, folder: Path, plan: Plan, found: Found) -> None:
        store = TuneStore(plan.state["url"])
        try:
            tuned = store.tuned()
        finally:
            store.close()
        found.check(len(tuned) == 1 and tuned[0].state == "done" and tuned[0].config is not None, INCOMPLETE,
                    f"store holds {[(t.key, t.state) for t in tuned]}")
        check_study_storage(plan.state["url"], found, budget=self.budget)


EXPERIMENT = """[experiment]
name = "faults"
budget = {budget}
seeds = 2
workers = 2
output = "out"

[[table]]
source = "{a}"

[[table]]
source = "{b}"

[[sampler]]
name = "random"

[[sampler]]
name = "tpe"
"""


class Compare(Target):
    name = "compare (2 workers)"
    guess_s = 12.0
    budget = 10
    runs = 8  # 2 tables x 2 samplers x 2 seeds

    def plan(self, folder: Path, rng: random.Random) -> Plan:
        a, b = rng.sample(TABLES, 2)
        (folder / "exp.toml").write_text(EXPERIMENT.format(budget=self.budget, a=a, b=b))
        command = flysearch("compare", "exp.toml", "--out", "out")
        return Plan([command], command)

    def after_kill(self, folder: Path, plan: Plan, found: Found) -> None:
        super().after_kill(folder, plan, found)
        out = folder / "out"
        plan.state["killed"] = {p.name: p.read_bytes() for p in out.glob("*") if p.is_file()}

    def after_rerun(self, folder: Path, plan: Plan, found: Found) -> None:
        out = folder / "out"
        runs = load_runs(out / "results.db")
        cells = Counter((r["table_label"], r["sampler"], r["seed"]) for r in runs)
        found.check(len(cells) == self.runs and set(cells.values()) == {1}, LOST,
                    f"{len(runs)} runs stored of {self.runs}: {sorted(cells.values())}")
        for r in runs:
            spent = r["compiles"] == self.budget or (r["compiles"] < self.budget and r["stopped"])
            found.check(spent, BUDGET, f"run {r['id']}: {r['compiles']} compiles, budget {self.budget}, "
                        f"stopped {r['stopped']!r}")
        final = {p.name: p.read_bytes() for p in out.glob("*") if p.is_file()}
        figures = [n for n in final if n.endswith((".png", ".svg"))]
        found.check({"summary.md", "summary.csv"} <= set(final) and len(figures) >= 2, INCOMPLETE,
                    f"outputs {sorted(final)}")
        for name, data in final.items():
            found.check(_whole(name, data), INCOMPLETE, f"{name} is not whole after the rerun")
        for name, data in plan.state.get("killed", {}).items():
            if name.startswith(".") or name == "results.db":
                continue
            ok = _whole(name, data)
            if ok and name.endswith((".md", ".csv")) and name in final:
                ok = masked(data.decode(errors="replace")) == masked(final[name].decode(errors="replace"))
            found.check(ok, HALF, f"{name} after the kill ({len(data)} bytes) is not a whole file")


def _whole(name: str, data: bytes) -> bool:
    if name.endswith(".png"):
        return png_whole(data)
    if name.endswith(".svg"):
        return svg_parses(data)
    if name.endswith(".csv"):
        try:
            rows = list(csv.reader(io.StringIO(data.decode())))
        except (UnicodeDecodeError, csv.Error):
            return False
        return len(rows) > 1 and len({len(r) for r in rows}) == 1
    if name.endswith(".md"):
        return data.endswith(b"\n") and data.startswith(b"# ")
    return True


class SimulatedLive(Target):
    name = "simulated live study"
    guess_s = 9.0
    budget = 12

    def plan(self, folder: Path, rng: random.Random) -> Plan:
        table = one_table(rng.choice(TABLES), folder / "tables.db")
        command = flysearch("study", "run", "--evaluator", "simulated", "--table", table, "--db",
                            "tables.db", "--storage", "sqlite:///studies.db", "--sampler",
                            rng.choice(["random", "tpe-unseen"]), "--seed", str(rng.randrange(1000)),
                            "--budget", str(self.budget), "--scale", "0.05", "--finalists", "2", "--rounds",
                            "2", "--compile-workers", "1", "--json", "report.json", "--name", "fi")
        return Plan([command], command, {"url": f"sqlite:///{folder / 'studies.db'}"})

    def after_kill(self, folder: Path, plan: Plan, found: Found) -> None:
        super().after_kill(folder, plan, found)
        report = folder / "report.json"
        found.check(not report.exists() or json_parses(report.read_bytes()), HALF,
                    "report.json does not parse")

    def after_rerun(self, folder: Path, plan: Plan, found: Found) -> None:
        url = plan.state["url"]
        check_study_storage(url, found, budget=self.budget)
        keys = compiled_keys(url)
        store = TableStore(folder / "tables.db")
        try:
            live = [n for n in store.names() if n.startswith("live/")]
            rows = set(store.load(live[0]).rows) if len(live) == 1 else set()
        finally:
            store.close()
        found.check(rows == keys, LOST, f"live table rows {len(rows)}, compiled configs {len(keys)}, "
                    f"{len(rows ^ keys)} differ")
        storage = open_storage(url, create=False)
        try:
            finalists = [summarize(optuna.load_study(study_name=s.study_name, storage=storage)).finalists
                         for s in storage.get_all_studies()]
        finally:
            _dispose(storage)
        found.check(len(finalists) == 1 and bool(finalists[0]), INCOMPLETE, "no finalists stored")
        report = folder / "report.json"
        found.check(report.exists() and json_parses(report.read_bytes()), INCOMPLETE, "report.json missing")


class ModelTrain(Target):
    name = "model train (over a prior)"
    guess_s = 7.0
    outputs = ("prior.joblib",)

    def old_prior(self) -> bytes:
        def make(folder: Path) -> bytes:
            out = folder / "good.joblib"
            subprocess.run(flysearch("model", "train", "--file", str(TABLES[0]), "--file", str(TABLES[1]),
                                     "--out", str(out)), check=True, capture_output=True, env=_env())
            return out.read_bytes()
        return self.base.once("prior", make)

    def plan(self, folder: Path, rng: random.Random) -> Plan:
        (folder / "prior.joblib").write_bytes(self.old_prior())
        files = rng.sample(TABLES[2:], 2)
        command = flysearch("model", "train", "--file", str(files[0]), "--file", str(files[1]), "--out",
                            "prior.joblib")
        return Plan([command], command, {"tables": len(files)})

    def after_kill(self, folder: Path, plan: Plan, found: Found) -> None:
        path = folder / "prior.joblib"
        if not path.exists():
            found.add(HALF, "the old prior is gone")
            return
        if path.read_bytes() != self.old_prior():
            why = prior_loads(path)
            found.check(not why, HALF, f"prior after the kill: {why[:200]}")

    def after_rerun(self, folder: Path, plan: Plan, found: Found) -> None:
        path = folder / "prior.joblib"
        why = prior_loads(path) if path.exists() else "missing"
        found.check(not why and path.read_bytes() != self.old_prior(), INCOMPLETE,
                    f"prior after the rerun: {why or 'the old one'}")


class ExportTriton(Target):
    name = "export triton (over a file)"
    guess_s = 4.0
    outputs = ("best.py", "best.json")

    def files(self) -> dict[str, dict[str, bytes]]:
        """The old files (one table's export) and the new ones (every table's, top 3)."""
        def make(folder: Path) -> dict[str, dict[str, bytes]]:
            out = {}
            for kind, extra in (("old", ["--prefix", "triton_gemm/H200/1x"]), ("new", ["--top", "3"])):
                where = folder / f"export-{kind}"
                where.mkdir()
                subprocess.run(flysearch("export", "triton", "--db", str(self.base.db), *extra, "--out",
                                         str(where / "best.py"), "--json", str(where / "best.json")),
                               check=True, capture_output=True, env=_env())
                out[kind] = {p.name: p.read_bytes() for p in where.iterdir()}
            return out
        return self.base.once("export", make)

    def plan(self, folder: Path, rng: random.Random) -> Plan:
        shutil.copy(self.base.db, folder / "tables.db")
        for name, data in self.files()["old"].items():
            (folder / name).write_bytes(data)
        command = flysearch("export", "triton", "--db", "tables.db", "--top", "3", "--out", "best.py",
                            "--json", "best.json")
        return Plan([command], command)

    def after_kill(self, folder: Path, plan: Plan, found: Found) -> None:
        super().after_kill(folder, plan, found)
        files = self.files()
        for name in ("best.py", "best.json"):
            path = folder / name
            data = path.read_bytes() if path.exists() else None
            what = "gone" if data is None else f"{len(data)} bytes, neither the old file nor the new"
            found.check(data in (files["old"][name], files["new"][name]), HALF,
                        f"{name} after the kill: {what}")

    def after_rerun(self, folder: Path, plan: Plan, found: Found) -> None:
        new = self.files()["new"]
        for name in ("best.py", "best.json"):
            path = folder / name
            data = path.read_bytes() if path.exists() else b""
            found.check(data == new[name], INCOMPLETE, f"{name} after the rerun is not the export")
            parses = python_parses if name.endswith(".py") else json_parses
            found.check(parses(data), INCOMPLETE, f"{name} does not parse")


# -- one fault -------------------------------------------------------------------------------------

@dataclass
class Result:
    kind: str
    target: str
    found: Found
    seconds: float
    moment: str = "at random"
    rerun_s: float = 0.0
    message: str = ""  # the full disk's error line
    stray: int = 0
    orphans: list[str] = field(default_factory=list)


def _until_written(folder: Path, outputs: tuple[str, ...], procs: list[Proc], limit_s: float) -> None:
    """Return once one of *outputs* in *folder* (or a temporary file beside it) changes, or the
    commands end, or *limit_s* has passed."""
    def snapshot() -> dict[str, int]:
        out = {}
        for entry in os.scandir(folder):
            if any(entry.name == o or (entry.name.startswith(f".{o}.") and entry.name.endswith(".tmp"))
                   for o in outputs):
                with contextlib.suppress(FileNotFoundError):  # a temporary file renamed away meanwhile
                    out[entry.name] = entry.stat().st_mtime_ns
        return out

    before = snapshot()
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and any(p.popen.poll() is None for p in procs):
        if snapshot() != before:
            return
        time.sleep(0.002)


def _stop(procs: list[Proc]) -> None:
    for p in procs:
        if p.popen.poll() is None:
            with _quiet():
                os.killpg(p.popen.pid, signal.SIGKILL)
        p.popen.wait()


@contextmanager
def _quiet() -> Iterator[None]:
    try:
        yield
    except ProcessLookupError:
        pass


def _reap_leftovers(folder: Path, procs: list[Proc], found: Found, result: Result, when: str) -> None:
    """Processes of the fault still there: an orphan violation each time any are found; they are
    killed so that the run goes on."""
    left = still_alive(leftovers(folder, {p.popen.pid for p in procs}), ORPHAN_S)
    if left:
        cmds = [command_line(pid) for pid in left]
        found.add(ORPHAN, f"{len(left)} processes left {ORPHAN_S:.0f} s {when}: {cmds[0]}")
        result.orphans += [f"{when}: {cmd}" for cmd in cmds]
        kill_all(left)


def kill_fault(target: Target, kind: str, folder: Path, rng: random.Random, est_s: float) -> Result | float:
    """Run *target*'s commands, hit some of them with *kind* after a random delay, check, rerun,
    check. A float instead of a result: the fault missed (the victims had finished), and how long
    they took."""
    plan = target.plan(folder, rng)
    procs = [Proc.start(f"p{i}", cmd, folder) for i, cmd in enumerate(plan.commands)]
    victims = rng.sample(procs, rng.randint(1, len(procs)))
    sig = signal.SIGKILL if kind == SIGKILL else signal.SIGTERM
    if target.outputs and rng.random() < 0.5:
        result = Result(kind, target.name, Found(), 0.0, moment="while writing")
        _until_written(folder, target.outputs, procs, 3 * est_s)
    else:
        result = Result(kind, target.name, Found(), 0.0)
        time.sleep(rng.uniform(0.0, 1.25 * est_s))
    found = result.found
    tree: dict[int, str] = {}
    hit = []
    for v in victims:
        if v.popen.poll() is None:
            tree |= descendants(v.popen.pid)
            with _quiet():
                os.kill(v.popen.pid, sig)
            hit.append(v)
    for v in victims:
        rc = v.wait(TERM_S)
        if rc is None:
            found.add(EXIT, f"{v.tag} did not stop within {TERM_S:.0f} s of {kind}")
            _stop([v])
    landed = [v for v in hit if v.popen.returncode != 0]
    if not landed:
        _stop(procs)
        return max(v.seconds() for v in victims)
    orphans = still_alive(tree, ORPHAN_S)
    if orphans:
        cmds = [command_line(pid) for pid in orphans]
        found.add(ORPHAN, f"{len(orphans)} descendants alive {ORPHAN_S:.0f} s after {kind}: {cmds[0]}")
        result.orphans += [f"after {kind}: {c}" for c in cmds]
        kill_all(orphans)
    for v in landed:
        expected = (-signal.SIGKILL,) if kind == SIGKILL else (128 + signal.SIGTERM, -signal.SIGTERM)
        found.check(v.popen.returncode in expected, EXIT, f"{v.tag} exited {v.popen.returncode} after {kind}")
    for p in procs:
        if p not in victims:
            rc = p.wait(WAIT_S)
            found.check(rc == 0, EXIT, f"surviving {p.tag} exited {rc}: {_last_line(p)}")
    _stop(procs)
    _reap_leftovers(folder, procs, found, result, "after the kill")
    target.after_kill(folder, plan, found)
    rerun = Proc.start("rerun", plan.rerun, folder)
    rc = rerun.wait(WAIT_S)
    result.rerun_s = rerun.seconds()
    found.check(rc == 0, EXIT, f"the rerun exited {rc}: {_last_line(rerun)}")
    _stop([rerun])
    _reap_leftovers(folder, [*procs, rerun], found, result, "after the rerun")
    if rc == 0:
        target.after_rerun(folder, plan, found)
    check_tracebacks([*procs, rerun], found)
    result.stray = stray_files(folder)
    return result


def _last_line(p: Proc) -> str:
    lines = [line for line in p.err.read_text(errors="replace").splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


@contextmanager
def small_disk(folder: Path, free: int, mount: bool) -> Iterator[int | None]:
    """*folder* as a tmpfs of :data:`TMPFS_BYTES` with *free* bytes left (yields ``None``); where
    ``mount`` is not allowed (or not *mount*), a plain folder and the RLIMIT_FSIZE (*free*) to run
    under."""
    folder.mkdir()
    mounted = mount and subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={TMPFS_BYTES}", "tmpfs",
                                        str(folder)], capture_output=True).returncode == 0
    try:
        if mounted:
            with (folder / "filler").open("wb") as fh:
                fh.truncate(0)
                fh.write(b"\0" * (TMPFS_BYTES - free))
            yield None
        else:
            yield free
    finally:
        if mounted:
            for _ in range(50):
                if subprocess.run(["umount", str(folder)], capture_output=True).returncode == 0:
                    break
                time.sleep(0.1)


def disk_fault(target: Target, folder: Path, rng: random.Random, mount: bool) -> Result | float:
    """A study whose storage's disk fills at a random trial; then the space is freed and the same
    command runs again."""
    result = Result(DISK, target.name, Found(), 0.0)
    found = result.found
    free = rng.randrange(64 << 10, 3 << 20)
    plan = target.plan(folder, rng)
    disk = folder / "disk"
    with small_disk(disk, free, mount) as fsize:
        first = Proc.start("full", plan.commands[0], folder, fsize=fsize)
        rc = first.wait(WAIT_S)
        _stop([first])
        if rc == 0:
            return first.seconds()
        errors = [line for line in first.err.read_text(errors="replace").splitlines()
                  if line.startswith("Error:")]
        # One line that names the full disk, and does not call the database damaged or foreign.
        says = (len(errors) == 1 and re.search(r"full|No space|too large|I/O error", errors[0]) is not None
                and "is it a flysearch" not in errors[0])
        found.check(rc in (1, 2) and says, EXIT, f"exit {rc}, {errors or _last_line(first)}")
        said = errors[0] if errors else _last_line(first)
        result.message = f"exit {rc}: " + said.replace(str(folder), "DIR")
        (disk / "filler").unlink(missing_ok=True)
        _reap_leftovers(folder, [first], found, result, "after the full disk")
        target.after_kill(folder, plan, found)
        rerun = Proc.start("rerun", plan.rerun, folder)
        rc = rerun.wait(WAIT_S)
        result.rerun_s = rerun.seconds()
        found.check(rc == 0, EXIT, f"the rerun exited {rc}: {_last_line(rerun)}")
        _stop([rerun])
        _reap_leftovers(folder, [first, rerun], found, result, "after the rerun")
        if rc == 0:
            target.after_rerun(folder, plan, found)
        check_tracebacks([first, rerun], found)
        result.stray = stray_files(folder)
    return result


# -- the run ---------------------------------------------------------------------------------------

TARGETS: dict[str, type[Target]] = {
    "study": ReplayStudy, "shared": SharedStudy, "autotune": Autotune, "compare": Compare,
    "simulated": SimulatedLive, "model": ModelTrain, "export": ExportTriton, "disk": DiskStudy,
}
# (fault kind, target) -> share of the faults: the cheap commands get more.
CELLS: dict[tuple[str, str], float] = {
    (SIGKILL, "study"): 2, (SIGTERM, "study"): 2, (SIGKILL, "shared"): 2, (SIGTERM, "shared"): 2,
    (SIGKILL, "autotune"): 0.75, (SIGTERM, "autotune"): 0.75, (SIGKILL, "compare"): 0.5,
    (SIGTERM, "compare"): 0.5, (SIGKILL, "simulated"): 1, (SIGTERM, "simulated"): 1,
    (SIGKILL, "model"): 0.75, (SIGTERM, "model"): 0.75, (SIGKILL, "export"): 1.5, (SIGTERM, "export"): 1.5,
    (DISK, "disk"): 2,
}


def schedule(faults: int, targets: list[str], seed: int) -> list[tuple[str, str]]:
    """*faults* cells of :data:`CELLS` (those of *targets*), each as often as its share says (largest
    remainders), in a seeded random order."""
    cells = {c: w for c, w in CELLS.items() if c[1] in targets}
    total = sum(cells.values())
    exact = {c: faults * w / total for c, w in cells.items()}
    counts = {c: int(x) for c, x in exact.items()}
    for c in sorted(cells, key=lambda c: counts[c] - exact[c])[: faults - sum(counts.values())]:
        counts[c] += 1
    order = [c for c, n in counts.items() for _ in range(n)]
    random.Random(seed).shuffle(order)
    return order


def _result_dict(r: Result) -> dict[str, Any]:
    return {"kind": r.kind, "target": r.target, "counts": dict(r.found.counts), "why": r.found.why,
            "seconds": r.seconds, "moment": r.moment, "rerun_s": r.rerun_s, "message": r.message,
            "stray": r.stray, "orphans": r.orphans}


def _result_from(d: dict[str, Any]) -> Result:
    found = Found()
    found.counts.update(d["counts"])
    found.why.update(d["why"])
    return Result(d["kind"], d["target"], found, d["seconds"], moment=d["moment"], rerun_s=d["rerun_s"],
                  message=d["message"], stray=d["stray"], orphans=list(d["orphans"]))


@dataclass
class Progress:
    """Where a run stands between its faults: what a run cut into chunks (``--state``) saves after
    each fault and resumes from, so that the next chunk draws exactly what the whole run would."""

    key: dict[str, Any]  # what the run is (faults, seed, targets, the full disk's kind, the commit)
    rng: random.Random
    queue: list[tuple[str, str]]
    est: dict[str, float]
    i: int = 0  # faults drawn, the missed included (each fault's folder number)
    results: list[Result] = field(default_factory=list)
    missed: Counter[str] = field(default_factory=Counter)
    seconds: float = 0.0  # the chunks before this one
    load: float = 0.0  # the load average when the run started
    chunks: int = 0

    def save(self, path: Path, seconds: float) -> None:
        """Write the progress to *path*, whole or not at all; *seconds*: this chunk's so far."""
        state = self.rng.getstate()
        data = {"key": self.key, "rng": [state[0], list(state[1]), state[2]], "queue": self.queue,
                "est": self.est, "i": self.i, "results": [_result_dict(r) for r in self.results],
                "missed": dict(self.missed), "seconds": self.seconds + seconds, "load": self.load,
                "chunks": self.chunks + 1}
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, path)

    @classmethod
    def load_from(cls, path: Path, key: dict[str, Any]) -> Progress:
        data = json.loads(path.read_text())
        if data["key"] != key:
            raise SystemExit(f"{path} holds another run ({data['key']}, not {key}); remove it to start "
                             "this one")
        rng = random.Random()
        version_, internal, gauss = data["rng"]
        rng.setstate((version_, tuple(internal), gauss))
        return cls(key, rng, [tuple(c) for c in data["queue"]], data["est"], data["i"],
                   [_result_from(r) for r in data["results"]], Counter(data["missed"]), data["seconds"],
                   data["load"], data["chunks"])


def run(faults: int, seed: int, targets: list[str], *, keep: Path | None = None, mount: bool = True,
        log: Callable[[str], None] = print, state: Path | None = None,
        minutes: float | None = None) -> tuple[list[Result], dict[str, Any]]:
    """Inject *faults* faults into *targets* (names of :data:`TARGETS`); each fault's result, and
    what the run counted besides (missed faults, seconds, the load average before and after, and
    ``done``). *mount* false makes the full disk an RLIMIT_FSIZE, as where ``mount`` is not allowed.

    With *state*, the run saves its progress there after each fault and resumes from it (the same
    run, on the same commit); with *minutes*, it starts no fault after that long, ``done`` false
    while faults are left (run it again with the same *state* to go on)."""
    key = {"faults": faults, "seed": seed, "targets": sorted(targets), "mount": mount,
           "commit": code_commit(REPO, outputs=[RESULTS])}
    start = time.perf_counter()
    if state is not None and state.exists():
        progress = Progress.load_from(state, key)
    else:
        progress = Progress(key, random.Random(seed), schedule(faults, targets, seed),
                            {name: cls.guess_s for name, cls in TARGETS.items()}, load=os.getloadavg()[1])
    rng, queue, est, results, missed = (progress.rng, progress.queue, progress.est, progress.results,
                                        progress.missed)
    memory = "/dev/shm" if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(prefix="faults-", dir=memory) as tmp:
        base = Base(Path(tmp) / "base")
        base.folder.mkdir()
        made = {name: cls(base) for name, cls in TARGETS.items()}
        while queue and (minutes is None or time.perf_counter() - start < 60 * minutes):
            kind, name = queue[0]
            target = made[name]
            folder = Path(tmp) / f"fault-{progress.i}"
            folder.mkdir()
            progress.i += 1
            t0 = time.perf_counter()
            try:
                outcome = (disk_fault(target, folder, rng, mount) if kind == DISK
                           else kill_fault(target, kind, folder, rng, est[name]))
            except BaseException:
                kill_all(leftovers(folder, set()))  # an interrupted run leaves no command running
                raise
            if isinstance(outcome, float):  # a whole run: the command's length now
                missed[f"{kind}, {target.name}"] += 1
                est[name] = max(0.5, outcome)
                shutil.rmtree(folder, ignore_errors=True)
            else:
                queue.pop(0)
                outcome.seconds = time.perf_counter() - t0
                # A rerun after an early kill is about a whole run; one after a late kill resumes,
                # and is shorter: the estimate follows the longer ones up and the others slowly down.
                est[name] = max(outcome.rerun_s, 0.9 * est[name] + 0.1 * outcome.rerun_s)
                results.append(outcome)
                bad = sum(outcome.found.counts.values())
                log(f"fault {len(results)}/{faults}: {kind} {outcome.moment}, {target.name}: "
                    f"{outcome.seconds:.1f} s (rerun {outcome.rerun_s:.1f} s), {bad} violations"
                    + (f" {outcome.found.why}" if bad else ""))
                if bad and keep is not None:
                    shutil.copytree(folder, keep / folder.name, symlinks=True, dirs_exist_ok=True)
                shutil.rmtree(folder, ignore_errors=True)
            if state is not None:
                progress.save(state, time.perf_counter() - start)
    disk = ("a tmpfs (mount -t tmpfs)" if mount and _mount_works()
            else "RLIMIT_FSIZE (no mount; SIGXFSZ ignored)")
    return results, {"missed": missed, "seconds": progress.seconds + time.perf_counter() - start,
                     "disk": disk, "load": (progress.load, os.getloadavg()[1]), "done": not queue,
                     "chunks": progress.chunks + 1}


def _mount_works() -> bool:
    with tempfile.TemporaryDirectory() as tmp:
        ok = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", tmp],
                            capture_output=True).returncode == 0
        if ok:
            subprocess.run(["umount", tmp], capture_output=True)
    return ok


def violations(results: list[Result]) -> int:
    return sum(sum(r.found.counts.values()) for r in results)


def report(results: list[Result], extra: dict[str, Any], seed: int, command: list[str]) -> str:
    cells: dict[tuple[str, str], list[Result]] = {}
    for r in results:
        cells.setdefault((r.kind, r.target), []).append(r)
    faulty = sum(1 for r in results if r.found.counts)
    writing = sum(1 for r in results if r.moment == "while writing")
    lines = [
        "# Fault injection: kills, SIGTERMs and a full disk at random moments", "",
        f"- command: `{shlex.join(['python', *command])}`"
        + (f", run in {extra['chunks']} chunks (`--state`, `--minutes`)" if extra["chunks"] > 1 else ""),
        f"- commit: {code_commit(REPO, outputs=[RESULTS]) or 'not a git checkout'}",
        f"- hardware: {host_description()}, shared with other jobs (load average over 5 min: "
        f"{extra['load'][0]:.1f} at the start, {extra['load'][1]:.1f} at the end)",
        f"- versions: Python {platform.python_version()}, optuna {version('optuna')}, "
        f"SQLAlchemy {version('sqlalchemy')}, SQLite {sqlite3.sqlite_version}, "
        f"scikit-learn {version('scikit-learn')}, {platform.system()} {platform.release()}",
        f"- date: {dt.date.today().isoformat()}", "",
        f"**{violations(results)} invariant violations** (target 0) in {len(results)} faults (seed {seed}), "
        f"{faulty} faults with any; {extra['seconds'] / 60:.1f} min. The full disk: {extra['disk']}.", "",
        "Each fault is one command (or several on one study or store) hit at a random moment, then the "
        "same command run again to completion; the script's docstring says how each invariant is read. "
        f"{writing} of the faults of the commands that write over a file were sent the moment that file "
        "(or its temporary file) changed, the others after a random delay. A cell counts the faults in "
        "which the invariant failed (one fault may fail several); *s*: the median seconds of a fault, "
        "its rerun included.",
        "", "| fault | target | faults | s | " + " | ".join(INVARIANTS) + " |",
        "|---|---|---:|---:|" + "---:|" * len(INVARIANTS),
    ]
    order = {k: i for i, k in enumerate((SIGKILL, SIGTERM, DISK))}
    for (kind, target), rs in sorted(cells.items(), key=lambda c: (order[c[0][0]], c[0][1])):
        counts = [sum(1 for r in rs if inv in r.found.counts) for inv in INVARIANTS]
        median = sorted(r.seconds for r in rs)[len(rs) // 2]
        lines.append(f"| {kind} | {target} | {len(rs)} | {median:.0f} | "
                     + " | ".join(map(str, counts)) + " |")
    sums = [sum(1 for r in results if inv in r.found.counts) for inv in INVARIANTS]
    lines.append(f"| **all** | | **{len(results)}** | | " + " | ".join(f"**{n}**" for n in sums) + " |")
    missed = extra["missed"]
    stray = Counter[str]()
    for r in results:
        stray[f"{r.kind}, {r.target}"] += r.stray
    lines += ["", f"Missed (every victim had finished before the signal; drawn again): {sum(missed.values())}"
              + (f" ({', '.join(f'{k}: {v}' for k, v in sorted(missed.items()))})" if missed else "") + ". "
              f"Temporary files a kill left beside an output (not violations): {sum(stray.values())}"
              + (f" ({', '.join(f'{k}: {v}' for k, v in sorted((+stray).items()))})" if +stray else "")
              + "."]
    examples: dict[tuple[str, str, str], str] = {}
    for r in results:
        for inv, why in r.found.why.items():
            examples.setdefault((r.kind, r.target, inv), why)
    if examples:
        lines += ["", "First violation of each kind:", ""]
        lines += [f"- {kind}, {target}, {inv}: `{why}`" for (kind, target, inv), why in examples.items()]
    messages = Counter(r.message for r in results if r.message)
    if messages:
        lines += ["", "What the command said when the disk filled (DIR: the fault's folder):", ""]
        lines += [f"- {n} x `{m}`" for m, n in messages.most_common()]
    orphans = Counter((r.kind, r.target, re.sub(r"\d+", "#", o)) for r in results for o in r.orphans)
    if orphans:
        lines += ["", f"Orphaned processes ({sum(orphans.values())}), by command line:", ""]
        lines += [f"- {k}, {t}: {n} x `{o}`" for (k, t, o), n in orphans.most_common()]
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--faults", type=int, default=200, help="faults to inject")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--targets", default=",".join(TARGETS),
                        help=f"comma-separated targets to hit (default all: {','.join(TARGETS)})")
    parser.add_argument("--no-mount", action="store_true",
                        help="fill the disk with RLIMIT_FSIZE, not a tmpfs (as without root)")
    parser.add_argument("--out", type=Path, default=None, help="markdown file to write")
    parser.add_argument("--keep", type=Path, default=None, help="copy the folder of each faulty fault here")
    parser.add_argument("--state", type=Path, default=None,
                        help="save the run's progress here after each fault, and resume from it")
    parser.add_argument("--minutes", type=float, default=None,
                        help="start no fault after this long; with --state, run again to go on (exit 3)")
    args = parser.parse_args()
    targets = [t for t in args.targets.split(",") if t]
    unknown = sorted(set(targets) - set(TARGETS))
    if unknown:
        parser.error(f"unknown targets {unknown}; choose from {sorted(TARGETS)}")
    results, extra = run(args.faults, args.seed, targets, keep=args.keep, mount=not args.no_mount,
                         log=lambda line: print(line, file=sys.stderr, flush=True), state=args.state,
                         minutes=args.minutes)
    if not extra["done"]:
        print(f"{len(results)} of {args.faults} faults, {violations(results)} violations so far; run the "
              "same command again to go on", file=sys.stderr)
        return 3
    command = _without(sys.argv, ("--state", "--minutes"))
    text = report(results, extra, args.seed, command)
    print(text, end="")
    if args.out is not None:
        args.out.write_text(text)
    return 1 if violations(results) else 0


def _without(argv: list[str], options: tuple[str, ...]) -> list[str]:
    """*argv* less *options* and their values (how a run is cut into chunks is not what it is)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in options:
            skip = True
        elif not arg.startswith(tuple(f"{o}=" for o in options)):
            out.append(arg)
    return out


def _interrupt(signum: int, _frame: Any) -> None:
    raise KeyboardInterrupt(signal.Signals(signum).name)


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    signal.signal(signal.SIGTERM, _interrupt)  # as Ctrl-C: the fault's commands and its tmpfs go too
    sys.exit(main())
