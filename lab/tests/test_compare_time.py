"""lab/benchmarks/compare_time.py: its sampler clock and its bound, without running a comparison."""

from __future__ import annotations

import optuna

from lab.tests._benchmarks import benchmark_script


def test_the_clock_counts_a_sampler_that_calls_another_once() -> None:
    ct = benchmark_script("compare_time")
    clock = ct._SamplerClock()
    calls: list[str] = []

    def inner() -> str:
        calls.append("inner")
        return "x"

    timed_inner = clock.wrap(inner)

    def outer() -> str:
        calls.append("outer")
        return timed_inner()

    assert clock.wrap(outer)() == "x" and calls == ["outer", "inner"]
    assert clock._depth == 0 and clock.seconds > 0
    once = clock.seconds
    timed_inner()
    assert clock.seconds > once


def test_install_wraps_optuna_s_samplers_and_the_row_s_bound() -> None:
    ct = benchmark_script("compare_time")
    clock = ct._SamplerClock()
    original = optuna.samplers.RandomSampler.sample_independent
    try:
        clock.install()
        assert optuna.samplers.RandomSampler.sample_independent is not original
        study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
        study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=5)
        assert clock.seconds > 0
    finally:
        clock.uninstall()
    assert optuna.samplers.RandomSampler.sample_independent is original
    # fits 10 s, samplers 2 s and rest 3 s per seed, 4 seeds: (10 + 4 * 5) / (10 + 4 * 2) = 30 / 18
    row = ct._row("e", 10.0, 2.0, 15.0, 4)
    assert row.endswith("| 4 | 30 | 1.67 |") and "| 3.0 | 15.0 | 20.0% |" in row
