"""Sampler comparison: metrics arithmetic, experiment files, resume, leave-one-table-out, CLI errors."""

from __future__ import annotations

import math
import sqlite3
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from flysearch.cli import main
from flysearch.compare import _run as compare
from flysearch.compare._experiment import Experiment, SamplerSpec, TableSpec, load_experiment
from flysearch.compare._metrics import (
    Trajectory,
    bootstrap_ci,
    expected_draws,
    expected_seconds,
    performance_score,
    prob_found_within,
    quantile_stats,
    random_baseline_curve,
    transfer_matrix,
)
from flysearch.compare._report import report_experiment, summary_rows
from flysearch.compare._run import load_runs, load_table, restricted_space, run_experiment, training_tables
from flysearch.errors import FlysearchError, InputFormatError
from flysearch.tables import space_for_table
from tests.conftest import hub_file

# -- metrics against hand-computed cases ----------------------------------------------------------


def test_trajectory_hand_case() -> None:
    t = Trajectory.from_steps([(None, 1.0), (5.0, 3.0), (7.0, 4.0), (2.0, 10.0)])
    assert math.isnan(t.best_ms[0]) and t.best_ms[1:] == (5.0, 5.0, 2.0)
    assert t.compiles_to(2.0) == 4 and t.compiles_to(5.0) == 2 and t.compiles_to(1.0) is None
    assert t.seconds_to(2.0 * 1.01) == 10.0
    assert t.fraction_at(1, 2.0) == 0.0
    assert t.fraction_at(3, 2.0) == pytest.approx(0.4)
    assert t.fraction_at(200, 2.0) == 1.0  # a run that stopped early keeps its last value


def test_quantile_stats_hand_case() -> None:
    s = quantile_stats([3, 1, 2, None], seed=0)
    assert (s.n, s.success, s.median, s.q25) == (4, 0.75, 2.5, 1.75)
    assert math.isinf(s.q75) and math.isinf(s.p90)  # censored runs sit above every success
    assert math.isinf(quantile_stats([1, None, None]).median)  # fewer than half succeeded
    assert quantile_stats([4, 4, 4]).ci_low == 4 == quantile_stats([4, 4, 4]).ci_high


def test_bootstrap_is_seeded() -> None:
    values = np.arange(20.0)
    assert bootstrap_ci(values, np.median, seed=3) == bootstrap_ci(values, np.median, seed=3)
    low, high = bootstrap_ci(values, np.median, seed=3)
    assert low < 9.5 < high


def test_hypergeometric_expectation_hand_cases() -> None:
    assert expected_draws(10, 10) == pytest.approx(1.0)
    assert expected_draws(1, 1) == 1.0
    assert expected_draws(4, 1) == pytest.approx(2.5)  # uniform position 1..4
    assert prob_found_within(4, 1, 2) == pytest.approx(0.5)
    assert prob_found_within(5, 2, 4) == 1.0  # only 3 bad items
    with pytest.raises(ValueError):
        expected_draws(5, 0)


def test_hypergeometric_expectation_matches_simulation() -> None:
    rng = np.random.default_rng(0)
    n, g, sims = 60, 4, 40000
    costs = rng.uniform(1.0, 3.0, size=n)  # the first g items are the good ones
    draws, seconds, within = [], [], 0
    for _ in range(sims):
        order = rng.permutation(n)
        first = int(np.argmax(order < g))
        draws.append(first + 1)
        seconds.append(costs[order[: first + 1]].sum())
        within += first + 1 <= 10
    assert np.mean(draws) == pytest.approx(expected_draws(n, g), rel=0.02)
    assert np.mean(seconds) == pytest.approx(expected_seconds(costs[g:], costs[:g]), rel=0.02)
    assert within / sims == pytest.approx(prob_found_within(n, g, 10), abs=0.01)


def test_random_baseline_and_score() -> None:
    times = [float(x) for x in range(1, 101)]  # optimum 1
    curve = random_baseline_curve(times, [1, 99, 1000])
    # worst-first index round(k (N + 1) / (k + 1)), capped at N - 1 (the methodology's formula)
    assert curve.tolist() == [100 - 50, 100 - 99, 1.0]
    perfect = [Trajectory((1.0,) * 10, (0.0,) * 10)] * 3
    assert performance_score(perfect, times, 10) == pytest.approx(1.0)
    ks = list(range(1, 11))
    as_random = [Trajectory(tuple(random_baseline_curve(times, ks)), (0.0,) * 10)] * 3
    assert performance_score(as_random, times, 10) == pytest.approx(0.0)


