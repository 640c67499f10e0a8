"""``kt:<strategy>``: Kernel Tuner's search strategies as samplers of a replayed study.

Kernel Tuner (``pip install kernel_tuner``, 1.5) does not ask and tell: a strategy calls its
objective itself, and on measurements already taken it replays its own cache files in *simulation
mode*. A ``kt:`` sampler hands Kernel Tuner the study's feasible configs and the table's times as
such a cache, lets the strategy search until it has measured the study's budget of distinct
configs, and then proposes those configs in the order the strategy measured them, each once (a
:class:`~flysearch.samplers.FeasibleGridSampler` over that order). The
study compiles exactly those, so "compiles to within 1%" counts the same for Kernel Tuner's
strategies as for flysearch's samplers: distinct configs, failed ones included. A strategy that
stops before the budget ends the study (it has nothing new to propose).

A strategy's run is also cut after :data:`TIME_LIMIT_S` seconds of wall clock (Kernel Tuner's own
``time_limit``), the configs it measured by then being its order: some strategies (``greedy_ils`` on
a small layer-norm table) go on re-measuring configs they have already measured, never reaching the
budget, growing their result list without end. A run that ends by itself, as every run of the
project's comparisons did before this limit existed, takes well under a second and is unchanged;
where the limit cuts a run, what it found in that time depends on the machine.

Kernel Tuner's strategies draw from Python's and NumPy's global random generators; the sampler
seeds both with the study's seed for the strategy's run and puts them back afterwards, so a seed
gives the same order run after run.

Example:
    >>> from flysearch.samplers._kernel_tuner import STRATEGIES
    >>> "genetic_algorithm" in STRATEGIES
    True
"""

from __future__ import annotations

import contextlib
import io
import json
import random
import tempfile
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from flysearch.errors import UnknownSamplerError

if TYPE_CHECKING:
    from flysearch.samplers._context import SearchContext
    from flysearch.space import Config

__all__ = ["STRATEGIES", "TIME_LIMIT_S", "kernel_tuner_order"]

TIME_LIMIT_S = 60.0
"""Wall-clock seconds after which a Kernel Tuner strategy's run is cut (see the module's notes)."""

STRATEGIES: tuple[str, ...] = (
    "genetic_algorithm", "greedy_ils", "greedy_mls", "mls", "pso", "simulated_annealing",
    "dual_annealing", "firefly_algorithm", "basinhopping", "adaptive_tabu_greywolf", "random_sample",
)
"""The Kernel Tuner 1.5 strategies offered as ``kt:<name>``: the single-objective ones that a seed
reproduces. ``bayes_opt`` and ``diff_evo`` are left out: they draw their Latin-hypercube start from
SciPy's ``LatinHypercube`` without a seed, so no two runs agree and a comparison could not be
repeated."""


def _kt_value(value: Any) -> Any:
    # A bool goes to Kernel Tuner as 0 or 1: Kernel Tuner 1.5 indexes a NumPy array with a parameter's
    # values when they are all ints, and a bool index there is a mask, so True and False would share one
    # index and its neighbour searches would fail.
    return int(value) if isinstance(value, bool) else value


def _kt_key(params: Mapping[str, Any] | Config, names: list[str]) -> str:
    # How Kernel Tuner writes a config into a cache key and looks it up: ``str`` of each value.
    return ",".join(str(params[n]) for n in names)


