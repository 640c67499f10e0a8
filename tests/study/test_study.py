from __future__ import annotations

from collections import Counter
from pathlib import Path

import optuna
import pytest

from flysearch.errors import EmptySpaceError, StudyMismatchError, UnknownSamplerError
from flysearch.evaluators import ReplayEvaluator
from flysearch.samplers import SAMPLERS, TRANSFER_SAMPLERS, make_sampler
from flysearch.space import Constraint, Space
from flysearch.study import StudySpec, StudySummary, run_study, summarize, trial_records
from flysearch.tables import GroundTruth, space_for_table


def settings(table: GroundTruth, sampler: str, budget: int, seed: int = 0, **kw: object) -> StudySpec:
    return StudySpec(sampler=sampler, budget=budget, seed=seed, space=space_for_table(table).name,
                     table=table.name, **kw)  # type: ignore[arg-type]


def compiled_keys(study: optuna.Study) -> list[str]:
    return [r.key for _, r in trial_records(study) if r.compile_index is not None]


@pytest.mark.slow
def test_grid_workers_walk_the_order_from_different_places(conv_mi250x: GroundTruth) -> None:
    from flysearch.samplers import SearchContext

    space = space_for_table(conv_mi250x)
    enumeration = space.enumerate(None, None)
    context = SearchContext(space, "ordinal", enumeration.shuffled(0))
    order = context.encoded()
    firsts = []
    for worker in range(3):
        study = optuna.create_study(sampler=make_sampler("grid", context=context, worker=worker))
        asked = []
        for _ in range(len(order)):
            trial = study.ask(context.distributions)
            asked.append(trial.params)
            study.tell(trial, 1.0)
        start = order.index(asked[0])
        assert asked == order[start:] + order[:start]  # the same order, wrapped around
        firsts.append(start)
    n = len(order)
    assert firsts[0] == 0 and len(set(firsts)) == 3
    assert min(abs(a - b) for a in firsts for b in firsts if a != b) > n // 5  # spread apart


def test_grid_over_the_whole_table_finds_its_optimum(conv_mi250x: GroundTruth) -> None:
    space = space_for_table(conv_mi250x)
    storage = optuna.storages.InMemoryStorage()
    summary = run_study(
        "grid", space, ReplayEvaluator(conv_mi250x), settings(conv_mi250x, "grid", 10_000),
        storage=storage,
    )
    assert summary.compiles == summary.trials == len(conv_mi250x) == 4362
    assert summary.stopped == "feasible space exhausted"
    assert (summary.best_key, summary.best_ms) == (conv_mi250x.best().key, conv_mi250x.best().time_ms)
    keys = compiled_keys(optuna.load_study(study_name="grid", storage=storage))
    assert len(set(keys)) == len(keys) == 4362


@pytest.mark.slow
def test_tpe_spends_at_most_its_budget_and_never_compiles_twice(conv_mi250x: GroundTruth) -> None:
    space = space_for_table(conv_mi250x)
    storage = optuna.storages.InMemoryStorage()
    evaluator = ReplayEvaluator(conv_mi250x)
    summary = run_study("tpe", space, evaluator, settings(conv_mi250x, "tpe", 200), storage=storage)
    study = optuna.load_study(study_name="tpe", storage=storage)
    keys = compiled_keys(study)
    assert summary.compiles == len(keys) == len(set(keys)) == evaluator.compiles == 200
    assert summary.trials == summary.compiles + summary.duplicates + summary.rejected
    assert summary.rejected > 0  # the space's cartesian product holds configs the table lacks
    assert summary.best_ms == min(conv_mi250x.rows[k].time_ms for k in keys)
    records = [r for _, r in trial_records(study)]
    assert [r.compile_index for r in records if r.compile_index] == list(range(1, 201))
    costs = [r.cost_s for r in records]
    assert costs == sorted(costs) and costs[-1] == pytest.approx(evaluator.cost_s)
    for trial, record in trial_records(study):
        if record.duplicate_of is not None:
            assert record.compile_index is None
            assert study.trials[record.duplicate_of].user_attrs["flysearch"]["key"] == record.key
        if record.rejected_by:
            assert record.rejected_by == "listed_in_table" and record.key not in conv_mi250x.rows
            assert trial.constraints == {"flysearch": 1.0}


# costmodel and the zero-shot baselines need other tables (nvmmh a GEMM): tests/samplers/test_zeroshot.py;
# the helion: samplers import Helion (an optional extra) and torch: tests/samplers/test_helion.py.
@pytest.mark.parametrize("sampler", [s for s in SAMPLERS
                                     if s not in ("grid", "costmodel", "nvmmh", *TRANSFER_SAMPLERS)
                                     and not s.startswith("helion:")])