def test_transfer_matrix() -> None:
    m = transfer_matrix(["a", "b"], [{"a": 1.0, "b": 4.0}, {"a": None, "b": 2.0}])
    assert m[0, 0] == 1.0 and m[1, 0] == 4.0 and math.isinf(m[0, 1]) and m[1, 1] == 1.0


# -- experiments on real benchmark_hub tables -----------------------------------------------------


# Under pytest-xdist one worker runs this module, so that its module fixture is set up once.
pytestmark = pytest.mark.xdist_group("compare/test_compare")


@pytest.fixture(scope="module")
def dedisp_path() -> Path:
    return hub_file("dedispersion_milo", "A100")


def _experiment(tmp_path: Path, path: Path, **kw: object) -> Experiment:
    values: dict[str, object] = {
        "name": "t",
        "tables": (TableSpec(str(path)),),
        "samplers": (SamplerSpec("random"), SamplerSpec("tpe", encoding="categorical")),
        "seeds": (0, 1, 2),
        "budget": 8,
        "workers": 1,
        "output": str(tmp_path / "out"),
    }
    values.update(kw)
    return Experiment(**values)  # type: ignore[arg-type]


@pytest.mark.slow
def test_resume_after_interruption(tmp_path: Path, dedisp_path: Path) -> None:
    exp = _experiment(tmp_path, dedisp_path)

    def interrupt_after_two(done: int, total: int, run_id: str) -> None:
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_experiment(exp, progress=interrupt_after_two)
    first = {r["id"]: r["finished"] for r in load_runs(tmp_path / "out" / "results.db")}
    assert len(first) == 2  # each finished run was stored on its own
    result = run_experiment(exp)
    assert (result.skipped_done, result.done, result.total) == (2, 4, 6)
    runs = load_runs(result.results_db)
    assert len(runs) == 6 and all(first[r["id"]] == r["finished"] for r in runs if r["id"] in first)
    assert all(r["trajectory"].compiles == 8 for r in runs)
    assert run_experiment(exp).done == 0
    # the same seeds give the same trajectories
    again = _experiment(tmp_path, dedisp_path, output=str(tmp_path / "again"), workers=2)
    assert run_experiment(again).done == 6
    pairs = {r["id"]: r["best_json"] for r in runs}
    assert all(pairs[r["id"]] == r["best_json"] for r in load_runs(tmp_path / "again" / "results.db"))


def test_changed_settings_are_not_mixed(tmp_path: Path, dedisp_path: Path) -> None:
    run_experiment(_experiment(tmp_path, dedisp_path, seeds=(0,), samplers=(SamplerSpec("random"),)))
    changed = _experiment(tmp_path, dedisp_path, seeds=(0,), samplers=(SamplerSpec("random", max_idle=5),))
    with pytest.raises(FlysearchError, match="other settings"):
        run_experiment(changed)


def test_a_sampler_runs_with_its_options_under_a_label_that_names_them(tmp_path: Path,
                                                                      dedisp_path: Path) -> None:
    """Options reach the Optuna sampler: TPE that samples at random for its whole budget (its
    startup longer than the budget) is another run than TPE at its defaults, and stored apart."""
    tuned = SamplerSpec("tpe", options=(("n_startup_trials", 1000),))
    assert tuned.label == "tpe[n_startup_trials=1000]"
    exp = _experiment(tmp_path, dedisp_path, seeds=(0,), budget=30,
                      samplers=(SamplerSpec("tpe"), tuned))
    runs = {r["sampler"]: r for r in load_runs(run_experiment(exp).results_db)}
    assert set(runs) == {"tpe", "tpe[n_startup_trials=1000]"}
    assert runs["tpe"]["best_json"] != runs["tpe[n_startup_trials=1000]"]["best_json"] or (
        runs["tpe"]["trajectory"].times != runs["tpe[n_startup_trials=1000]"]["trajectory"].times)


def test_a_sampler_without_options_keeps_the_fingerprint_it_had_before_options() -> None:
    """Runs stored before samplers took options resume: their (legacy) fingerprint does not change."""
    import hashlib
    import json
    from dataclasses import asdict

    task = compare.RunTask("e", TableSpec("t.json.gz"), SamplerSpec("tpe"), 0, 10, "db")
    sampler = {"name": "tpe", "label": "tpe", "encoding": "ordinal", "max_idle": 1000}
    before = [asdict(task.table), sampler, 10]
    assert task.legacy_fingerprint == hashlib.sha256(
        json.dumps(before, sort_keys=True).encode()).hexdigest()[:16]
    tuned = replace(task, sampler=SamplerSpec("tpe", label="tpe", options=(("n_startup_trials", 5),)))
    assert tuned.fingerprint != task.fingerprint
    assert tuned.legacy_fingerprint != task.legacy_fingerprint


