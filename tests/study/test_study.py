from __future__ import annotations

from collections import Counter
from pathlib import Path

import optuna
import pytest

from flysearch.errors import EmptySpaceError, StudyMismatchError, UnknownSamplerError
from flysearch.evaluators import ReplayEvaluator
from flysearch.samplers import SAMPLERS, make_sampler
from flysearch.space import Constraint, Space
from flysearch.study import StudySpec, StudySummary, run_study, summarize, trial_records
from flysearch.tables import GroundTruth, space_for_table


def settings(table: GroundTruth, sampler: str, budget: int, seed: int = 0, **kw: object) -> StudySpec:
    return StudySpec(sampler=sampler, budget=budget, seed=seed, space=space_for_table(table).name,
                     table=table.name, **kw)  # type: ignore[arg-type]


def compiled_keys(study: optuna.Study) -> list[str]:
    return [r.key for _, r in trial_records(study) if r.compile_index is not None]


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


@pytest.mark.parametrize("sampler", [s for s in SAMPLERS if s not in ("grid", "costmodel")])
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

    h200 = Path(__file__).resolve().parents[2] / "benchmarks" / "data" / "h200"
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