def test_every_sampler_is_seeded(conv_a100: GroundTruth, sampler: str) -> None:
    space = space_for_table(conv_a100)
    budget = 15 if sampler == "gp" else 40
    runs = []
    for _ in range(2):
        storage = optuna.storages.InMemoryStorage()
        run_study(sampler, space, ReplayEvaluator(conv_a100), settings(conv_a100, sampler, budget),
                  storage=storage)
        runs.append(compiled_keys(optuna.load_study(study_name=sampler, storage=storage)))
    assert runs[0] == runs[1]
    # Kernel Tuner's annealing strategies may end before their budget of evaluations is spent.
    ends_early = sampler in ("kt:simulated_annealing", "kt:dual_annealing")
    assert 0 < len(runs[0]) <= budget if ends_early else len(runs[0]) == budget


def test_failures_are_recorded_and_counted(conv_a100: GroundTruth) -> None:
    space = space_for_table(conv_a100)
    storage = optuna.storages.InMemoryStorage()
    summary = run_study("g", space, ReplayEvaluator(conv_a100), settings(conv_a100, "grid", 600, seed=3),
                        storage=storage)
    records = [r for _, r in trial_records(optuna.load_study(study_name="g", storage=storage))]
    outcomes = Counter(r.outcome for r in records)
    expected = Counter(conv_a100.rows[r.key].outcome for r in records)
    assert outcomes == expected and summary.failed == outcomes["runtime_failed"] + outcomes["compile_failed"]
    assert summary.failed > 0


def test_resume_continues_without_repeating(conv_mi250x: GroundTruth, tmp_path: Path) -> None:
    space = space_for_table(conv_mi250x)
    url = f"sqlite:///{tmp_path / 's.db'}"

    def go(budget: int) -> StudySummary:
        evaluator = ReplayEvaluator(conv_mi250x)
        return run_study("r", space, evaluator, settings(conv_mi250x, "random", budget), storage=url)

    first = go(30)
    study = optuna.load_study(study_name="r", storage=url)
    before = {t.number: t.user_attrs["flysearch"] for t in study.trials}
    assert go(30).trials == first.trials  # nothing left to do
    more = go(60)
    study = optuna.load_study(study_name="r", storage=url)
    assert more.compiles == 60
    assert {t.number: t.user_attrs["flysearch"] for t in study.trials if t.number in before} == before
    keys = compiled_keys(study)
    assert len(keys) == len(set(keys)) == 60


def test_interrupted_trials_are_recovered(conv_mi250x: GroundTruth) -> None:
    space = space_for_table(conv_mi250x)
    storage = optuna.storages.InMemoryStorage()
    run_study("x", space, ReplayEvaluator(conv_mi250x), settings(conv_mi250x, "random", 5), storage=storage)
    study = optuna.load_study(study_name="x", storage=storage)
    dangling = study.ask()  # a trial a killed run left RUNNING with nothing measured
    measured = study.ask()  # and one killed between storing its record and telling
    done = next(t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE)
    record = dict(done.user_attrs["flysearch"], duplicate_of=done.number, compile_index=None)
    measured.set_user_attr("flysearch", record)
    run_study("x", space, ReplayEvaluator(conv_mi250x), settings(conv_mi250x, "random", 6), storage=storage)
    trials = optuna.load_study(study_name="x", storage=storage).trials
    assert trials[dangling.number].state == optuna.trial.TrialState.FAIL
    assert trials[measured.number].state == optuna.trial.TrialState.COMPLETE
    assert trials[measured.number].value == done.value
    assert summarize(optuna.load_study(study_name="x", storage=storage)).compiles == 6


def test_changed_settings_are_refused(conv_mi250x: GroundTruth) -> None:
    space = space_for_table(conv_mi250x)
    storage = optuna.storages.InMemoryStorage()
    run_study("m", space, ReplayEvaluator(conv_mi250x), settings(conv_mi250x, "random", 3), storage=storage)
    with pytest.raises(StudyMismatchError, match="seed: stored 0, given 1"):
        run_study("m", space, ReplayEvaluator(conv_mi250x), settings(conv_mi250x, "random", 3, seed=1),
                  storage=storage)


def test_empty_space_raises_before_any_storage(conv_mi250x: GroundTruth, tmp_path: Path) -> None:
    space = space_for_table(conv_mi250x)
    empty = Space(space.name, space.params, [*space.constraints, Constraint("never", lambda c, s, a: False)])
    with pytest.raises(EmptySpaceError):
        run_study("e", empty, ReplayEvaluator(conv_mi250x), settings(conv_mi250x, "tpe", 3),
                  storage=f"sqlite:///{tmp_path / 'e.db'}")
    assert not (tmp_path / "e.db").exists()