def test_a_moved_experiment_resumes_and_a_rewritten_table_does_not(tmp_path: Path, dedisp_path: Path) -> None:
    """A table file counts by its name and content, not its path: the experiment's folder can move
    (runs resume), but a table rewritten in place makes the stored runs stale."""
    import shutil

    first = tmp_path / "first"
    (first / "tables").mkdir(parents=True)
    table = first / "tables" / dedisp_path.name
    shutil.copy(dedisp_path, table)
    exp = _experiment(first, table, seeds=(0,))
    assert run_experiment(exp).done == 2

    moved = tmp_path / "moved"
    shutil.move(first, moved)
    again = _experiment(moved, moved / "tables" / dedisp_path.name, seeds=(0,))
    result = run_experiment(again)
    assert (result.done, result.skipped_done) == (0, 2)

    data = (moved / "tables" / dedisp_path.name).read_bytes()
    (moved / "tables" / dedisp_path.name).write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    with pytest.raises(FlysearchError, match="other settings"):
        run_experiment(again)


def test_runs_stored_with_the_legacy_fingerprint_resume_in_place(tmp_path: Path, dedisp_path: Path) -> None:
    """Results stored before table files counted by content (fingerprints of their absolute path)
    resume where their tables lie."""
    exp = _experiment(tmp_path, dedisp_path, seeds=(0,))
    db = run_experiment(exp).results_db
    tasks = compare.plan_runs(exp)[0]
    with sqlite3.connect(db) as con:
        for task in tasks:
            assert task.legacy_fingerprint != task.fingerprint
            con.execute("update runs set fingerprint = ? where id = ?",
                        (task.legacy_fingerprint, task.run_id))
    result = run_experiment(exp)
    assert (result.done, result.skipped_done) == (0, 2)


def test_a_prior_trained_on_other_tables_is_another_setting() -> None:
    """A costmodel run's prior trains on the experiment's other tables: a table added to them (a
    glob that matches one more file) makes the stored run stale, not resumable."""

    from flysearch.compare._run import RunTask

    table = TableSpec("a.json.gz", "a")
    task = RunTask("e", table, SamplerSpec("costmodel"), 0, 8, "r.db", (table, TableSpec("b.json.gz", "b")))
    assert replace(task, priors=(*task.priors, TableSpec("c.json.gz", "c"))).fingerprint != task.fingerprint
    assert replace(task, priors=task.priors[::-1]).fingerprint == task.fingerprint


def test_report_files(tmp_path: Path, dedisp_path: Path) -> None:
    exp = _experiment(tmp_path, dedisp_path, seeds=(0, 1))
    run_experiment(exp)
    written = report_experiment(exp)
    names = {p.name for p in written}
    assert {"summary.md", "summary.csv"} <= names
    assert any(n.endswith(".png") for n in names) and any(n.endswith(".svg") for n in names)
    text = (tmp_path / "out" / "summary.md").read_text()
    assert "random (analytic)" in text and "A100" in text
    # it opens with its provenance: each run recorded the code and the machine it ran with
    from flysearch.compare import code_commit, host_description

    runs = load_runs(tmp_path / "out" / "results.db")
    assert {r["host"] for r in runs} == {host_description()}
    assert {r["commit"] for r in runs} == {code_commit(Path(__file__).resolve().parents[2])}
    head = text.splitlines()[2:6]
    assert [line.split(":")[0] for line in head] == ["- command", "- commit", "- hardware", "- date"]
    assert f"the runs {host_description()}; this report {host_description()}" in head[2]


def test_summary_counts_keep_the_half_of_an_even_median() -> None:
    from flysearch.compare._report import _n

    assert [_n(2.5), _n(10.0), _n(3), _n(math.inf), _n(None), _n(0.1234, 3)] == \
        ["2.5", "10", "3", ">B", "–", "0.123"]


