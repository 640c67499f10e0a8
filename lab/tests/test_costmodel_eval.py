"""The lab's cost-model evaluations (``lab/benchmarks/_costmodel_eval.py``) on the committed H200 tables."""

from __future__ import annotations

import glob

import pytest
from _costmodel_eval import evaluate_test_set, sampler_compiles, transfer_ranks

from flysearch.compare import prior_ranks
from flysearch.costmodel import fit_prior
from flysearch.tables import GroundTruth, Row, TableMeta, TableStore, read_table_file
from lab.tests._benchmarks import BENCHMARKS

H200 = sorted(glob.glob(str(BENCHMARKS / "data" / "h200" / "*.table.json.gz")))


@pytest.fixture(scope="module")
def h200_tables() -> list[GroundTruth]:
    store = TableStore(":memory:")
    out = []
    for path in H200[:5]:
        meta, rows = read_table_file(path)
        store.write(meta, rows)
        out.append(store.load(meta.name))
    return out


def _toy(name: str, times: dict[int, float | None]) -> GroundTruth:
    meta = TableMeta(name=name, kernel="toy", arch="", device=name, problem={},
                     space={"name": "toy", "params": [{"name": "B", "values": sorted(times)}]})
    rows = {f"B={b}": Row(f"B={b}", {"B": b}, "ok" if t else "fail", t) for b, t in times.items()}
    return GroundTruth(meta, rows)


def test_a_test_set_is_ranked_by_one_prior_never_trained_on_it(h200_tables: list[GroundTruth]) -> None:
    train, tests = h200_tables[:3], h200_tables[3:5]
    # A test table listed among the training tables too is still left out of the training.
    results = evaluate_test_set(train + tests[:1], tests, seeds=(0,), budget=4, max_iter=20)
    assert [r.table for r in results] == [t.name for t in tests]
    prior = fit_prior(train, max_iter=20)
    for r, held in zip(results, tests, strict=True):
        assert r.trained_on == [t.name for t in train]
        assert r.prior_rank == prior_ranks(prior, held)
        assert len(r.sampler[0.01]) == 1
    assert sampler_compiles(tests[0], "costmodel", prior=prior, seeds=(0,), budget=4) == results[0].sampler
    pooled = evaluate_test_set(train, tests, seeds=(0,), budget=4, max_iter=20, workers=2)
    assert [(r.prior_rank, r.sampler) for r in pooled] == [(r.prior_rank, r.sampler) for r in results]
    assert evaluate_test_set([_toy("other", {1: 1.0})], tests, max_iter=20) == []  # no table of its kernel


def test_transfer_ranks_order_the_held_out_configs_by_each_other_table() -> None:
    held = _toy("held", {1: 5.0, 2: 4.0, 3: 1.0, 4: 3.0})
    same = _toy("same", {1: 50.0, 2: 40.0, 3: 10.0, 4: 30.0})  # same order: the optimum first
    reverse = _toy("reverse", {1: 1.0, 2: 2.0, 3: 9.0, 4: 3.0})  # the optimum last of those that ran
    failed = _toy("failed", {1: 1.0, 2: 2.0, 3: None, 4: 3.0})  # failed there: it goes last
    out = transfer_ranks(held, [same, reverse, failed])
    assert out["same"] == {0.01: 1, 0.05: 1}
    assert out["reverse"][0.01] == 4 and out["failed"][0.01] == 4
    # Consensus: mean log(time / best) over the three; B=3 failed on one table, so it goes last.
    assert out["consensus"][0.01] == 4
    assert "prior" not in out
    # Second on its own, first once averaged with a table that ranks it first.
    close = _toy("close", {1: 1.0, 2: 2.0, 3: 1.5, 4: 3.0})
    assert transfer_ranks(held, [close])["close"][0.01] == 2
    assert transfer_ranks(held, [same, close])["consensus"][0.01] == 1
