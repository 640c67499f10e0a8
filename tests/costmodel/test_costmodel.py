from __future__ import annotations

import glob
import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner
from sklearn.utils.estimator_checks import parametrize_with_checks

from flysearch.cli import main
from flysearch.compare._costmodel_eval import leave_one_out, prior_ranks
from flysearch.costmodel._features import (
    OCCUPANCY_WAVE_FEATURES,
    columns_matrix,
    config_features,
    feature_columns,
    gemm_roles,
)
from flysearch.costmodel._model import CostModel, fit_prior, load_prior, occupancy_views
from flysearch.errors import InputFormatError
from flysearch.space import get_arch
from flysearch.tables import GroundTruth, TableStore, read_table_file
from tests.conftest import REPO

H200 = sorted(glob.glob(str(REPO / "lab" / "benchmarks" / "data" / "h200" / "*.table.json.gz")))
# The three smallest of them (about 500 configs each), where a check does not depend on the tables.
SMALL = [str(REPO / "lab" / "benchmarks" / "data" / "h200" / f"triton_gemm__H200__{shape}.table.json.gz")
         for shape in ("1x6144x4096", "8x8192x8192", "32x28672x4096")]


# Under pytest-xdist one worker runs this module, so that its module fixture is set up once.
pytestmark = pytest.mark.xdist_group("costmodel/test_costmodel")


@pytest.fixture(scope="module")
def h200_tables() -> list[GroundTruth]:
    if not H200:
        pytest.skip("the committed H200 tables are missing from lab/benchmarks/data/h200")
    store = TableStore(":memory:")
    out = []
    for path in H200:
        meta, rows = read_table_file(path)
        store.write(meta, rows)
        out.append(store.load(meta.name))
    return out


@parametrize_with_checks([CostModel(max_iter=5), CostModel(objective="rank", max_iter=5),
                          CostModel(max_iter=5, feature_views=((0,), None)),
                          CostModel(max_iter=5, top_boost=5.0)])
def test_sklearn_estimator_contract(estimator: CostModel, check: object) -> None:
    check(estimator)  # type: ignore[operator]


def test_rank_targets_ignore_scale_within_a_group() -> None:
    x = np.tile(np.linspace(0, 1, 200), 2)
    groups = np.repeat([0, 1], 200)
    y = np.exp(3 * x) * np.where(groups == 1, 10.0, 1.0)  # two groups, 10x apart in scale
    X = np.column_stack([x, groups])
    for objective in ("rank", "log_ratio"):
        pred = CostModel(objective=objective, max_iter=50).fit(X, y, groups).predict(X)
        assert pred[0] < pred[199] and pred[200] < pred[399]
        assert abs(pred[0] - pred[200]) < 0.05  # each group's best maps to the same target


def test_top_boost_fits_the_fastest_rows_closer() -> None:
    """Weighting each group's top rows makes a model too small for the whole order fit the top
    better, at the cost of the slow rows."""
    rng = np.random.default_rng(0)
    X = rng.random((400, 3))
    y = np.exp(X @ np.array([2.0, -1.0, 0.5]) + np.sin(6 * X[:, 0]))
    groups = np.repeat([0, 1], 200)
    top = np.concatenate([np.argsort(y[g * 200:(g + 1) * 200])[:20] + g * 200 for g in (0, 1)])
    errors = []
    for boost in (0.0, 20.0):
        model = CostModel(objective="rank", max_iter=8, max_leaf_nodes=4, top_boost=boost, top_scale=10.0)
        target = np.concatenate([np.log1p(np.argsort(np.argsort(y[groups == g]))) / np.log1p(199)
                                 for g in (0, 1)])
        residual = np.abs(model.fit(X, y, groups).predict(X) - target)
        errors.append((residual[top].mean(), np.delete(residual, top).mean()))
    (plain_top, plain_rest), (sharp_top, sharp_rest) = errors
    assert sharp_top < 0.8 * plain_top and sharp_rest > plain_rest


def test_a_model_saved_with_one_booster_still_predicts() -> None:
    rng = np.random.default_rng(0)
    X = rng.random((300, 3))
    y = np.exp(X @ np.array([2.0, -1.0, 0.5])) + rng.random(300)
    # A model saved before the list of boosters kept its one booster as model_.
    old = CostModel(max_iter=20).fit(X, y)
    expected = old.predict(X)
    old.model_ = old.boosters_[0]
    del old.boosters_
    assert np.allclose(old.predict(X), expected)


def test_each_feature_view_is_a_booster_that_sees_only_its_columns() -> None:
    rng = np.random.default_rng(1)
    X = rng.random((300, 3))
    y = np.exp(3 * X[:, 2]) + 0.1 * X[:, 0]  # column 2 decides
    model = CostModel(max_iter=20, feature_views=((0, 1), None)).fit(X, y)
    assert [b.n_features_in_ for b in model.boosters_] == [2, 3]
    blind, sighted = model.boosters_
    assert np.allclose(model.predict(X), (blind.predict(X[:, [0, 1]]) + sighted.predict(X)) / 2)
    shuffled = X.copy()
    shuffled[:, 2] = rng.permutation(X[:, 2])
    assert np.allclose(blind.predict(shuffled[:, [0, 1]]), blind.predict(X[:, [0, 1]]))
    assert not np.allclose(model.predict(shuffled), model.predict(X))
    with pytest.raises(ValueError, match="feature_views"):
        CostModel(feature_views=((0, 3),)).fit(X, y)
    with pytest.raises(ValueError, match="feature_views"):
        CostModel(feature_views=((),)).fit(X, y)


def test_occupancy_views_leave_the_occupancy_waves_out_of_one_booster() -> None:
    schema = ["g_occ_wave_eff", "g_occ_waves", "g_tiles", "p_BLOCK_M"]
    assert occupancy_views(schema) == ((2, 3), None)
    assert occupancy_views(["g_tiles", "p_BLOCK_M"]) is None  # nothing to leave out: one view


