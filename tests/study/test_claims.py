"""Per-config claims on SQLite and on a real PostgreSQL server: atomic, budgeted, crash-aware."""

from __future__ import annotations

import multiprocessing as mp
import subprocess
import sys
import time

import pytest
import sqlalchemy as sa

from flysearch.study._claims import ClaimStore


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, tmp_path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/claims.db"
    return request.getfixturevalue("postgres_url")


def test_claim_finish_and_answers(url):
    a = ClaimStore(url, "s")
    first = a.claim("k1", budget=5, params={"x": 1}, trial=0)
    assert first.status == "granted" and first.row.compile_index == 1
    assert a.claim("k1", budget=5).status == "busy"  # held by a live worker
    a.compiled("k1", {"ok": True, "compile_s": 0.5})
    a.finish("k1", {"outcome": "ok", "time_ms": 2.0})
    again = a.claim("k1", budget=5)
    assert again.status == "done" and again.row.result["time_ms"] == 2.0 and again.row.trial == 0
    assert a.claim("k2", budget=5).row.compile_index == 2
    assert a.counts() == {"done": 1, "claimed": 1}
    a.close()


def test_a_batch_of_measurements_commits_with_what_else_its_transaction_writes(url):
    import sqlalchemy as sa

    a = ClaimStore(url, "s")
    for key in ("k1", "k2", "k3"):
        a.claim(key, budget=5)
    a.compiled_many({"k1": {"ok": True}, "k2": {"ok": True}})
    assert a.counts() == {"compiled": 2, "claimed": 1}
    with pytest.raises(RuntimeError), a.writing() as c:  # the trial write after it fails: nothing lands
        a.finish_many([("k1", {"outcome": "ok", "time_ms": 1.0}, False),
                       ("k3", {"outcome": "compile_failed", "time_ms": None}, True)], conn=c)
        raise RuntimeError("the trial could not be written")
    assert a.counts() == {"compiled": 2, "claimed": 1}
    with a.writing() as c:
        a.finish_many([("k1", {"outcome": "ok", "time_ms": 1.0}, False),
                       ("k3", {"outcome": "compile_failed", "time_ms": None}, True)], conn=c)
        c.execute(sa.text("select 1"))
    assert a.counts() == {"done": 1, "failed": 1, "compiled": 1}
    assert sorted(r.key for r in a.finished_since(0.0)) == ["k1", "k3"]
    assert a.finished_since(0.0, others_only=True) == []
    with pytest.raises(Exception, match="not claimed by this worker"):  # one wrong key: none finish
        a.finish_many([("k2", {"outcome": "ok", "time_ms": 1.0}, False), ("nope", {"outcome": "ok"}, False)])
    assert a.counts()["compiled"] == 1
    a.close()


def test_a_claim_lost_to_a_takeover_is_reported_and_the_others_are_recorded(url):
    import sqlalchemy as sa

    a = ClaimStore(url, "s")
    a.claim("k1", budget=5)
    a.claim("k2", budget=5)
    with a.writing() as c:  # another worker took k1 over, having found this one dead
        c.execute(sa.text("update flysearch_claims set worker = 'elsewhere:1:x' where key = 'k1'"))
    ok = {"outcome": "ok", "time_ms": 1.0}
    assert a.finish_many([("k1", ok, False), ("k2", ok, False)], lost_ok=True) == ["k1"]
    assert a.get("k2").state == "done" and a.get("k1").state == "claimed"
    assert a.compiled_many({"k1": {"ok": True}}, lost_ok=True) == ["k1"]
    a.close()


def test_budget_is_exact(url):
    a = ClaimStore(url, "s")
    granted = [a.claim(f"k{i}", budget=3).status for i in range(5)]
    assert granted == ["granted"] * 3 + ["full"] * 2
    assert a.granted() == 3
    a.close()


def test_only_the_owner_finishes(url):
    a, b = ClaimStore(url, "s"), ClaimStore(url, "s")
    a.claim("k", budget=5)
    assert b.claim("k", budget=5).status == "busy"
    with pytest.raises(Exception, match="not claimed by this worker"):
        b.finish("k", {"outcome": "ok", "time_ms": 1.0})
    a.close()
    b.close()


