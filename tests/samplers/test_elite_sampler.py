"""The elite Gaussian: a member whose draws move several parameters of the best configs at once."""

from __future__ import annotations

import numpy as np
import pytest

from flysearch.compare._experiment import TableSpec
from flysearch.compare._run import load_table
from flysearch.samplers import SearchContext, make_sampler, sampler_options_problem
from flysearch.samplers._elite import EliteGaussianSampler, elite_weights
from flysearch.samplers._history import candidate_ordinals
from flysearch.tables import space_for_table
from tests.conftest import hub_file
from tests.samplers._drive import proposals


@pytest.fixture(scope="module")
def dedisp() -> SearchContext:
    table = load_table(TableSpec(str(hub_file("dedispersion_milo", "MI250X"))), "")
    space = space_for_table(table)
    return SearchContext(space, "ordinal", space.enumerate().shuffled(0))


def _picks(context: SearchContext, time_of, n: int, seed: int = 0) -> list[int]:  # type: ignore[no-untyped-def]
    return proposals(EliteGaussianSampler(context, seed=seed), context, n, time_of)


def test_the_weights_fall_with_rank_and_sum_to_one() -> None:
    w = elite_weights(5)
    assert w.sum() == pytest.approx(1.0)
    assert (np.diff(w) < 0).all() and (w > 0).all()


def test_the_draws_gather_around_the_best_configs(dedisp: SearchContext) -> None:
    # Times grow with the distance from one config; after a uniform start, the proposals should
    # come far closer to it than uniform draws do.
    ordinal = candidate_ordinals(dedisp).astype(float)
    target = ordinal[len(ordinal) // 2]
    distance = np.abs(ordinal - target).sum(axis=1)
    picks = _picks(dedisp, lambda i: 1.0 + float(distance[i]), n=40)
    assert len(set(picks)) == 40  # never a repeat
    assert distance[picks[:5]].mean() > 2 * distance[picks[-10:]].mean()
    assert distance[picks[-10:]].mean() < 0.5 * distance.mean()
    assert picks == _picks(dedisp, lambda i: 1.0 + float(distance[i]), n=40)  # the seed repeats it


def test_failed_configs_are_left_out_of_the_elite(dedisp: SearchContext) -> None:
    # Every measurement fails: the sampler never fits and keeps drawing uniformly, without a repeat.
    picks = _picks(dedisp, lambda i: None, n=12)
    assert len(set(picks)) == 12


def test_auto_gives_the_elite_one_turn_after_every_few_rounds(dedisp: SearchContext) -> None:
    default = make_sampler("auto", seed=0, context=dedisp)
    assert default._turns == (0, 1) and len(default._members) == 2
    sampler = make_sampler("auto", seed=0, context=dedisp, options={"elite_every": 2})
    assert sampler._turns == (0, 1, 0, 1, 2)
    assert isinstance(sampler._members[2], EliteGaussianSampler)
    assert "0 or more, not -1" in str(sampler_options_problem("auto", {"elite_every": -1}))
