"""The lab's needle ranks (``_needle_rank``): compiles to 1% by random draws, then a model's order."""

from __future__ import annotations

import numpy as np
import pytest
from _needle_rank import needle_compiles, needle_row


@pytest.mark.parametrize("model", ["forest", "boosting"])
def test_a_model_that_orders_right_needs_one_compile_after_the_draw(model: str) -> None:
    x = np.arange(200.0)
    X, log_t = x[:, None], 0.01 * x            # time grows with the one feature: config 0 is best
    within = np.zeros(200, bool)
    within[0] = True
    for seed in range(6):
        drawn_best = 0 in np.random.default_rng(seed).choice(200, size=50, replace=False)
        assert needle_compiles(50, model, seed, X, log_t, within) == (50 if drawn_best else 51)


def test_a_model_that_orders_wrong_walks_past_the_rest() -> None:
    x = np.arange(200.0)
    within = np.arange(200) == 199
    log_t = np.where(within, -10.0, 0.01 * x)  # a needle where the trend says slowest
    seed = next(s for s in range(50) if 199 not in np.random.default_rng(s).choice(200, 20, replace=False))
    assert needle_compiles(20, "forest", seed, x[:, None], log_t, within) > 150


def test_failed_configs_are_not_trained_on() -> None:
    x = np.arange(100.0)
    log_t = 0.01 * x
    log_t[1::2] = np.nan                       # every odd config failed to run
    within = np.arange(100) == 0
    seed = next(s for s in range(50) if 0 not in np.random.default_rng(s).choice(100, 30, replace=False))
    assert needle_compiles(30, "forest", seed, x[:, None], log_t, within) == 31


def test_a_row_gives_the_table_the_gap_to_the_next_config_and_a_median_per_size() -> None:
    x = np.arange(200.0)
    X, log_t, within = x[:, None], 0.01 * x, np.arange(200) == 0
    runs = sorted(needle_compiles(50, "forest", seed, X, log_t, within) for seed in range(3))
    row = needle_row("t", (X, log_t, within), [50, 200], 3, "forest")
    # The fastest config not within 1% is 1 (e^0.01 = 1.010x the best); 200 draws of 200 configs: no cell.
    assert row == ["t", "200", "1", "1.010", f"{runs[1]:g}", ""]