def test_summary_rows_analytic_reference(tmp_path: Path, dedisp_path: Path) -> None:
    exp = _experiment(tmp_path, dedisp_path, seeds=(0,), samplers=(SamplerSpec("grid"),))
    run_experiment(exp)
    infos = compare.load_table_infos(exp)
    rows = summary_rows(load_runs(tmp_path / "out" / "results.db"), infos, exp.budget)
    analytic = next(r for r in rows if r["sampler"] == "random (analytic)")
    info = infos[0]
    g = sum(t is not None and t <= info.optimum_ms * 1.01 for t in info.row_times)
    assert analytic["compiles_1pct_mean"] == pytest.approx((info.n_feasible + 1) / (g + 1))


def test_summary_rows_give_the_mean_and_the_median_fraction_of_the_optimum() -> None:
    from flysearch.compare._report import _run_fields

    steps = [[(4.0, 1.0), (2.0, 2.0)], [(8.0, 1.0), (8.0, 2.0)], [(2.0, 1.0)]]
    runs = [{"trajectory": Trajectory.from_steps(s), "ms_per_trial": 1.0, "trials": len(s),
             "compiles": len(s)} for s in steps]
    row = _run_fields(runs, [2.0, 2.0, 2.0], budget=25, seed=0)
    assert row["fraction_at_25"] == 1.0  # fractions 1, 0.25, 1
    assert row["fraction_mean_at_25"] == pytest.approx(0.75)


def test_restricted_space(dedisp_path: Path) -> None:
    table = load_table(TableSpec(str(dedisp_path)), "")
    space = space_for_table(table)
    name, values = space.free_params()[0].name, space.free_params()[0].values
    sub = restricted_space(space, [(name, values[:1])])
    assert sub.param(name).values == values[:1]
    assert all(c[name] == values[0] for c in sub.enumerate().feasible)
    with pytest.raises(InputFormatError, match="lacks"):
        restricted_space(space, [("NOPE", (1,))])
    with pytest.raises(InputFormatError, match="outside its domain"):
        restricted_space(space, [(name, (-12345,))])


def test_training_tables_exclude_the_scored_table(conv_mi250x, conv_a100) -> None:  # type: ignore[no-untyped-def]
    assert training_tables(conv_a100, [conv_mi250x, conv_a100]) == [conv_mi250x]
    assert training_tables(conv_a100, [conv_a100, conv_a100]) == []