def test_unknown_sampler() -> None:
    with pytest.raises(UnknownSamplerError, match="choose one of: grid, random, tpe"):
        make_sampler("hyperband")


def test_costmodel_sampler_proposes_only_new_feasible_configs(
    conv_mi250x: GroundTruth, conv_a100: GroundTruth
) -> None:
    from flysearch.costmodel import fit_prior

    prior = fit_prior([conv_a100], max_iter=30)
    assert prior.provenance["tables"] == ["convolution_milo/A100"]
    space = space_for_table(conv_mi250x)
    runs = []
    for _ in range(2):
        storage = optuna.storages.InMemoryStorage()
        summary = run_study("cm", space, ReplayEvaluator(conv_mi250x), settings(conv_mi250x, "costmodel", 25),
                            storage=storage, prior=prior, problem=conv_mi250x.meta.problem)
        assert summary.compiles == summary.trials == 25  # no duplicate, no infeasible suggestion
        runs.append(compiled_keys(optuna.load_study(study_name="cm", storage=storage)))
    assert runs[0] == runs[1]
    # Its first suggestion is one of the prior's favourites (trees tie).
    keys = list(conv_mi250x.rows)
    scores = prior.score([conv_mi250x.rows[k].params for k in keys], conv_mi250x.meta.problem, None)
    assert scores[keys.index(runs[0][0])] == scores.min()


def test_summary_of_a_database_study_reads_the_same_records_as_optuna(conv_mi250x: GroundTruth,
                                                                       tmp_path) -> None:
    from flysearch.study._study import _records

    space = space_for_table(conv_mi250x)
    url = f"sqlite:///{tmp_path}/s.db"
    run_study("q", space, ReplayEvaluator(conv_mi250x), settings(conv_mi250x, "random", 25), storage=url)
    study = optuna.load_study(study_name="q", storage=url)
    study.ask()  # a running trial is not part of the summary
    slow = [record for _t, record in trial_records(study)]
    assert _records(study) == slow and len(slow) > 25  # duplicates and rejections too
    summary = summarize(study)
    assert summary.trials == len(slow) and summary.compiles == 25
    assert summary.best_ms == min(r.time_ms for r in slow if r.time_ms is not None)


def test_record_as_dict_is_dataclasses_asdict() -> None:
    from dataclasses import asdict

    from flysearch.study._trials import TrialRecord

    record = TrialRecord("BLOCK_M=16", "ok", 1.5, 3, None, None, 0.2, 0.1, "detail")
    assert record.as_dict() == asdict(record)
    assert TrialRecord.from_dict(record.as_dict()) == record


def test_a_replay_never_proposes_a_config_its_table_lacks() -> None:
    """A table of a registered kernel family measured without some of the family's values (here
    every BLOCK_K=256 row dropped) is replayed within its own rows: the configs it lacks are
    rejected by ``listed_in_table``, counted, and never reach the evaluator."""
    from flysearch.tables import TableStore, read_table_file

    h200 = Path(__file__).resolve().parents[2] / "lab" / "benchmarks" / "data" / "h200"
    path = sorted(h200.glob("*.table.json.gz"))[0]
    meta, rows = read_table_file(path)
    store = TableStore(":memory:")
    store.write(meta, [r for r in rows if r.params["BLOCK_K"] != 256])
    table = store.load(meta.name)
    space = space_for_table(table)
    enumeration = space.enumerate(table.meta.shape(), None)
    assert enumeration.removed["listed_in_table"] > 0
    assert {c.key for c in enumeration.feasible} <= set(table.rows)
    for sampler, budget in (("grid", 10_000), ("random", 300)):
        summary = run_study(sampler, space, ReplayEvaluator(table),
                            settings(table, sampler, budget, shape=table.meta.shape().key),
                            shape=table.meta.shape(), storage=optuna.storages.InMemoryStorage())
        assert summary.compiles == min(budget, len(enumeration.feasible))


def test_a_sampler_is_built_with_its_options_and_they_are_part_of_the_study(
        conv_mi250x: GroundTruth) -> None:
    tpe = make_sampler("tpe-unseen", seed=0, options={"n_startup_trials": 31, "multivariate": True})
    assert tpe._n_startup_trials == 31 and tpe._multivariate
    with pytest.raises(UnknownSamplerError, match=r"Unknown option\(s\) startup of the tpe sampler"):
        make_sampler("tpe", seed=0, options={"startup": 3})
    with pytest.raises(UnknownSamplerError, match="The grid sampler takes no options"):
        make_sampler("grid", options={"x": 1})
    space, storage = space_for_table(conv_mi250x), optuna.storages.InMemoryStorage()
    plain = settings(conv_mi250x, "tpe", 3)
    run_study("o", space, ReplayEvaluator(conv_mi250x), plain, storage=storage)
    tuned = settings(conv_mi250x, "tpe", 3, sampler_options={"n_startup_trials": 31})
    assert tuned.stored()["sampler"] == 'tpe {"n_startup_trials": 31}' and plain.stored()["sampler"] == "tpe"
    with pytest.raises(StudyMismatchError):
        run_study("o", space, ReplayEvaluator(conv_mi250x), tuned, storage=storage)


