"""Every kind of child flysearch starts ends with its parent, even when the parent is SIGKILLed and
whatever the child is doing; and a child whose parent ended before it could hold on ends at once."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flysearch._lifeline import ORPHANED_EXIT
from tests.conftest import REPO
from tests.processes import PROC, alive, descendants, gone_within, kill_all, stat

pytestmark = pytest.mark.skipif(not PROC or not sys.platform.startswith("linux"),
                                reason="reads processes from /proc (Linux)")

KINDS = ("pool", "pool started by a thread", "subprocess", "forked executor")

# A parent starting one child of each kind, each running tests.processes.spin (in C holding the
# interpreter's lock, but for the pool's worker started by a thread that has ended since).
_PARENT = """
import concurrent.futures, os, subprocess, sys, threading, time
from flysearch._lifeline import Lifeline, for_subprocess
from flysearch.evaluators import WorkerPool
from tests.processes import spin

folder = sys.argv[1]
executor = concurrent.futures.ProcessPoolExecutor(1, initializer=Lifeline())  # forked (costmodel_eval)
executor.submit(spin, (folder, "forked executor", True))
pool = WorkerPool(spin, workers=1, timeout_s=3600)  # spawned (compare, race, live pools, study workers)
pool.submit(0, (folder, "pool", True))
pool.dispatch()
other = WorkerPool(spin, workers=1, timeout_s=3600)


def start_and_end() -> None:  # a thread that ends once its pool's worker runs
    other.submit(0, (folder, "pool started by a thread", False))
    other.dispatch()
    while not os.path.exists(os.path.join(folder, "pool started by a thread.pid")):
        time.sleep(0.01)


thread = threading.Thread(target=start_and_end)
thread.start()
thread.join()
variables, fds = for_subprocess()  # a FlyDSL compile
body = "from flysearch._lifeline import hold_inherited; hold_inherited(); import sys; " \\
       "from tests.processes import spin; spin((sys.argv[1], 'subprocess', True))"
child = subprocess.Popen([sys.executable, "-c", body, folder], env={**os.environ, **variables}, pass_fds=fds)
open(os.path.join(folder, "started"), "w").close()
threading.Event().wait()
"""


def test_every_kind_of_child_ends_within_5_s_of_its_parents_kill_9(tmp_path: Path) -> None:
    parent = subprocess.Popen([sys.executable, "-c", _PARENT, str(tmp_path)], cwd=REPO,
                              start_new_session=True)
    children: dict[int, str] = {}
    try:
        deadline = time.monotonic() + 120
        while not all((tmp_path / name).is_file() for name in ("started", *(f"{k}.pid" for k in KINDS))):
            assert time.monotonic() < deadline and parent.poll() is None, "the children never started"
            time.sleep(0.05)
        children = descendants(parent.pid)
        pids = {kind: int((tmp_path / f"{kind}.pid").read_text()) for kind in KINDS}
        # the thread that started one of them has ended, the parent has not: they all live on
        assert set(pids.values()) <= set(children), "a child ended with the thread that started it"
        start = time.monotonic()
        parent.kill()
        parent.wait()
        took = gone_within(children, 30, start)
        left = [kind for kind, pid in pids.items() if alive(pid, children[pid])]
        assert not left and took < 5, f"{left} still there {took:.1f} s after the parent's kill -9"
    finally:  # a failed test leaves no process behind
        if parent.poll() is None:
            os.killpg(parent.pid, signal.SIGKILL)
            parent.wait()
        kill_all(children)


def test_a_child_whose_parent_ended_before_it_held_on_ends_at_once(tmp_path: Path) -> None:
    """A lifeline naming a parent that is not this process's parent (it ended, and this one was
    reparented): the child ends at once, with ORPHANED_EXIT."""
    body = "from flysearch._lifeline import hold_inherited; hold_inherited(); print('lived on')"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # a parent that has ended
    assert stat(gone.pid) is None
    lifeline = {"FLYSEARCH_LIFELINE": f"{gone.pid}:1:0"}  # as for_subprocess() says it
    out = subprocess.run([sys.executable, "-c", body], env={**os.environ, **lifeline},
                         capture_output=True, text=True, cwd=REPO, timeout=60)
    assert out.returncode == ORPHANED_EXIT and "lived on" not in out.stdout
    held = subprocess.run([sys.executable, "-c", body], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert held.returncode == 0 and "lived on" in held.stdout  # given no lifeline, it just runs


_WATCHED = """
import signal, sys, time
from flysearch._lifeline import stop_with
if sys.argv[2] == "hangs":
    signal.signal(signal.SIGTERM, lambda *_: None)  # its unwinding never ends
else:
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(3))  # it unwinds (as a study process does)
stop_with(int(sys.argv[1]), grace_s=1.0)
print("watching", flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("unwinding", ["unwinds", "hangs"])
def test_a_served_process_whose_unwinding_hangs_ends_itself(unwinding: str) -> None:
    """A served process (a worker server's study process) whose client ended is SIGTERMed by its
    own watcher; if it is still there after the grace period it prints its stacks and exits hard:
    nobody else would stop it."""
    client = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    watched = subprocess.Popen([sys.executable, "-c", _WATCHED, str(client.pid), unwinding],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert watched.stdout.readline() == "watching\n"
        time.sleep(1.5)
        assert watched.poll() is None  # the command still runs: so does its study
        client.kill()
        client.wait()
        _out, err = watched.communicate(timeout=60)
    finally:
        client.kill()
        watched.kill()
    if unwinding == "unwinds":
        assert watched.returncode == 3 and "did not stop" not in err  # its own unwinding
    else:
        assert watched.returncode == 1
        assert f"did not stop within 1 s of the end of process {client.pid}, which it served" in err
        assert 'File "<string>", line 10 in <module>' in err  # where its main thread hung: sleep()