def _claim_in_child_and_die(url: str) -> None:
    subprocess.run([sys.executable, "-c", (
        "from flysearch.study._claims import ClaimStore\n"
        f"s = ClaimStore({url!r}, 's')\n"
        "assert s.claim('k', budget=5, params={'p': 1}).status == 'granted'\n"
        "import os; os._exit(9)\n")], check=False, timeout=120)


def test_dead_workers_claim_is_taken_over_then_failed(url):
    store = ClaimStore(url, "s", max_attempts=2)
    _claim_in_child_and_die(url)
    assert [r.key for r in store.stale()] == ["k"]
    taken = store.claim("k", budget=5, trial=7)
    assert taken.status == "granted" and taken.row.attempts == 2 and taken.row.params == {"p": 1}
    assert taken.row.compile_index == 1  # the same compile slot, not a new one
    assert store.granted() == 1
    store.close()
    # This worker dies too (closing unregisters it): the config has now killed two workers.
    third = ClaimStore(url, "s", max_attempts=2)
    result = third.claim("k", budget=5)
    assert result.status == "failed" and "died 2 times" in result.row.result["detail"]
    third.close()


def _race(url: str, keys: list[str], budget: int, out: mp.Queue) -> None:
    store = ClaimStore(url, "race")
    mine = []
    for key in keys:
        c = store.claim(key, budget=budget)
        if c.status == "granted":
            mine.append((key, c.row.compile_index))
            store.finish(key, {"outcome": "ok", "time_ms": 1.0})
    out.put(mine)
    store.close()


def test_concurrent_workers_never_claim_one_config_twice(url):
    ClaimStore(url, "race").close()  # create the tables once
    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    keys = [f"k{i}" for i in range(40)]
    procs = [ctx.Process(target=_race, args=(url, keys[i:] + keys[:i], 30, out)) for i in range(0, 24, 4)]
    for p in procs:
        p.start()
    granted = [g for _ in procs for g in out.get(timeout=300)]
    for p in procs:
        p.join(60)
    claimed_keys = [k for k, _ in granted]
    assert len(claimed_keys) == len(set(claimed_keys)) == 30
    assert sorted(i for _, i in granted) == list(range(1, 31))


def test_lock_is_taken_once(url):
    a, b = ClaimStore(url, "s"), ClaimStore(url, "s")
    assert a.try_lock("finalists") and not b.try_lock("finalists")
    assert a.rows() == []  # locks are not claims
    a.close()
    b.close()


def test_finished_since_returns_only_claims_finished_from_then(url):
    store = ClaimStore(url, "s")
    for key in ("a", "b", "c"):
        store.claim(key, budget=10, params={"k": key})
    store.finish("a", {"outcome": "ok", "time_ms": 1.0})
    time.sleep(0.05)
    mark = time.time()
    store.finish("b", {"outcome": "compile_failed", "time_ms": None}, failed=True)
    assert {r.key for r in store.finished_since(0.0)} == {"a", "b"}
    (b,) = store.finished_since(mark)
    assert (b.key, b.state, b.params) == ("b", "failed", {"k": "b"})
    store.close()


def test_a_dead_workers_process_id_taken_by_a_newer_process_does_not_keep_it_alive(tmp_path):
    url = f"sqlite:///{tmp_path}/claims.db"
    store = ClaimStore(url, "s")
    _claim_in_child_and_die(url)
    (dead,) = [w for w in store.workers() if w.worker != store.worker]
    assert not store.alive(dead.worker) and [r.key for r in store.stale()] == ["k"]
    # The system hands the dead worker's id, registered a minute ago, to a process started now.
    newer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        with store.writing() as c:
            c.execute(sa.text("update flysearch_workers set pid = :pid, started = :t where worker = :w"),
                      {"pid": newer.pid, "t": time.time() - 60, "w": dead.worker})
        assert not store.alive(dead.worker) and [r.key for r in store.stale()] == ["k"]
        # The same id registered after that process started: that process is the worker, alive.
        with store.writing() as c:
            c.execute(sa.text("update flysearch_workers set started = :t where worker = :w"),
                      {"t": time.time() + 5, "w": dead.worker})
        assert store.alive(dead.worker) and store.stale() == []
    finally:
        newer.kill()
        newer.wait()
        store.close()
