"""The zero-shot baselines: their lists from other shapes' tables, then ``auto``; ``nvmmh``."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from flysearch.compare._experiment import TableSpec
from flysearch.compare._run import load_table
from flysearch.errors import UnknownSamplerError
from flysearch.samplers import SearchContext, make_sampler
from flysearch.samplers._zeroshot import (
    ListFirstSampler,
    TransferTable,
    TransferTables,
    fixed_list,
    key_values,
    nearest_feasible,
    transfer_tables,
    tree_list,
    winners_first,
)
from flysearch.space import table_profile
from flysearch.tables import space_for_table
from tests.samplers._drive import proposals

H200 = Path(__file__).resolve().parents[2] / "lab" / "benchmarks" / "data" / "h200"


def _table(shape: str):  # type: ignore[no-untyped-def]
    return load_table(TableSpec(str(H200 / f"triton_gemm__H200__{shape}.table.json.gz")), "")


def _context(table) -> SearchContext:  # type: ignore[no-untyped-def]
    space, shape = space_for_table(table), table.meta.shape()
    arch = table_profile(table.meta.arch, table.meta.device)
    return SearchContext(space, "ordinal", space.enumerate(shape, arch).feasible, shape, arch)


def _t(name: str, m: float, **times: float) -> TransferTable:
    return TransferTable(name, (("M", m),), tuple(sorted(times.items())))


def test_fixed_list_ranks_by_mean_normalized_rank_with_an_absent_config_last() -> None:
    # a: ranks 0, 1 -> 0.5; b: 0.5, 0 -> 0.25; c: 1, absent (1) -> 1; d: absent (1), 0.5 -> 0.75
    training = TransferTables((_t("one", 1, a=1.0, b=2.0, c=3.0), _t("two", 2, b=1.0, d=2.0, a=3.0)))
    assert fixed_list(training, k=3) == ["b", "a", "d"]
    assert fixed_list(TransferTables(())) == []


def test_winners_first_orders_the_winners_by_shape_distance() -> None:
    training = TransferTables((_t("far", 4096, x=1.0, y=2.0), _t("near", 16, y=1.0, x=2.0),
                               _t("twin", 16, y=1.0, z=2.0)))
    assert winners_first(training, {"M": 8, "dtype": "bf16"}) == ["y", "x"]
    assert winners_first(training, {"M": 8192}) == ["x", "y"]


def test_the_tree_uses_at_most_ten_configs_and_predicts_by_shape() -> None:
    # 12 shapes, each with its own winner; small M wants "s*", large M "l*"
    tables = [_t(f"t{i}", 2.0 ** i, **{f"w{i:02d}": 1.0, "s": 1.2 if i < 6 else 3.0,
                                      "l": 3.0 if i < 6 else 1.2}) for i in range(12)]
    order = tree_list(TransferTables(tuple(tables)), {"M": 4.0})
    assert len(order) == len(set(order)) <= 10
    far = tree_list(TransferTables(tuple(tables)), {"M": 2.0 ** 11})
    assert set(order) == set(far) and order[0] != far[0]


def test_a_listed_config_the_shape_rejects_stands_for_its_nearest_feasible_one() -> None:
    context = _context(_table("4x576x7168"))
    feasible = set(context.keys)
    big = "BLOCK_K=64,BLOCK_M=128,BLOCK_N=64,GROUP_M=1,SPLIT_K=4,num_stages=3,num_warps=4"
    assert big not in feasible  # BLOCK_M=128 for M=4
    (near,) = nearest_feasible(context, [key_values(big)])
    # BLOCK_M=32 is the largest tile M=4 allows: two value steps down, every other value kept
    assert near == big.replace("BLOCK_M=128", "BLOCK_M=32") and near in feasible
    ok = context.keys[5]
    assert nearest_feasible(context, [key_values(ok), key_values(ok)]) == [ok]


def test_the_list_comes_first_skipping_evaluated_configs_then_the_cold_start() -> None:
    context = _context(_table("4x576x7168"))
    listed = [context.keys[7], context.keys[3], context.keys[7], "not a config", context.keys[9]]
    sampler = ListFirstSampler(context, listed, make_sampler("grid", context=context))
    picks = proposals(sampler, context, 6)
    assert picks[:3] == [7, 3, 9] and len(set(picks)) == 6


def test_the_trained_baselines_need_tables_and_are_reproducible() -> None:
    scored = _table("4x576x7168")
    context = _context(scored)
    with pytest.raises(UnknownSamplerError, match="leave-one-table-out"):
        make_sampler("fixed-list", seed=0, context=context)
    training = transfer_tables([_table("1000x576x7168"), _table("256x1536x7168")])
    for name in ("fixed-list", "decision-tree", "winners-first"):
        runs = [proposals(make_sampler(name, seed=3, context=context, prior=training), context, 12)
                for _ in range(2)]
        assert runs[0] == runs[1] and len(set(runs[0])) == 12


def test_nvmmh_maps_its_top_configs_onto_feasible_configs() -> None:
    pytest.importorskip("nvMatmulHeuristics")
    from flysearch.samplers._nvmmh import nvmmh_order

    context = _context(_table("4096x4096x4096"))
    order = nvmmh_order(context)
    assert 1 <= len(order) <= 8 and set(order) <= set(context.keys)
    sampler = make_sampler("nvmmh", seed=0, context=context)
    study = optuna.create_study(sampler=sampler)
    trial = study.ask(dict(context.distributions))
    assert context.space.decode(trial.params, context.encoding).key == order[0]