def test_a_prior_averages_a_booster_with_and_one_without_the_occupancy_waves(
        h200_tables: list[GroundTruth]) -> None:
    train, held = h200_tables[:3], h200_tables[3]
    params = [r.params for r in held.rows.values()]
    problem, arch = held.meta.problem, get_arch("sm_90")
    both = fit_prior(train, max_iter=30)
    assert both.provenance["feature_views"] == [sorted(OCCUPANCY_WAVE_FEATURES), []]
    # Each booster alone, as lab/benchmarks/costmodel_eval.py --occupancy-waves without|with trains it.
    without = fit_prior(train, max_iter=30, exclude_features=OCCUPANCY_WAVE_FEATURES)
    with_ = fit_prior(train, max_iter=30, feature_views=None)
    assert "feature_views" not in with_.provenance
    blind, sighted = without.score(params, problem, arch), with_.score(params, problem, arch)
    assert np.allclose(both.score(params, problem, arch), (blind + sighted) / 2)
    assert not np.allclose(blind, sighted)


def test_occupancy_waves_count_whole_resident_blocks() -> None:
    # 64x28672x4096 on the H200: 448 tiles of 64x64; 3 stages of 64-deep tiles take 48 KiB of shared
    # memory (4 blocks fit on an SM: 1 wave over 132 SMs), 4 stages 64 KiB (3 fit: 2 waves).
    sm90, problem = get_arch("sm_90"), {"M": 64, "N": 28672, "K": 4096}
    base = {"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 64, "SPLIT_K": 1, "num_warps": 4}
    three = config_features(base | {"num_stages": 3}, problem, sm90)
    four = config_features(base | {"num_stages": 4}, problem, sm90)
    assert three["g_waves"] == four["g_waves"] == pytest.approx(448 / 132)
    assert three["g_occ_waves"] == pytest.approx(448 / (132 * 4))
    assert four["g_occ_waves"] == pytest.approx(448 / (132 * 3))
    assert three["g_occ_wave_eff"] == pytest.approx(448 / (132 * 4))
    assert four["g_occ_wave_eff"] == pytest.approx(448 / (2 * 132 * 3))


def test_gemm_features() -> None:
    sm90 = get_arch("sm_90")
    params = {"BLOCK_M": 16, "BLOCK_N": 128, "BLOCK_K": 64, "SPLIT_K": 2, "num_warps": 4, "num_stages": 3}
    assert gemm_roles(params) == {"tile_m": 16, "tile_n": 128, "tile_k": 64, "split_k": 2, "stages": 3,
                                  "warps": 4}
    f = config_features(params, {"M": 1, "N": 4096, "K": 4096, "dtype": "bf16"}, sm90)
    assert f["g_tiles"] == 32 and f["g_blocks"] == 64 and f["g_k_iters"] == 32
    assert f["g_wave_eff"] == pytest.approx(64 / 132)
    assert f["g_pad_m"] == pytest.approx(15 / 16)
    assert f["g_lds_kib"] == pytest.approx(3 * (16 + 128) * 64 * 2 / 1024)
    assert f["p_BLOCK_M"] == 4.0 and f["a_cus"] == 132.0
    aiter = config_features({"tile_m": 16, "tile_n": 64, "block_m_warp": 1, "block_n_warp": 2,
                             "block_k_warp": 2}, {"M": 16, "N": 64, "K": 64}, get_arch("gfx950"))
    assert aiter["g_tiles"] == 1.0 and gemm_roles({"block_m_warp": 1, "block_n_warp": 2,
                                                   "block_k_warp": 2})["warps"] == 4


def test_prior_is_saved_with_schema_and_provenance(h200_tables: list[GroundTruth], tmp_path: Path) -> None:
    prior = fit_prior(h200_tables[:3], max_iter=20)
    assert prior.provenance["tables"] == [t.name for t in h200_tables[:3]]
    assert prior.provenance["objective"] == "rank" and "scikit-learn" in prior.provenance["versions"]
    assert prior.provenance["targets"] == ["triton_gemm_splitk@sm_90"]
    assert prior.provenance["sharp"] == {"top_boost": 15.0, "top_scale": 30.0}
    prior.save(tmp_path / "p.joblib")
    again = load_prior(tmp_path / "p.joblib")
    table = h200_tables[3]
    rows = list(table.rows.values())[:50]
    args = ([r.params for r in rows], table.meta.problem, get_arch("sm_90"))
    assert np.array_equal(prior.score(*args), again.score(*args)) and again.schema == prior.schema
    # On the space and arch it was trained on, the top-weighted model scores; elsewhere the plain one.
    home = "triton_gemm_splitk@sm_90"
    assert again.at(home).model is again.sharp and again.at("triton_gemm_splitk@sm_80") is again
    assert np.array_equal(prior.at(home).score(*args), again.at(home).score(*args))
    assert not np.array_equal(again.score(*args), again.at(home).score(*args))
    assert fit_prior(h200_tables[:3], max_iter=5, top_boost=0.0).at(home).sharp is None
    (tmp_path / "junk").write_text("not a model")
    with pytest.raises(InputFormatError, match="not a flysearch model file"):
        load_prior(tmp_path / "junk")
    with pytest.raises(InputFormatError, match="does not exist"):
        load_prior(tmp_path / "absent")


class _Unpicklable:
    def __reduce__(self) -> object:
        raise RuntimeError("the serializer failed")


def test_a_prior_whose_writing_fails_midway_leaves_the_one_it_replaces(
        h200_tables: list[GroundTruth], tmp_path: Path) -> None:
    path = tmp_path / "p.joblib"
    prior = fit_prior(h200_tables[:2], max_iter=5, top_boost=0.0)
    prior.save(path)
    before = path.read_bytes()
    # The model's trees are written before the provenance, where the serializer fails.
    broken = replace(prior, provenance={**prior.provenance, "note": _Unpicklable()})
    with pytest.raises(RuntimeError, match="the serializer failed"):
        broken.save(path)
    assert path.read_bytes() == before and list(tmp_path.iterdir()) == [path]
    assert load_prior(path).schema == prior.schema


def test_a_prior_can_leave_a_feature_out(h200_tables: list[GroundTruth], tmp_path: Path) -> None:
    from flysearch.errors import FlysearchError

    full = fit_prior(h200_tables[:3], max_iter=5, top_boost=0.0)
    prior = fit_prior(h200_tables[:3], max_iter=5, top_boost=0.0, exclude_features=["g_split_fixed"])
    assert "g_split_fixed" in full.schema
    assert prior.schema == [f for f in full.schema if f != "g_split_fixed"]
    assert prior.provenance["excluded_features"] == ["g_split_fixed"]
    assert "excluded_features" not in full.provenance
    rows = list(h200_tables[3].rows.values())[:20]
    scores = prior.score([r.params for r in rows], h200_tables[3].meta.problem, get_arch("sm_90"))
    assert scores.shape == (20,)
    with pytest.raises(FlysearchError, match="No table has the feature g_nope to leave out"):
        fit_prior(h200_tables[:2], max_iter=5, exclude_features=["g_nope"])
    files = [str(p) for p in H200[:2]]
    out = tmp_path / "p.joblib"
    result = CliRunner().invoke(main, ["model", "train", *(x for f in files for x in ("--file", f)),
                                       "--exclude-feature", "g_split_fixed", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert load_prior(out).provenance["excluded_features"] == ["g_split_fixed"]
    result = CliRunner().invoke(main, ["model", "train", "--file", files[0], "--exclude-feature", "g_nope",
                                       "--out", str(tmp_path / "q.joblib")])
    assert result.exit_code == 2 and "g_nope" in result.output and not (tmp_path / "q.joblib").exists()


def test_a_reused_prior_is_loaded_once_while_its_file_is_unchanged(
    h200_tables: list[GroundTruth], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "p.joblib"
    fit_prior(h200_tables[:2], max_iter=5).save(path)
    first = load_prior(path, reuse=True)
    monkeypatch.chdir(tmp_path)
    assert load_prior("p.joblib", reuse=True) is first  # the same file, named another way
    assert load_prior(path) is not first  # without reuse: read again
    fit_prior(h200_tables[:3], max_iter=5).save(path)  # rewritten: read again
    assert load_prior(path, reuse=True).provenance["tables"] == [t.name for t in h200_tables[:3]]
    with pytest.raises(InputFormatError, match="does not exist"):
        load_prior(tmp_path / "absent", reuse=True)


def test_leave_one_out_never_trains_on_the_held_out_table(h200_tables: list[GroundTruth]) -> None:
    tables = h200_tables[:4]
    results = leave_one_out(tables, sampler=None, max_iter=20)
    assert [r.table for r in results] == [t.name for t in tables]
    for r in results:
        assert r.table not in r.trained_on and len(r.trained_on) == 3
        assert all(1 <= (rank or 0) <= r.configs for rank in r.prior_rank.values())
        assert r.prior_rank[0.05] <= r.prior_rank[0.01]


def test_extra_tables_are_trained_on_and_never_held_out(h200_tables: list[GroundTruth]) -> None:
    tables, extra = h200_tables[:3], h200_tables[3:5]
    # An extra table that is also in the held-out set is held out like the others, not added twice.
    results = leave_one_out(tables, sampler=None, max_iter=20, extra=extra + tables[:1])
    assert [r.table for r in results] == [t.name for t in tables]
    for r in results:
        others = [t.name for t in tables if t.name != r.table]
        assert r.trained_on == others + [t.name for t in extra]
    alone = leave_one_out(tables[:2], sampler=None, max_iter=20)
    assert [r.trained_on for r in alone] == [[tables[1].name], [tables[0].name]]


def test_leave_one_out_in_worker_processes_gives_the_same_results(h200_tables: list[GroundTruth]) -> None:
    tables = h200_tables[:3]
    alone = leave_one_out(tables, seeds=(0, 1), budget=6, max_iter=20)
    pooled = leave_one_out(tables, seeds=(0, 1), budget=6, max_iter=20, workers=2)
    assert [r.table for r in pooled] == [t.name for t in tables]
    assert [(r.prior_rank, r.sampler, r.trained_on) for r in pooled] == \
        [(r.prior_rank, r.sampler, r.trained_on) for r in alone]


def _without_rounds(table: GroundTruth) -> GroundTruth:
    """*table* as its race left it, without the rounds that confirmed its top."""
    from dataclasses import replace

    from flysearch.tables import RETIME

    return GroundTruth(table.meta, {k: replace(r, extra={n: v for n, v in r.extra.items() if n != RETIME})
                                    for k, r in table.rows.items()})


def test_retimed_keys_count_the_compiles_to_the_first_measured_one(h200_tables: list[GroundTruth]) -> None:
    tables = [_without_rounds(t) for t in h200_tables[:4]]
    held = tables[1]
    best = held.best().time_ms or 0.0
    race_set = [r.key for r in held.rows.values() if r.ok and (r.time_ms or 0.0) <= best * 1.01]
    slowest = max((r for r in held.rows.values() if r.ok), key=lambda r: r.time_ms or 0.0).key
    results = leave_one_out(tables, seeds=(0, 1), budget=48, max_iter=20, retimed={held.name: race_set})
    # The race's own 1% set given as the re-timed one: the same counts as the race's criterion.
    assert results[1].retimed == results[1].sampler[0.01] and any(results[1].retimed)
    assert results[1].retimed_median() == results[1].sampler_median(0.01)
    assert results[0].retimed == [] and results[0].retimed_median() is None  # no re-timed top given
    # A re-timed top the search never measures within the budget: no seed reaches it.
    never = leave_one_out(tables[:2], seeds=(0,), budget=3, max_iter=20, retimed={held.name: [slowest]})
    assert never[1].retimed == [None]


def test_a_table_whose_race_retimed_its_top_is_judged_by_those_rounds_too(
        h200_tables: list[GroundTruth]) -> None:
    from flysearch.evaluators import with_rounds

    tables = [_without_rounds(t) for t in h200_tables[:4]]
    held = tables[1]
    slowest = max(held.ok_rows(), key=lambda r: r.time_ms or 0.0)
    # The rounds crown the table's slowest config: only the re-timed column can tell.
    rows = with_rounds([slowest, held.best()], {slowest.key: [0.5, 0.5], held.best().key: [1.0, 1.0]}, {})
    held.rows.update({r.key: r for r in rows})
    assert held.within_retimed() == [slowest.key]
    own = leave_one_out(tables, seeds=(0,), budget=3, max_iter=20)
    given = leave_one_out(tables, seeds=(0,), budget=3, max_iter=20, retimed={held.name: [slowest.key]})
    assert own[1].retimed == given[1].retimed == [None] and own[0].retimed == own[2].retimed == []
    # An explicit mapping wins over the table's own rounds.
    best = held.best().time_ms or 0.0
    race_set = [r.key for r in held.ok_rows() if (r.time_ms or 0.0) <= best * 1.01]
    mapped = leave_one_out(tables, seeds=(0, 1), budget=48, max_iter=20, retimed={held.name: race_set})
    assert mapped[1].retimed == mapped[1].sampler[0.01] and any(mapped[1].retimed)


def test_random_expectation_counts_failed_configs_as_compiles() -> None:
    from flysearch.compare._costmodel_eval import random_expectation

    table = _toy("t", {1: 1.0, 2: 1.005, 3: 1.03, 4: 2.0, 5: None})
    # 5 configs (one failed); within 1%: 2 of them -> (5 + 1) / (2 + 1); within 5%: 3 -> 6 / 4.
    assert random_expectation(table) == {0.01: 2.0, 0.05: 1.5}


@pytest.mark.slow
def test_a_trained_prior_ranks_better_than_chance(h200_tables: list[GroundTruth]) -> None:
    """Leave-one-shape-out: the first config within 5% sits in the prior's top 10% on most shapes."""
    ranks = []
    for i, held in enumerate(h200_tables[:6]):
        prior = fit_prior([t for j, t in enumerate(h200_tables) if j != i], max_iter=60)
        ranks.append(prior_ranks(prior, held)[0.05] / len(held.rows))
    assert np.median(ranks) < 0.1


@pytest.mark.slow
def test_model_cli(tmp_path: Path) -> None:
    if not H200:
        pytest.skip("the committed H200 tables are missing")
    runner = CliRunner(env={"COLUMNS": "240"})
    out = tmp_path / "m.prior"
    res = runner.invoke(main, ["model", "train", "--file", SMALL[0], "--file", SMALL[1], "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "trained on 2 tables" in res.output and load_prior(out).sharp is not None
    plain = tmp_path / "plain.prior"
    res = runner.invoke(main, ["model", "train", "--file", SMALL[0], "--top-boost", "0", "--out", str(plain)])
    assert res.exit_code == 0 and load_prior(plain).sharp is None
    res = runner.invoke(main, ["model", "train", "--file", SMALL[0], "--top-boost", "-1",
                               "--out", str(plain)])
    assert res.exit_code == 2 and "--top-boost" in res.output
    res = runner.invoke(main, ["model", "rank", "--model", str(out), "--file", SMALL[2], "--top", "3"])
    assert res.exit_code == 0 and "vs optimum" in res.output
    held = Path(SMALL[2]).name.removesuffix(".table.json.gz").replace("__", "/")
    res = runner.invoke(main, ["model", "rank", "--model", str(out), "--file", SMALL[2], "--top", "3",
                               "--json"])
    ranked = [json.loads(line) for line in res.stdout.splitlines()]
    assert res.exit_code == 0 and [(r["table"], r["rank"]) for r in ranked] == [(held, i) for i in (1, 2, 3)]
    assert all(r["vs_optimum"] >= 1.0 for r in ranked if r["outcome"] == "ok")
    res = runner.invoke(main, ["model", "eval", "--file", SMALL[0], "--file", SMALL[1], "--file", SMALL[2],
                               "--sampler", "none"])
    assert res.exit_code == 0 and "prior rank 1%" in res.output
    pooled = runner.invoke(main, ["model", "eval", "--file", SMALL[0], "--file", SMALL[1], "--file", SMALL[2],
                                  "--sampler", "none", "--workers", "2"])
    assert pooled.exit_code == 0 and len(_rows(res.output)) == 3
    assert _rows(pooled.output) == _rows(res.output)
    extra = runner.invoke(main, ["model", "eval", "--file", SMALL[0], "--file", SMALL[1], "--sampler", "none",
                                 "--extra-file", SMALL[2], "--json"])
    results = [json.loads(line) for line in extra.stdout.splitlines()]  # the progress goes to stderr
    assert extra.exit_code == 0 and len(results) == 2  # the extra table is not held out
    assert all(r["table"] != held and held in r["trained_on"] and "0.01" in r["prior_rank"] for r in results)
    res = runner.invoke(main, ["model", "eval", "--file", SMALL[0], "--extra-file", "nowhere/*.gz"])
    assert res.exit_code == 2 and "nowhere" in res.output
    res = runner.invoke(main, ["model", "eval", "--file", SMALL[0], "--workers", "0"])
    assert res.exit_code == 2 and "--workers" in res.output
    res = runner.invoke(main, ["model", "rank", "--model", str(tmp_path / "nope"), "--file", SMALL[2]])
    assert res.exit_code == 2 and "does not exist" in res.output


def _rows(output: str) -> list[str]:
    """The body rows of a ``model eval`` printout's table (its log lines carry times)."""
    return [line for line in output.splitlines() if line.startswith("│")]


def test_thread_block_features() -> None:
    """Kernel Tuner's block_size_*/tile_size_* names give threads, grid and alignment features."""
    params = {"block_size_x": 48, "block_size_y": 4, "tile_size_x": 2, "tile_size_y": 1, "use_shmem": 1}
    f = config_features(params, {"problem_size": [4096, 4096]}, get_arch("gfx90a"))
    assert f["t_log2_threads"] == pytest.approx(np.log2(192))
    assert f["t_log2_blocks"] == pytest.approx(np.log2(43 * 1024))
    assert f["t_wave_aligned"] == 1.0 and f["t_x_wave_aligned"] == 0.0
    assert f["q_block_size_x_pow2"] == 0.0 and f["q_block_size_y_pow2"] == 1.0
    assert not any(k.startswith("t_") for k in config_features({"BLOCK_M": 16}, {"M": 1}, None))


def test_feature_columns_match_each_config_alone() -> None:
    """Computed for many configs at once, every config gets the features it gets alone: configs of
    mixed kinds (a GEMM tile set, a warp layout, thread blocks, one with an invalid block size,
    strings and bools) leave NaN where a feature does not apply to them."""
    configs = [
        {"BLOCK_M": 16, "BLOCK_N": 128, "BLOCK_K": 64, "SPLIT_K": 2, "num_warps": 4, "num_stages": 3},
        {"BLOCK_M": 64, "BLOCK_N": 32, "kpack": "wide", "swap": True},
        {"tile_m": 32, "tile_n": 64, "block_m_warp": 2, "block_n_warp": 2, "block_k_warp": 1},
        {"block_size_x": 48, "block_size_y": 4, "tile_size_x": 2, "use_shmem": 1},
        {"block_size_x": 0, "tile_size_x": 3, "kpack": "narrow"},
        {"BLOCK_M": 8, "BLOCK_N": 16, "SPLIT_K": 1.5},
    ]
    problem = {"M": 100, "N": 4096, "K": 4096, "dtype": "bf16", "problem_size": [4096, 4096, 7, 3]}
    resources = [{"vgpr": 128}, None, {"spills": 0, "lds_bytes": 1024}, {}, {"vgpr": True}, None]
    for arch in (get_arch("sm_90"), get_arch("gfx950"), None):
        for res in (None, resources):
            columns = feature_columns(configs, problem, arch, res)
            alone = [config_features(c, problem, arch, None if res is None else res[i])
                     for i, c in enumerate(configs)]
            schema = sorted(columns)
            assert schema == sorted({name for row in alone for name in row})
            together = columns_matrix(columns, schema, len(configs))
            stacked = np.array([[row.get(name, np.nan) for name in schema] for row in alone], dtype=float)
            assert np.array_equal(together, stacked, equal_nan=True)
    assert "r_vgpr" in feature_columns(configs, problem, None, resources)
    with pytest.raises(ValueError, match="2 resource records for 6 configs"):
        feature_columns(configs, problem, None, resources[:2])


def test_costmodel_sampler_starts_with_distinct_configs(
    conv_mi250x: GroundTruth, conv_a100: GroundTruth
) -> None:
    """The first suggestions follow the prior but differ pairwise in at least 3 parameters."""
    import optuna

    from flysearch.evaluators import ReplayEvaluator
    from flysearch.study import StudySpec, run_study, trial_records
    from flysearch.tables import space_for_table

    prior = fit_prior([conv_a100], max_iter=30)
    space = space_for_table(conv_mi250x)
    storage = optuna.storages.InMemoryStorage()
    spec = StudySpec(sampler="costmodel", budget=8, seed=1, space=space.name)
    run_study("d", space, ReplayEvaluator(conv_mi250x), spec,
              storage=storage, prior=prior, problem=conv_mi250x.meta.problem, arch=get_arch("gfx90a"))
    keys = [r.key for _, r in trial_records(optuna.load_study(study_name="d", storage=storage))]
    first = [conv_mi250x.rows[k].params for k in keys[:6]]
    for i, a in enumerate(first):
        for b in first[:i]:
            assert sum(a[p] != b[p] for p in a) >= 3


@pytest.mark.slow
def test_a_sure_prior_shortens_the_diverse_start(h200_tables: list[GroundTruth]) -> None:
    """A "rank" prior's best score implies how many configs it expects to beat its top pick; the
    diverse start is no longer than that, and a "log_ratio" prior keeps the full start."""
    import math

    from flysearch.costmodel import table_arch, table_target
    from flysearch.samplers import SearchContext
    from flysearch.samplers._costmodel import CostModelSampler, implied_rank
    from flysearch.study import StudySpec
    from flysearch.tables import space_for_table

    held = next(t for t in h200_tables if t.name.endswith("/96x14336x4096"))
    others = [t for t in h200_tables if t is not held]
    space = space_for_table(held)
    feasible = space.enumerate(held.meta.shape(), table_arch(held)).feasible
    encoding = StudySpec(sampler="costmodel", budget=8, seed=0).encoding
    context = SearchContext(space, encoding, feasible, held.meta.shape(),
                            table_arch(held), held.meta.problem)
    rank_prior = fit_prior(others, max_iter=150).at(table_target(held))
    best = float(rank_prior.score([c.as_dict() for c in feasible], held.meta.problem, table_arch(held)).min())
    expected = max(1, math.ceil(implied_rank(best, len(feasible))))
    assert expected < 6  # this prior is sure of this shape
    assert CostModelSampler(context, rank_prior, seed=0)._n_diverse == expected
    log_prior = fit_prior(others, objective="log_ratio", max_iter=150)
    assert CostModelSampler(context, log_prior, seed=0)._n_diverse == 6


def test_a_prior_from_the_studys_arch_is_walked_in_its_order(h200_tables: list[GroundTruth]) -> None:
    """With a prior trained on the study's space and arch, its top-weighted model scores, and of
    the first eight suggestions the 1st, 3rd, ... are its best unevaluated config and the others
    the best of its top 16 that takes a parameter value no earlier suggestion took; after them
    every second suggestion is the prior's best unevaluated config while the measurements do not
    contradict it, and the others the best by :func:`prior_kriging` within two value steps of the
    best measured config; a prior trained on other archs, or on other kernels of this arch, is
    never walked."""
    import dataclasses
    import math

    from flysearch.costmodel import table_arch, table_target
    from flysearch.samplers import SearchContext
    from flysearch.samplers._costmodel import CostModelOptions, CostModelSampler, prior_kriging
    from flysearch.tables import space_for_table

    held = next(t for t in h200_tables if t.name.endswith("/16x4096x14336"))
    prior = fit_prior([t for t in h200_tables if t is not held], max_iter=100)
    space = space_for_table(held)
    feasible = space.enumerate(held.meta.shape(), table_arch(held)).shuffled(0)
    shape, problem = held.meta.shape(), held.meta.problem
    context = SearchContext(space, "ordinal", feasible, shape, table_arch(held), problem)
    no_stall = CostModelOptions(epsilon=0.0, patience=64)
    sampler = CostModelSampler(context, prior, seed=0, options=no_stall)
    sharp = prior.at(table_target(held)).score([c.as_dict() for c in feasible], problem, table_arch(held))
    assert np.array_equal(sampler._prior_score, sharp)
    everything = np.arange(len(feasible))
    walked = kriged = covered = 0
    for _ in range(28):
        free = np.setdiff1d(everything, np.fromiter(sampler._seen, dtype=int))
        n = len(sampler._observed)
        turn = n >= max(sampler._n_diverse, 8) and not sampler._stalled()
        walk = turn and n % 2 == 1 and sampler._prior_trust() > 0
        pick = sampler._choose(free, set(sampler._seen), 0)
        if n < 8 and n % 2 == 0:  # the prior's best unevaluated config
            assert sampler._prior_score[pick] == sampler._prior_score[free].min()
        elif n < 8:  # a covering pick among the prior's top 16
            top = free[np.argsort(sampler._prior_score[free], kind="stable")[:16]]
            used = sampler._ordinal[np.fromiter(sampler._seen, dtype=int)]
            fresh = [c for c in top if any(v not in used[:, j] for j, v in enumerate(sampler._ordinal[c]))]
            assert fresh and pick == fresh[0]
            covered += 1
        if walk:
            walked += 1
            assert sampler._prior_score[pick] == sampler._prior_score[free].min()
        elif turn:
            kriged += 1
            idx, y = sampler._targets()
            best = sampler._ordinal[idx[int(np.argmin(y))]]
            near = free[np.abs(sampler._ordinal[free] - best).sum(axis=1) <= 2]
            assert near.size and pick in near
            predicted = prior_kriging(sampler._prior_score, sampler._ordinal, idx, y, near)
            assert predicted[np.searchsorted(near, pick)] == predicted.min()
        row = held.rows[feasible[pick].key]
        sampler._observed[pick] = math.log(row.time_ms) if row.ok and row.time_ms else math.nan
        sampler._seen.add(pick)
    assert walked >= 6 and kriged >= 6 and covered == 4
    # the top eight in order
    plain = CostModelSampler(context, prior, seed=0, options=CostModelOptions(walk_cover=0))
    for k in range(8):
        free = np.setdiff1d(everything, np.fromiter(plain._seen, dtype=int))
        pick = plain._choose(free, set(plain._seen), 0)
        assert pick == free[np.argsort(plain._prior_score[free], kind="stable")[0]]
        plain._observed[pick] = float(k)
        plain._seen.add(pick)
    elsewhere = SearchContext(space, "ordinal", feasible, shape, get_arch("sm_80"), problem)
    assert not CostModelSampler(elsewhere, prior, seed=0)._walk
    other_kernel = dataclasses.replace(prior, provenance={**prior.provenance, "targets": ["other@sm_90"]})
    assert not CostModelSampler(context, other_kernel, seed=0)._walk


def test_prior_kriging_moves_the_neighbours_of_a_surprise() -> None:
    """Far from the measurements the prediction keeps the prior's order (calibrated to the
    measured times); next to a config that ran faster than the prior predicted it drops, next to
    a slower one it rises, and a contradicted prior loses its slope."""
    from flysearch.samplers._costmodel import prior_kriging

    # Two parameters of 5 values; the prior scores a config by the sum of its value indices.
    ordinal = np.array([(i, j) for i in range(5) for j in range(5)])
    score = ordinal.sum(axis=1) / 8.0
    at = {tuple(o): k for k, o in enumerate(ordinal)}
    everything = np.arange(len(ordinal))
    idx = np.array([at[0, 0], at[4, 4]])
    as_predicted = prior_kriging(score, ordinal, idx, np.array([0.0, 1.0]), everything)
    assert np.allclose(as_predicted, score)  # measurements as the prior said: nothing moves
    assert as_predicted[at[2, 2]] < as_predicted[at[4, 3]]
    faster = prior_kriging(score, ordinal, idx, np.array([0.0, -1.0]), everything)
    assert faster[at[4, 3]] < faster[at[2, 2]]  # a neighbour of the surprise overtakes
    slower = prior_kriging(score, ordinal, np.array([at[0, 0], at[1, 1]]), np.array([0.0, 0.9]), everything)
    assert slower[at[1, 2]] > slower[at[0, 4]]  # beside a disappointment it falls behind
    # Measured times that fall as the prior's score rises: the calibrated slope is 0.
    contradicted = np.array([at[0, 0], at[2, 2], at[4, 4], at[0, 4]])
    flat = prior_kriging(score, ordinal, contradicted, np.array([4.0, 2.0, 0.0, 2.0]), everything,
                         length_scale=0.01)
    assert np.ptp(flat[np.setdiff1d(everything, contradicted)]) < 1e-9


def test_costmodel_sampler_choice_skips_taken_configs(
    conv_mi250x: GroundTruth, conv_a100: GroundTruth
) -> None:
    """Driven without Optuna, each choice is a free config: never a measured one nor one a running
    trial holds; the first follows the prior but keeps away from the held config."""
    import math

    from flysearch.samplers import SearchContext
    from flysearch.samplers._costmodel import CostModelSampler
    from flysearch.tables import space_for_table

    prior = fit_prior([conv_a100], max_iter=30)
    space = space_for_table(conv_mi250x)
    context = SearchContext(space, "ordinal", space.enumerate().shuffled(3), problem=conv_mi250x.meta.problem)
    sampler = CostModelSampler(context, prior, seed=3)
    everything = np.arange(len(context.feasible))
    favourite = int(np.argmin(sampler._prior_score))
    held = {favourite}  # a running trial holds the prior's favourite throughout
    picks: list[int] = []
    for _ in range(30):
        taken = sampler._seen | held
        free = np.setdiff1d(everything, np.fromiter(taken, dtype=int))
        pick = sampler._choose(free, taken, len(held))
        assert pick not in taken
        row = conv_mi250x.rows[context.feasible[pick].key]
        sampler._observed[pick] = math.log(row.time_ms) if row.ok and row.time_ms else math.nan
        sampler._seen.add(pick)
        picks.append(pick)
    assert len(set(picks)) == 30
    # The first is the prior's best among the configs 3 parameters away from the held one.
    far = (sampler._ordinal != sampler._ordinal[favourite]).sum(axis=1) >= 3
    assert sampler._prior_score[picks[0]] == sampler._prior_score[far].min()


def test_costmodel_sampler_searches_globally_once_the_prior_stalls(
    conv_mi250x: GroundTruth, conv_a100: GroundTruth
) -> None:
    """With a prior from the MI250X on the A100's convolution (it orders the bulk right and misses
    the optimum), the search stalls on the prior's plateau; from then on every pick is the free
    config of lowest forest bound in the whole space (no local, random or top-region step)."""
    import math

    from flysearch.samplers import SearchContext
    from flysearch.samplers._costmodel import CostModelOptions, CostModelSampler
    from flysearch.tables import space_for_table

    prior = fit_prior([conv_mi250x], max_iter=30)
    space = space_for_table(conv_a100)
    context = SearchContext(space, "ordinal", space.enumerate().shuffled(0), problem=conv_a100.meta.problem)
    sampler = CostModelSampler(context, prior, seed=0, options=CostModelOptions(patience=8))
    everything = np.arange(len(context.feasible))
    stalled_picks = 0
    for _ in range(60):
        free = np.setdiff1d(everything, np.fromiter(sampler._seen, dtype=int))
        stalled = len(sampler._observed) >= 6 and sampler._stalled()
        pick = sampler._choose(free, set(sampler._seen), 0)
        if stalled:
            stalled_picks += 1
            lcb = sampler._forest_lcb(free)
            assert pick == int(free[np.lexsort((free, sampler._prior_score[free], lcb))[0]])
        row = conv_a100.rows[context.feasible[pick].key]
        sampler._observed[pick] = math.log(row.time_ms) if row.ok and row.time_ms else math.nan
        sampler._seen.add(pick)
    assert stalled_picks >= 10


def _toy(name: str, times: dict[int, float | None]) -> GroundTruth:
    from flysearch.tables import Row, TableMeta

    meta = TableMeta(name=name, kernel="toy", arch="", device=name, problem={},
                     space={"name": "toy", "params": [{"name": "B", "values": sorted(times)}]})
    rows = {f"B={b}": Row(f"B={b}", {"B": b}, "ok" if t else "fail", t) for b, t in times.items()}
    return GroundTruth(meta, rows)


def test_prior_trains_one_source_per_device(
    conv_mi250x: GroundTruth, conv_a100: GroundTruth, tmp_path: Path
) -> None:
    prior = fit_prior([conv_a100, conv_mi250x], max_iter=20)
    assert [s.provenance["tables"] for s in prior.sources] == [[conv_a100.name], [conv_mi250x.name]]
    assert prior.provenance["sources"] == [conv_a100.meta.device, conv_mi250x.meta.device]
    assert fit_prior([conv_a100], max_iter=20).sources == []  # one device: the pooled prior alone
    prior.save(tmp_path / "p.joblib")
    again = load_prior(tmp_path / "p.joblib")
    rows = list(conv_a100.rows.values())[:40]
    args = ([r.params for r in rows], conv_a100.meta.problem, None)
    assert len(again.sources) == 2
    for a, b in zip(prior.sources, again.sources, strict=True):
        assert np.array_equal(a.score(*args), b.score(*args))


def test_source_weights_go_to_the_source_that_orders_the_measurements() -> None:
    from flysearch.samplers._costmodel import source_weights

    rng = np.random.default_rng(0)
    y = rng.normal(size=40)
    right = y + rng.normal(scale=0.3, size=40)  # orders most pairs right
    noise = rng.normal(size=40)
    w = source_weights(np.stack([noise, right, -y]), y, np.random.default_rng(1))
    assert w.sum() == pytest.approx(1.0) and w[1] > 0.9 and w[2] == 0.0
    # Two identical sources share what they win.
    w = source_weights(np.stack([right, right, noise]), y, np.random.default_rng(1))
    assert w[0] == pytest.approx(w[1]) and w[0] + w[1] > 0.9


def _replay_choices(sampler: Any, table: GroundTruth, n: int, times: dict[str, float] | None = None
                    ) -> list[int]:
    """Let *sampler* choose *n* configs in turn, feeding back *table*'s times (or *times*)."""
    import math

    everything = np.arange(len(sampler._context.feasible))
    picks = []
    for _ in range(n):
        free = np.setdiff1d(everything, np.fromiter(sampler._seen, dtype=int))
        pick = sampler._choose(free, set(sampler._seen), 0)
        key = sampler._context.feasible[pick].key
        row = table.rows[key]
        t = (times or {}).get(key, row.time_ms if row.ok else None)
        sampler._observed[pick] = math.log(t) if t else math.nan
        sampler._seen.add(pick)
        picks.append(pick)
    return picks


def test_costmodel_sampler_follows_the_source_its_measurements_resemble(
    conv_mi250x: GroundTruth, conv_a100: GroundTruth
) -> None:
    """A prior trained on the A100 and the MI250X, searching the A100's table: once a few
    measurements are in, the A100's model outweighs the pooled one and the MI250X's, and the
    prior's score is the weighted blend of the three (no portfolio start here; the next test has
    one)."""
    from flysearch.samplers import SearchContext
    from flysearch.samplers._costmodel import CostModelOptions, CostModelSampler
    from flysearch.tables import space_for_table

    prior = fit_prior([conv_a100, conv_mi250x], max_iter=30)
    space = space_for_table(conv_a100)
    context = SearchContext(space, "ordinal", space.enumerate().shuffled(0), problem=conv_a100.meta.problem)
    sampler = CostModelSampler(context, prior, seed=0, options=CostModelOptions(source_rounds=0))
    assert sampler._sources is not None and sampler._sources.shape == (3, len(context.feasible))
    _replay_choices(sampler, conv_a100, 3)
    assert sampler._source_weights is None  # too few measurements: the pooled prior alone
    _replay_choices(sampler, conv_a100, 17)
    weights = sampler._source_weights
    assert weights is not None and int(np.argmax(weights)) == 1 and weights[1] > 0.5
    assert np.allclose(sampler._prior_score, weights @ sampler._sources)


def test_costmodel_sampler_portfolio_start_follows_the_source_whose_picks_run_fastest(
    conv_mi250x: GroundTruth, conv_a100: GroundTruth
) -> None:
    """The pooled prior, the A100's and the MI250X's propose their best unevaluated configs in
    turn for two rounds. When one source's proposal runs faster than every other source's by
    more than the margin, the search follows that source's model alone; when none does, the
    sources are weighed by their ordering of the measurements instead."""
    from flysearch.samplers import SearchContext
    from flysearch.samplers._costmodel import CostModelOptions, CostModelSampler
    from flysearch.tables import space_for_table

    prior = fit_prior([conv_a100, conv_mi250x], max_iter=30)
    space = space_for_table(conv_a100)
    context = SearchContext(space, "ordinal", space.enumerate().shuffled(0), problem=conv_a100.meta.problem)
    sampler = CostModelSampler(context, prior, seed=0)
    sources = sampler._sources.copy()
    picks = _replay_choices(sampler, conv_a100, 6)
    keys = [context.feasible[p].key for p in picks]
    # Round robin: each source's best config not yet taken, in source order.
    taken: list[int] = []
    for i, pick in enumerate(picks):
        order = [int(c) for c in np.argsort(sources[i % 3], kind="stable") if int(c) not in taken]
        assert pick == order[0]
        taken.append(pick)
    assert sampler._proposed_by == {pick: i % 3 for i, pick in enumerate(picks)}
    # The MI250X's second proposal ran 5% faster than anything else proposed: it is followed.
    fast = CostModelSampler(context, prior, seed=0)
    _replay_choices(fast, conv_a100, 6, times={k: 0.95 if i == 5 else 1.0 for i, k in enumerate(keys)})
    _replay_choices(fast, conv_a100, 2)
    assert fast._followed == 2
    assert np.array_equal(fast._prior_score, sources[2]) and fast._sources is not None
    # Only 0.5% faster: within the margin, so nothing is followed and the sources are weighed.
    even = CostModelSampler(context, prior, seed=0)
    _replay_choices(even, conv_a100, 6, times={k: 0.995 if i == 5 else 1.0 for i, k in enumerate(keys)})
    _replay_choices(even, conv_a100, 4)
    assert even._followed is None and even._source_weights is not None
    assert np.allclose(even._prior_score, even._source_weights @ even._sources)
    # Turned off: no round robin, the pooled prior's order first.
    off = CostModelSampler(context, prior, seed=0, options=CostModelOptions(source_rounds=0, n_diverse=0))
    assert _replay_choices(off, conv_a100, 1) == [int(np.argsort(sources[0], kind="stable")[0])]
    assert off._proposed_by == {}


def test_prior_pools_tables_of_several_kernels_without_sources(
    conv_mi250x: GroundTruth, conv_a100: GroundTruth
) -> None:
    from dataclasses import replace

    other = GroundTruth(replace(conv_a100.meta, name="other/A100", kernel="other"), conv_a100.rows)
    assert fit_prior([conv_mi250x, other], max_iter=10).sources == []


def test_split_k_fixed_cost_weighs_more_on_smaller_problems() -> None:
    # bf16 1x1536x1536 moves (1536 + 1536 * 1536 + 1536) * 2 bytes, 1x8192x8192 about 28 times more.
    sm90 = get_arch("sm_90")
    config = {"BLOCK_M": 16, "BLOCK_N": 64, "BLOCK_K": 64, "num_stages": 4, "num_warps": 4}
    small, large = {"M": 1, "N": 1536, "K": 1536}, {"M": 1, "N": 8192, "K": 8192}
    whole = config_features(config | {"SPLIT_K": 1}, small, sm90)
    split_small = config_features(config | {"SPLIT_K": 8}, small, sm90)
    split_large = config_features(config | {"SPLIT_K": 8}, large, sm90)
    assert whole["g_split_fixed"] == 0.0
    assert split_small["g_split_fixed"] == pytest.approx(1 / math.log2((1536 + 1536 * 1536 + 1536) * 2))
    assert split_small["g_split_fixed"] > split_large["g_split_fixed"] > 0.0


def test_an_autotuned_kernels_key_values_are_features() -> None:
    # A key (n_cols, n_rows) is neither a GEMM's M, N, K nor a Kernel Tuner problem_size: each named
    # size is a feature, so a prior can tell the keys apart.
    f = config_features({"BLOCK_N": 4096, "ONE_PASS": True}, {"n_cols": 4096, "n_rows": 16384}, None)
    assert f["s_log2_n_cols"] == 12.0 and f["s_log2_n_rows"] == 14.0
    assert config_features({"BLOCK_N": 4096}, {"n_cols": 50257}, None)["s_log2_n_cols"] == pytest.approx(
        math.log2(50257))
    # a GEMM under other tile names gets the GEMM analytics
    assert gemm_roles({"TILE_M": 64, "TILE_N": 128, "TILE_K": 32}) == {"tile_m": 64, "tile_n": 128,
                                                                     "tile_k": 32}
