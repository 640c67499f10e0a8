"""benchmarks/needle_rank.py: compiles to 1% by random draws, then a model's order."""

from __future__ import annotations

import numpy as np
import pytest

from tests._benchmarks import benchmark_module

needle = benchmark_module("needle_rank")


@pytest.mark.parametrize("model", ["forest", "boosting"])
def test_a_model_that_orders_right_needs_one_compile_after_the_draw(model: str) -> None:
    x = np.arange(200.0)
    X, log_t = x[:, None], 0.01 * x            # time grows with the one feature: config 0 is best
    within = np.zeros(200, bool)
    within[0] = True
    for seed in range(6):
        drawn_best = 0 in np.random.default_rng(seed).choice(200, size=50, replace=False)
        assert needle.compiles_to_1pct(50, model, seed, X, log_t, within) == (50 if drawn_best else 51)


def test_a_model_that_orders_wrong_walks_past_the_rest() -> None:
    x = np.arange(200.0)
    within = np.arange(200) == 199
    log_t = np.where(within, -10.0, 0.01 * x)  # a needle where the trend says slowest
    seed = next(s for s in range(50) if 199 not in np.random.default_rng(s).choice(200, 20, replace=False))
    assert needle.compiles_to_1pct(20, "forest", seed, x[:, None], log_t, within) > 150


def test_failed_configs_are_not_trained_on() -> None:
    x = np.arange(100.0)
    log_t = 0.01 * x
    log_t[1::2] = np.nan                       # every odd config failed to run
    within = np.arange(100) == 0
    seed = next(s for s in range(50) if 0 not in np.random.default_rng(s).choice(100, 30, replace=False))
    assert needle.compiles_to_1pct(30, "forest", seed, x[:, None], log_t, within) == 31
