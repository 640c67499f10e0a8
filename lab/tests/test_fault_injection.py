"""lab/benchmarks/fault_injection.py: a run cut into chunks resumes where it stopped, without injecting
a fault."""

from __future__ import annotations

from pathlib import Path

import pytest

from lab.tests._benchmarks import benchmark_script


def test_a_saved_run_resumes_with_the_same_draws_and_results(tmp_path: Path) -> None:
    fi = benchmark_script("fault_injection")
    key = {"faults": 4, "seed": 3, "targets": ["export", "study"], "mount": False, "commit": "abc"}
    progress = fi.Progress(key, fi.random.Random(3), fi.schedule(4, ["export", "study"], 3), {"study": 4.0})
    progress.rng.random()  # the run has drawn something
    found = fi.Found()
    found.add(fi.ORPHAN, "1 processes left")
    progress.results.append(fi.Result(fi.SIGKILL, "study", found, 2.5, orphans=["after SIGKILL: python"]))
    progress.missed["SIGKILL, study"] += 1
    progress.queue.pop(0)
    state = tmp_path / "run.json"
    progress.save(state, 60.0)

    back = fi.Progress.load_from(state, key)
    assert back.rng.random() == progress.rng.random()
    assert back.queue == progress.queue and back.missed == progress.missed and back.chunks == 1
    assert back.seconds == 60.0
    [r] = back.results
    assert (r.kind, r.target, r.seconds, r.orphans) == (fi.SIGKILL, "study", 2.5, ["after SIGKILL: python"])
    assert r.found.counts == {fi.ORPHAN: 1} and r.found.why == {fi.ORPHAN: "1 processes left"}
    assert fi.violations(back.results) == 1
    with pytest.raises(SystemExit, match="another run"):
        fi.Progress.load_from(state, {**key, "commit": "def"})


def test_how_a_run_is_cut_is_not_in_its_command() -> None:
    fi = benchmark_script("fault_injection")
    argv = ["fi.py", "--faults", "200", "--state", "s.json", "--minutes=8", "--out", "r.md"]
    assert fi._without(argv, ("--state", "--minutes")) == ["fi.py", "--faults", "200", "--out", "r.md"]
