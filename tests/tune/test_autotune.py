"""``@flysearch.autotune`` over a CPU function: tuning, the check, the store, failures, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import flysearch
from flysearch.errors import AutotuneError
from flysearch.tune import TuneStore, racing, store_url

from . import _fake

HERE = Path(__file__).parent


def _run(k, n, log):
    x, out = np.arange(float(n)), np.empty(n)
    k(x, out, n, log=str(log))
    return x, out


def test_first_call_tunes_within_budget_and_returns_the_right_result(tmp_path):
    k = _fake.tuned(str(tmp_path / "s.db"))
    x, out = _run(k, 4096, tmp_path / "log")
    assert np.array_equal(out, 2 * x)
    builds = _fake.calls(tmp_path / "log")
    # 8 unique compiles, then the finalists' rounds and the call itself reuse built configs.
    assert len({(c["chunk"], c["unroll"]) for c in builds}) == 8
    best = k.best_config(n=4096)
    assert best["chunk"] not in (32, 512)  # a failing or wrong config is never chosen
    (tuned,) = k.store.tuned()
    assert tuned.state == "done" and tuned.report["compiles"] == 8 and tuned.report["n_feasible"] == 18


def test_a_wrong_or_crashing_config_is_recorded_as_failed(tmp_path):
    k = _fake.tuned(str(tmp_path / "s.db"), budget=18)  # the whole space
    _run(k, 2048, tmp_path / "log")
    (tuned,) = k.store.tuned()
    assert tuned.report["failed"] == 6  # chunk 32 (3 raise) and 512 (3 wrong)
    tables = k.tuner.tables("cpu")
    outcomes = {r.key: r.outcome for r in tables[0].rows.values()}
    assert outcomes["chunk=512,unroll=1"] == "wrong_result"
    assert outcomes["chunk=32,unroll=4"] == "compile_failed"  # a callable builds on its first call


def test_another_process_dispatches_a_tuned_key_with_no_build(tmp_path):
    store, log = str(tmp_path / "s.db"), tmp_path / "log"
    _run(_fake.tuned(store), 1024, log)
    first = len(_fake.calls(log))
    out = subprocess.run([sys.executable, str(HERE / "_fake.py"), store, str(log), "1024", "0"],
                         capture_output=True, text=True, check=True)
    later = _fake.calls(log)[first:]
    assert len(later) == 1  # the winner's first call in that process: nothing else was built
    assert json.loads(out.stdout.splitlines()[-1]) == _fake.tuned(store).best_config(n=1024)


def test_two_processes_on_one_untuned_key_tune_it_once(tmp_path):
    store, log = str(tmp_path / "s.db"), tmp_path / "log"
    cmd = [sys.executable, str(HERE / "_fake.py"), store, str(log), "4096", "0.05"]
    procs = [subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    winners = {out.splitlines()[-1] for out in outs}
    assert len(winners) == 1
    builds = _fake.calls(log)
    by_pid = {}
    for c in builds:
        by_pid.setdefault(c["pid"], []).append(c)
    # One process built the 8 configs it tuned; the other built only the winner it launched.
    assert sorted(len(v) for v in by_pid.values()) == [1, 8]
    assert len({(c["chunk"], c["unroll"]) for c in builds}) == 8


def test_a_killed_tune_resumes_without_building_a_config_twice(tmp_path):
    store, log = str(tmp_path / "s.db"), tmp_path / "log"
    cmd = [sys.executable, str(HERE / "_fake.py"), store, str(log), "4096", "0.3"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while len(_fake.calls(log)) < 4 and proc.poll() is None:
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    killed = {(c["chunk"], c["unroll"]) for c in _fake.calls(log)}
    subprocess.run([*cmd[:-1], "0"], check=True, capture_output=True)
    # The rerun resumed the killed study: 8 unique configs over both processes, 8 compiles counted.
    assert len(killed | {(c["chunk"], c["unroll"]) for c in _fake.calls(log)}) == 8
    (tuned,) = TuneStore(store_url(store)).tuned()
    assert tuned.state == "done" and tuned.report["compiles"] == 8


def test_an_edited_space_tunes_again_instead_of_answering_from_the_old_one(tmp_path):
    store = str(tmp_path / "s.db")
    _run(_fake.tuned(store), 512, tmp_path / "log")
    narrowed = flysearch.autotune(space={"chunk": [64], "unroll": [1]}, key=["n"], store=store)(_fake.kernel)
    x, out = np.arange(512.0), np.empty(512)
    narrowed(x, out, 512)
    assert narrowed.best_config(n=512) == {"chunk": 64, "unroll": 1}
    assert len(TuneStore(store_url(store)).tuned()) == 2


def test_after_three_keys_a_prior_ranks_the_next_key(tmp_path):
    k = _fake.tuned(str(tmp_path / "s.db"), transfer_budget=3)
    for n in (256, 512, 1024, 2048):
        _run(k, n, tmp_path / "log")
    reports = {t.key: t.report for t in k.store.tuned()}
    assert [reports[f"n={n}"]["sampler"] for n in (256, 512, 1024)] == ["auto"] * 3
    assert reports["n=2048"]["sampler"] == "costmodel" and reports["n=2048"]["compiles"] == 3


def test_an_accumulating_kernel_starts_from_zero_on_the_call_that_tunes_it(tmp_path):
    @flysearch.autotune(space={"chunk": [16, 64, 256]}, key=["n"], reset_to_zero=["out"],
                        reference=lambda x, out, n: 2 * x, outputs=["out"], store=str(tmp_path / "s.db"))
    def add_twice(x, out, n, chunk):
        for i in range(0, n, chunk):
            out[i:i + chunk] += 2 * x[i:i + chunk]

    x, out = np.arange(256.0), np.zeros(256)
    add_twice(x, out, 256)
    assert np.array_equal(out, 2 * x)  # not the last timed run's sum plus this call's
    x, out = np.arange(128.0), np.zeros(128)
    with racing(tmp_path / "races"):  # a raced key's call launches the race's best on zeros too
        add_twice(x, out, 128)
    assert np.array_equal(out, 2 * x)


def test_an_in_place_kernel_is_checked_and_its_input_restored(tmp_path):
    @flysearch.autotune(space={"chunk": [16, 64, 256]}, key=["n"], restore_value=["x"],
                        reference=lambda x, n: 2 * x, outputs=["x"], store=str(tmp_path / "s.db"))
    def double(x, n, chunk):
        for i in range(0, n, chunk):
            x[i:i + chunk] *= 2

    x = np.arange(256.0)
    double(x, 256)
    (tuned,) = double.store.tuned()
    assert tuned.report["failed"] == 0 and np.array_equal(x, 2 * np.arange(256.0))


def test_a_tensor_key_is_its_shape_and_dtype(tmp_path):
    calls = []

    @flysearch.autotune(space={"b": [1, 2]}, key=["x"], store=str(tmp_path / "s.db"), budget=2)
    def f(x, b):
        calls.append(b)

    f(np.zeros((3, 4), dtype=np.float32))
    (tuned,) = f.store.tuned()
    assert tuned.key == "x=3x4:float32"


@pytest.mark.parametrize(("options", "message"), [
    ({"key": ["m"]}, "key names 'm'"),
    ({"space": {"block": [1, 2]}}, "'block', which kernel does not take"),
    ({"key": "n"}, "key must be a list"),
    ({"space": {}}, "non-empty dict"),
    ({"budget": 0}, "budget must be a positive"),
    ({"prune_configs_by": {"perf_model": len, "top_k": 4}}, "not perf_model, top_k"),
    ({"prune_configs_by": {"early_config_prune": 3}}, "must be a function"),
    ({"prune_configs_by": [len]}, "must be a dict"),
])
def test_bad_arguments_are_one_clear_error(tmp_path, options, message):
    kwargs = {"space": _fake.SPACE, "key": ["n"], "store": str(tmp_path / "s.db"), **options}
    with pytest.raises(AutotuneError, match=message):
        flysearch.autotune(**kwargs)(_fake.kernel)


def test_an_unwritable_store_is_one_clear_error_and_writes_nothing(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(AutotuneError, match="Cannot make the autotune store's folder"):
        flysearch.autotune(space=_fake.SPACE, key=["n"], store=str(blocker / "s.db"))(_fake.kernel)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]


def test_the_store_comes_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("FLYSEARCH_AUTOTUNE_DB", str(tmp_path / "env.db"))
    assert store_url() == f"sqlite:///{tmp_path / 'env.db'}"


def test_a_triton_kernel_is_tuned_and_launched_as_kernel_grid(tmp_path):
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    out = subprocess.run([sys.executable, str(HERE / "_triton_toy.py"), str(tmp_path / "s.db")], env=env,
                         capture_output=True, text=True, check=True, timeout=300)
    stored = json.loads(out.stdout.splitlines()[-1])
    assert stored["n=10"][1] == 2 and stored["n=100"][1] == 4  # the constraint and the pruning saw each key
    assert stored["n=10"][0]["BLOCK"] in (16, 32) and stored["n=10"][0]["num_warps"] == 1
    assert "A new study" not in out.stderr  # tuning is quiet


def test_a_triton_space_parameter_must_be_a_constexpr_or_launch_option(tmp_path):
    from . import _triton_params

    with pytest.raises(AutotuneError, match=r"'n', which scale_kernel does not take as a tl\.constexpr"):
        flysearch.autotune(space={"n": [1, 2]}, key=["scale"], store=str(tmp_path / "s.db"))(
            _triton_params.scale_kernel)
    tuned = flysearch.autotune(space={"BLOCK": [16], "num_stages": [1, 2]}, key=["n"],
                               store=str(tmp_path / "s.db"))(_triton_params.scale_kernel)
    assert tuned.arg_names == ["x", "y", "n", "scale", "BLOCK"]


def test_a_race_times_every_feasible_config_and_retimes_its_top(tmp_path):
    from flysearch.evaluators import RetimeSettings
    from flysearch.tables import dump_table_file, read_table_file

    k = _fake.tuned(str(tmp_path / "s.db"))
    x, out = np.arange(256.0), np.empty(256)
    table = k.race(x, out, 256, retime=RetimeSettings(rounds=2, min_k=3, max_k=3))
    assert len(table) == 18 and len(table.ok_rows()) == 12
    assert len(table.retimed_ms()) == 3
    assert k.store.tuned() == []  # a race stores nothing
    dump_table_file(table, tmp_path / "race.table.json.gz")
    meta, rows = read_table_file(tmp_path / "race.table.json.gz")
    assert meta.problem == {"n": 256} and len(rows) == 18


@pytest.mark.slow
def test_a_space_has_the_same_fingerprint_in_every_process():
    code = ("import examples.matmul as m; from flysearch.tune import space_fingerprint; "
            "print(space_fingerprint(m.SPACE))")
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           cwd=HERE.parents[1]).stdout for _ in range(2)}
    assert len(runs) == 1


def test_a_flydsl_jit_function_is_read_through_its_wrapper(tmp_path):
    pytest.importorskip("flydsl")
    from tests.flydsl_toy import _kernels

    def tuned(space):
        return flysearch.autotune(space=space, key=["A"], store=str(tmp_path / "s.db"))(_kernels())

    first = tuned({"BLOCK_M": [64, 128], "num_warps": [1, 2]})
    again = tuned({"BLOCK_M": [64], "num_warps": [1]})
    assert first.args.names == ("A", "B", "C", "BLOCK_M", "num_warps", "stream")
    assert first.tuner.name == "toy_add"
    assert first.tuner.source == again.tuner.source  # the same kernel, found again in the store
    with pytest.raises(AutotuneError, match="'TILE', which toy_add does not take"):
        tuned({"TILE": [64]})


def test_early_config_prune_is_called_once_per_key_and_only_its_configs_are_searched(tmp_path):
    seen = []

    def prune(configs, nargs):  # triton.autotune's early_config_prune: configs and named arguments
        seen.append((len(configs), nargs["n"]))
        return [c for c in configs if c["chunk"] <= nargs["n"] // 16 and c["unroll"] != 4]

    k = _fake.tuned(str(tmp_path / "s.db"), budget=18, prune_configs_by={"early_config_prune": prune})
    x, out = _run(k, 4096, tmp_path / "log")
    assert np.array_equal(out, 2 * x)
    assert seen == [(18, 4096)]
    (table,) = k.tuner.tables("cpu")  # what the study compiled: all it kept, nothing else
    assert set(table.rows) == {f"chunk={c},unroll={u}" for c in (32, 64, 128, 256) for u in (1, 2)}
    (tuned,) = k.store.tuned()
    assert tuned.report["n_feasible"] == 8
    _run(k, 4096, tmp_path / "log")  # a tuned key: dispatched, not pruned again
    assert seen == [(18, 4096)]


def test_early_config_prune_that_keeps_nothing_is_one_clear_error(tmp_path):
    k = _fake.tuned(str(tmp_path / "s.db"), prune_configs_by={"early_config_prune": lambda c, n: []})
    with pytest.raises(AutotuneError, match="kept none of the 18 feasible configs"):
        _run(k, 1024, tmp_path / "log")