def test_leave_one_table_out_prior(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if compare.model_samplers_available() is not None:
        pytest.skip("flysearch.costmodel is not there yet")
    import flysearch.costmodel as costmodel

    h200 = Path(__file__).resolve().parents[2] / "lab" / "benchmarks" / "data" / "h200"
    paths = [
        h200 / "triton_gemm__H200__1x6144x4096.table.json.gz",
        h200 / "triton_gemm__H200__8x8192x8192.table.json.gz",
    ]
    if not all(p.is_file() for p in paths):
        pytest.skip("the H200 tables are not committed here")
    seen: list[list[str]] = []
    real = costmodel.fit_prior

    def spy(tables, **kw):  # type: ignore[no-untyped-def]
        seen.append([t.name for t in tables])
        return real(tables, **kw)

    monkeypatch.setattr(costmodel, "fit_prior", spy)
    monkeypatch.setattr(compare, "_PRIORS", {})
    monkeypatch.setattr(compare, "runs_portable", lambda: True)  # keep the runs in this process
    exp = Experiment(
        "loo",
        tuple(TableSpec(str(p)) for p in paths),
        (SamplerSpec("costmodel"),),
        seeds=(0,),
        budget=3,
        workers=1,
        output=str(tmp_path / "out"),
    )
    assert run_experiment(exp).done == 2
    assert sorted(seen) == [["triton_gemm/H200/1x6144x4096"], ["triton_gemm/H200/8x8192x8192"]]
    # prior_on_tables = false: the prior sees the [[prior_table]] entries only, never a scored table,
    # and the runs of both tables share the one prior (fitted once)
    seen.clear()
    third = TableSpec(str(h200 / "triton_gemm__H200__4x576x7168.table.json.gz"))
    only_priors = replace(exp, prior_tables=(third,), prior_on_tables=False, output=str(tmp_path / "priors"))
    assert run_experiment(only_priors).done == 2
    assert seen == [["triton_gemm/H200/4x576x7168"]]
    with pytest.raises(InputFormatError, match=r"add a \[\[prior_table\]\]\.$"):
        replace(exp, prior_on_tables=False).validate()


def test_retimed_times_are_the_ground_truth(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """times = "retimed": a re-timed config answers with its median over the rounds, to the runs and
    to the report; the optimum is the re-timed best, and the runs are another setting."""
    path = (Path(__file__).resolve().parents[2] / "lab" / "benchmarks" / "data" / "h200"
            / "triton_gemm__H200__1x6144x4096.table.json.gz")
    if not path.is_file():
        pytest.skip("the H200 tables are not committed here")
    table = load_table(TableSpec(str(path)), "unused.db")
    retimed = table.retimed_ms()
    assert retimed and any(retimed[k] != table.rows[k].time_ms for k in retimed)
    noisy = table.with_retimed_times()
    assert all(noisy.rows[k].time_ms == v for k, v in retimed.items())
    assert all(noisy.rows[k] == r for k, r in table.rows.items() if k not in retimed)
    assert noisy.best().time_ms == min(retimed.values())

    monkeypatch.setattr(compare, "runs_portable", lambda: True)
    exp = Experiment("rt", (TableSpec(str(path)),), (SamplerSpec("random"),), seeds=(0,), budget=20,
                     workers=1, output=str(tmp_path / "rt"), times="retimed", stop_at_optimum=False)
    run_experiment(exp)
    (run,) = load_runs(tmp_path / "rt" / "results.db")
    times = {r.time_ms for r in noisy.ok_rows()}
    assert all(x in times for x in run["trajectory"].best_ms)
    (info,) = compare.load_table_infos(exp)
    assert info.optimum_ms == min(retimed.values()) and info.n_retimed == len(retimed)
    task, = compare.plan_runs(exp)[0]
    assert task.retimed and task.fingerprint != replace(task, retimed=False).fingerprint
    report_experiment(exp, plots=False)
    assert "Noise-aware times: 1 of 1 tables" in (tmp_path / "rt" / "summary.md").read_text()


# -- experiment files and the CLI ------------------------------------------------------------------


def _write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "exp.toml"
    path.write_text(body)
    return path


def test_experiment_file(tmp_path: Path, dedisp_path: Path) -> None:
    path = _write(
        tmp_path,
        f"""
[experiment]
budget = 5
seeds = [1, 2]
output = "o"
[[table]]
source = "{dedisp_path}"
restrict = {{ tile_size_x = [1, 2] }}
[[sampler]]
name = "gp"
seeds = 1
[[sampler]]
name = "tpe"
encoding = "categorical"
""",
    )
    exp = load_experiment(path)
    assert exp.name == "exp" and exp.seeds == (1, 2) and exp.output == str((tmp_path / "o").resolve())
    assert [s.label for s in exp.samplers] == ["gp", "tpe-categorical"] and exp.samplers[0].seeds == (0,)
    assert exp.tables[0].restrict == (("tile_size_x", (1, 2)),)


def test_a_table_source_may_be_a_glob(tmp_path: Path, dedisp_path: Path) -> None:
    """[[table]] reads a pattern as [[prior_table]] does: one table per file, sorted; a label names
    one table, so a pattern matching several files cannot carry one."""
    import shutil

    for name in ("b.json.gz", "a.json.gz"):
        shutil.copy(dedisp_path, tmp_path / name)
    body = '[experiment]\nbudget = 5\n[[table]]\nsource = "*.json.gz"\n{label}[[sampler]]\nname = "tpe"\n'
    exp = load_experiment(_write(tmp_path, body.format(label="")))
    assert [Path(t.source).name for t in exp.tables] == ["a.json.gz", "b.json.gz"]
    with pytest.raises(InputFormatError, match="gives the label 'x' to 2 files"):
        load_experiment(_write(tmp_path, body.format(label='label = "x"\n')))
    with pytest.raises(InputFormatError, match=r"\[\[table\]\] #1 source .*matches no file"):
        load_experiment(_write(tmp_path, body.format(label="").replace("*.json.gz", "nothing*.json.gz")))


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("[experiment]\nbudget = 5\nbogus = 1\n", "unknown keys ['bogus']"),
        (
            '[experiment]\n[[table]]\nsource = "x.json.gz"\n[[sampler]]\nname = "nope"\n',
            "Unknown sampler 'nope'",
        ),
        (
            '[[table]]\nsource = "x.json.gz"\n[[sampler]]\nname = "tpe"\nencoding = "log"\n',
            "Unknown encoding",
        ),
        ('[[table]]\nsource = "x.json.gz"\n', "names no [[sampler]]"),
        ('[experiment]\ntimes = "best"\n[[table]]\nsource = "x.json.gz"\n[[sampler]]\nname = "tpe"\n',
         "Unknown times 'best'"),
        ('[experiment]\nprior_on_tables = "no"\n[[table]]\nsource = "x.json.gz"\n[[sampler]]\nname = "tpe"\n',
         "prior_on_tables must be true or false"),
        ('[[table]]\nsource = "x.json.gz"\n[[sampler]]\nname = "tpe"\noptions = { n_start = 5 }\n',
         "Unknown option(s) n_start of the tpe sampler"),
        ('[[table]]\nsource = "x.json.gz"\n[[sampler]]\nname = "random"\noptions = { seed = 5 }\n',
         "The random sampler takes no options"),
        ('[[table]]\nsource = "x.json.gz"\n[[sampler]]\nname = "tpe"\noptions = 5\n',
         "options must be a table of keyword arguments"),
        ("[experiment\n", "not valid TOML"),
        ('[[table]]\nsource = "missing.json.gz"\n[[sampler]]\nname = "tpe"\n', "does not exist"),
    ],
)
def test_cli_errors_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str,
                                message: str) -> None:
    path = _write(tmp_path, body)
    monkeypatch.chdir(tmp_path)  # where the default output folder would be
    result = CliRunner().invoke(main, ["compare", str(path)])
    assert result.exit_code == 2, result.output
    error = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(error) == 1 and message in error[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["exp.toml"]  # nothing written


def test_cli_missing_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, ["compare", str(tmp_path / "none.toml")])
    assert result.exit_code == 2 and "does not exist" in result.output
    assert not list(tmp_path.iterdir())