# Under pytest-xdist one worker runs this module, so that its module fixture is set up once.
pytestmark = pytest.mark.xdist_group("study/test_study")


@pytest.fixture(scope="module")
def h200_table() -> GroundTruth:
    """The first committed H200 race of flysearch's Triton split-K GEMM (a registered space)."""
    from flysearch.tables import TableStore, read_table_file

    h200 = Path(__file__).resolve().parents[2] / "lab" / "benchmarks" / "data" / "h200"
    meta, rows = read_table_file(sorted(h200.glob("*.table.json.gz"))[0])
    store = TableStore(":memory:")
    store.write(meta, rows)
    return store.load(meta.name)


def _run_h200(table: GroundTruth, space: Space, url: str, budget: int = 4, **kw: object) -> StudySummary:
    spec = settings(table, "tpe", budget, shape=table.meta.shape().key, storage=url, **kw)
    return run_study("resume", space, ReplayEvaluator(table), spec, shape=table.meta.shape())


def _edited(space: Space, *, params: object = None, constraints: object = None) -> Space:
    return Space(space.name, params or space.params, constraints or space.constraints,  # type: ignore[arg-type]
                 kernel=space.kernel)


def test_a_study_resumed_over_another_space_is_refused_naming_the_difference(
        h200_table: GroundTruth, tmp_path: Path) -> None:
    from flysearch.space import Param

    space, url = space_for_table(h200_table), f"sqlite:///{tmp_path / 's.db'}"
    first = _run_h200(h200_table, space, url)
    stages = space.param("num_stages")
    fewer = [Param(p.name, p.values[:-1]) if p is stages else p for p in space.params]
    removed = rf"\(values of parameter num_stages: removed {stages.values[-1]}\)"
    with pytest.raises(StudyMismatchError, match=removed):
        _run_h200(h200_table, _edited(space, params=fewer), url)
    wider = [Param(p.name, (*p.values, 7)) if p is stages else p for p in space.params]
    with pytest.raises(StudyMismatchError, match=r"\(values of parameter num_stages: added 7\); resume it"):
        _run_h200(h200_table, _edited(space, params=wider), url)
    extra = Constraint("even_warps", lambda c, s, a: int(c["num_warps"]) % 2 == 0)
    with pytest.raises(StudyMismatchError, match=r"\(constraint even_warps added\)"):
        _run_h200(h200_table, _edited(space, constraints=[*space.constraints, extra]), url)
    # The same name over another predicate: the code changed, the name did not.
    smem = space.constraints[0]
    recoded = [Constraint(smem.name, lambda c, s, a: True), *space.constraints[1:]]
    with pytest.raises(StudyMismatchError, match=rf"\(constraint {smem.name} changed its code\)"):
        _run_h200(h200_table, _edited(space, constraints=recoded), url)
    with pytest.raises(StudyMismatchError,
                       match=r'\(options of sampler tpe: stored \{\}, given \{"n_startup_trials": 3\}\)'):
        _run_h200(h200_table, space, url, sampler_options={"n_startup_trials": 3})
    # The same space, rebuilt from the table in another call: resumed, and nothing is compiled twice.
    again = _run_h200(h200_table, space_for_table(h200_table), url, budget=6)
    assert (first.compiles, again.compiles) == (4, 6)


def test_a_study_stored_without_its_space_is_resumed_and_gets_it_written(
        h200_table: GroundTruth, tmp_path: Path) -> None:
    space, url = space_for_table(h200_table), f"sqlite:///{tmp_path / 's.db'}"
    _run_h200(h200_table, space, url)
    study = optuna.load_study(study_name="resume", storage=url)
    record = dict(study.user_attrs["flysearch"])
    assert record.pop("searched") == space.fingerprint()
    study.set_user_attr("flysearch", record)  # what flysearch stored before it stored the space
    assert _run_h200(h200_table, space, url).new_trials == 0  # resumed: nothing left to do
    stored = optuna.load_study(study_name="resume", storage=url).user_attrs["flysearch"]
    assert stored["searched"] == space.fingerprint()


def test_run_study_uses_the_storage_its_spec_names(h200_table: GroundTruth, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'named.db'}"
    _run_h200(h200_table, space_for_table(h200_table), url)
    assert summarize(optuna.load_study(study_name="resume", storage=url)).compiles == 4
    assert not (tmp_path / "flysearch-studies.db").exists()
