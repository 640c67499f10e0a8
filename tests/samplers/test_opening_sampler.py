"""The analytic opening: a GEMM study's first configs by the bound on critical path and traffic."""

from __future__ import annotations

import numpy as np
import pytest

from flysearch.compare._experiment import TableSpec
from flysearch.compare._run import load_table
from flysearch.samplers import SearchContext, make_sampler, sampler_options_problem
from flysearch.samplers._history import candidate_feature_columns, candidate_ordinals
from flysearch.samplers._opening import AnalyticOpeningSampler, analytic_bound
from flysearch.space import get_arch
from flysearch.tables import space_for_table
from tests.conftest import REPO, hub_file
from tests.samplers._drive import proposals

_GEMM = REPO / "lab/benchmarks/data/h100_splitk/triton_gemm__H100__1x6144x4096.table.json.gz"


@pytest.fixture(scope="module")
def gemm() -> SearchContext:
    table = load_table(TableSpec(str(_GEMM)), "")
    space, shape, arch = space_for_table(table), table.meta.shape(), get_arch("sm_90")
    return SearchContext(space, "ordinal", space.enumerate(shape, arch).shuffled(0), shape, arch)


def test_the_bound_is_the_larger_gap_to_each_term_s_best() -> None:
    columns = {"g_log2_path_flops": np.array([3.0, 5.0, np.nan]),
               "g_log2_traffic_per_cu": np.array([9.0, 8.0, 8.0])}
    assert analytic_bound(columns).tolist() == [1.0, 2.0, np.inf]
    assert analytic_bound({"g_log2_path_flops": np.array([1.0])}) is None


def test_the_bound_needs_a_gemm_and_an_arch(gemm: SearchContext) -> None:
    table = load_table(TableSpec(str(hub_file("dedispersion_milo", "MI250X"))), "")
    space = space_for_table(table)
    plain = SearchContext(space, "ordinal", space.enumerate().shuffled(0))
    assert analytic_bound(candidate_feature_columns(plain)) is None
    bound = analytic_bound(candidate_feature_columns(gemm))
    assert bound is not None and bound.shape == (len(gemm.feasible),)
    assert np.isfinite(bound).all() and bound.min() >= 0.0


def _opening_picks(context: SearchContext, bound: np.ndarray, seed: int, n: int) -> list[int]:
    return proposals(AnalyticOpeningSampler(context, bound, seed=seed), context, n)


def test_the_opening_takes_the_lowest_bound_two_parameters_from_earlier_picks(gemm: SearchContext) -> None:
    bound = analytic_bound(candidate_feature_columns(gemm))
    picks = _opening_picks(gemm, bound, seed=3, n=5)
    ordinal = candidate_ordinals(gemm)
    assert bound[picks[0]] == bound.min()
    for i, pick in enumerate(picks[1:], start=1):
        differs = (ordinal[picks[:i]] != ordinal[pick]).sum(axis=1)
        assert differs.min() >= 2
        far = [c for c in range(len(bound))
               if c not in picks[:i] and (ordinal[picks[:i]] != ordinal[c]).sum(axis=1).min() >= 2]
        assert bound[pick] == min(bound[far])  # the lowest bound among the configs far enough
    assert picks == _opening_picks(gemm, bound, seed=3, n=5)


def test_auto_opens_with_the_bound_only_when_asked_and_only_on_a_gemm(gemm: SearchContext) -> None:
    default = make_sampler("auto", seed=0, context=gemm)
    assert default._n_opening == 0 and default._opening is None
    opened = make_sampler("auto", seed=0, context=gemm, options={"analytic_start": 3})
    assert opened._n_opening == 3 and isinstance(opened._opening, AnalyticOpeningSampler)
    table = load_table(TableSpec(str(hub_file("dedispersion_milo", "MI250X"))), "")
    space = space_for_table(table)
    plain = SearchContext(space, "ordinal", space.enumerate().shuffled(0))
    assert make_sampler("auto", seed=0, context=plain, options={"analytic_start": 3})._n_opening == 0
    assert "0 or more, not -1" in str(sampler_options_problem("auto", {"analytic_start": -1}))