@pytest.mark.slow
def test_cli_runs_and_resumes(tmp_path: Path, dedisp_path: Path) -> None:
    path = _write(
        tmp_path,
        f"""
[experiment]
budget = 4
seeds = 2
workers = 1
output = "o"
[[table]]
source = "{dedisp_path}"
[[sampler]]
name = "qmc"
""",
    )
    runner = CliRunner()
    first = runner.invoke(main, ["compare", str(path), "--no-plots", "--out", str(tmp_path / "o")])
    assert first.exit_code == 0, first.output
    assert "2 runs done" in first.output
    second = runner.invoke(main, ["compare", str(path), "--no-plots", "--out", str(tmp_path / "o")])
    assert "0 runs done" in second.output and "2 already stored" in second.output
    with sqlite3.connect(tmp_path / "o" / "results.db") as conn:
        assert conn.execute("select count(*) from runs").fetchone()[0] == 2


def test_key_mistake_matrix_and_one_table_per_kernel(tmp_path: Path) -> None:
    from flysearch.tables import read_table_file

    h200 = Path(__file__).resolve().parents[2] / "lab" / "benchmarks" / "data" / "h200"
    files = [h200 / f"triton_gemm__H200__{s}.table.json.gz" for s in ("1x6144x4096", "4096x4096x4096")]
    head = '[experiment]\nkind = "key_mistake"\noutput = "out"\n'
    path = _write(tmp_path, head + "".join(f'[[table]]\nsource = "{f}"\n' for f in files))
    result = CliRunner().invoke(main, ["compare", str(path), "--no-plots", "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    rows = [(r.split(",")) for r in (tmp_path / "out" / "key_mistake.csv").read_text().splitlines()[1:]]
    got = {(tuned, runs): float(v) for _k, tuned, runs, v in rows}
    tables = [read_table_file(f)[1] for f in files]
    times = [{r.key: r.time_ms for r in rows if r.ok} for rows in tables]
    winners = [min(t, key=t.__getitem__) for t in times]
    small_on_square = times[1][winners[0]] / times[1][winners[1]]  # decode's winner on a square shape
    assert got[("1x6144x4096", "1x6144x4096")] == pytest.approx(1.0)
    assert got[("1x6144x4096", "4096x4096x4096")] == pytest.approx(small_on_square) and small_on_square > 1.5

    one = _write(tmp_path, head.replace('"out"', '"one"') + f'[[table]]\nsource = "{files[0]}"\n')
    result = CliRunner().invoke(main, ["compare", str(one), "--out", str(tmp_path / "one")])
    assert result.exit_code == 2 and "one table per kernel (triton_gemm)" in result.output
    assert not (tmp_path / "one").exists()


def test_the_summary_names_samplers_that_ran_fewer_seeds(tmp_path: Path, dedisp_path: Path) -> None:
    exp = _experiment(tmp_path, dedisp_path, seeds=(0, 1), budget=4,
                      samplers=(SamplerSpec("random"), SamplerSpec("qmc", seeds=(0,))))
    run_experiment(exp)
    report_experiment(exp, plots=False)
    text = (tmp_path / "out" / "summary.md").read_text()
    assert "2 seeds per sampler; 1 for qmc." in text