def kernel_tuner_order(context: SearchContext, strategy: str, measured: Mapping[str, float | None], *,
                       seed: int | None = None, budget: int | None = None,
                       time_limit: float | None = None) -> list[dict[str, Any]]:
    """The distinct configs a Kernel Tuner strategy measures on the table, in its order, as trial
    parameters (a :class:`~flysearch.samplers.FeasibleGridSampler` then proposes them).

    Args:
        context: The search context: its feasible configs are the strategy's whole space.
        strategy: A Kernel Tuner strategy (one of :data:`STRATEGIES`).
        measured: Each feasible config's time in ms by config key, ``None`` where it failed (the
            replayed table's rows).
        seed: Seed of the strategy's run.
        budget: Distinct configs the strategy may measure (``max_fevals``); default: all.
        time_limit: Wall-clock seconds after which the strategy's run is cut; default
            :data:`TIME_LIMIT_S`.
    """
    if strategy not in STRATEGIES:
        raise UnknownSamplerError(f"Unknown Kernel Tuner strategy {strategy!r}; choose one of: "
                                  f"{', '.join(STRATEGIES)}.")
    try:
        import kernel_tuner
    except ImportError as e:
        raise UnknownSamplerError(
            "The kt: samplers need Kernel Tuner: pip install 'kernel_tuner>=1.5'.") from e
    cache, by_kt_key = _cache(context, measured)
    names = cache["tune_params_keys"]

    def listed(*values: Any, **named: Any) -> bool:
        # The space is the table's feasible configs. Kernel Tuner calls a restriction three ways: the
        # values in parameter order (building the space), one dict, or keyword arguments (checking a
        # config that its cache lacks).
        if named:
            params: Mapping[str, Any] = named
        elif len(values) == 1 and isinstance(values[0], Mapping):
            params = values[0]
        else:
            params = dict(zip(names, values, strict=True))
        return _kt_key(params, names) in by_kt_key

    max_fevals = min(budget or len(by_kt_key), len(by_kt_key))
    time_limit = TIME_LIMIT_S if time_limit is None else time_limit
    py_state, np_state = random.getstate(), np.random.get_state()
    try:
        with tempfile.TemporaryDirectory() as folder, warnings.catch_warnings(), \
                contextlib.redirect_stdout(io.StringIO()):
            warnings.simplefilter("ignore")
            path = Path(folder) / "cache.json"
            path.write_text(json.dumps(cache))
            random.seed(seed)
            np.random.seed(None if seed is None else seed % 2**32)
            results, _ = kernel_tuner.tune_kernel(
                "flysearch", "", [1], [], cache["tune_params"], restrictions=listed, cache=str(path),
                simulation_mode=True, strategy=strategy,
                strategy_options={"max_fevals": max_fevals, "time_limit": time_limit}, quiet=True, seed=seed)
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)
    order: dict[str, Config] = {}
    for result in results:
        config = by_kt_key.get(_kt_key(result, names))
        if config is not None:
            order.setdefault(config.key, config)
    return [context.space.encode(c, context.encoding) for c in order.values()]


def _cache(context: SearchContext,
           measured: Mapping[str, float | None]) -> tuple[dict[str, Any], dict[str, Config]]:
    """Kernel Tuner's cache of the feasible configs the table measured, and its configs by Kernel
    Tuner key."""
    names = [p.name for p in context.space.params]
    configs = [c for c in context.feasible if c.key in measured]
    kt_params = [{n: _kt_value(c[n]) for n in names} for c in configs]
    by_kt_key = {_kt_key(params, names): c for params, c in zip(kt_params, configs, strict=True)}
    used = {n: {c[n] for c in configs} for n in names}
    entries = {}
    for params, config in zip(kt_params, configs, strict=True):
        ms = measured[config.key]
        time = ms if ms is not None else "CompilationFailedConfig"
        # Kernel Tuner's time limit in simulation mode adds each config's compile, verification and
        # benchmark milliseconds to the wall clock: none, so that the limit is the wall clock alone.
        entries[_kt_key(params, names)] = {**params, "time": time, "compile_time": 0.0,
                                           "verification_time": 0.0, "benchmark_time": 0.0}
    values = {p.name: [_kt_value(v) for v in p.values if v in used[p.name]] for p in context.space.params}
    cache = {
        "device_name": "flysearch replay", "kernel_name": "flysearch", "problem_size": [1],
        "tune_params_keys": names, "tune_params": values, "objective": "time", "cache": entries,
    }
    return cache, by_kt_key
