"""``helion:<search>``: Helion's autotuner searches as samplers of a replayed study.

Helion (PyTorch's kernel DSL, ``pip install helion``, 1.5.1 read and driven) tunes a kernel with a
search object (``PatternSearch``, ``LFBOPatternSearch``, ...) that calls its benchmark itself, as
Kernel Tuner's strategies do. A ``helion:`` sampler runs Helion's own search code unchanged on the
table, in the way Helion offers to tune non-Helion kernels (``helion.autotuner.autotune``):

- the space is the table's parameters as Helion *user tunables* (its ``UserConfigSpec``): an int
  parameter whose values are the powers of two from its least to its greatest is a
  ``PowerOfTwoFragment`` (a ``BlockSizeFragment`` when its name says block or tile, so that the
  search treats it as Helion treats its own tile sizes; ``NumWarpsFragment`` for ``num_warps``), one
  of consecutive ints an ``IntegerFragment``, any other an ``EnumFragment`` of its values;
- a config the space's constraints reject (or the table lacks) is skipped by Helion's
  ``autotune_config_filter``, never compiled, as flysearch skips it;
- every timing comes from the table, through a ``BenchmarkProvider`` (the class Helion's searches
  benchmark through, made to be subclassed) and ``autotune_benchmark_fn`` (its re-timings): a
  config's time is its table time every time it is asked; a failed config is Helion's failed
  compile (``inf``);
- the search's arguments are those ``@helion.kernel`` gives it at its default effort (``full``),
  with a random initial population (no configs from earlier runs' caches) and no neighbour cap,
  whatever the ``HELION_*`` variables say.

The sampler records the distinct configs Helion benchmarks, in its order, stops the search once it
asks for one beyond the study's budget, and proposes them each once (a
:class:`~flysearch.samplers.FeasibleGridSampler` over that order), so compiles are counted as for
every sampler: a config Helion re-times or asks again is not a second compile. A search that ends
before the budget ends the study. Helion seeds Python's global generator with its
``autotune_random_seed`` (the study's seed) and its forests with a fixed seed; the sampler seeds it
before the search is built and puts it back afterwards, so a seed gives the same order run after
run.

What is not Helion's: the measurements (the table's, without noise, so Helion's re-timings never
change a ranking), the space (a Helion kernel's own ``ConfigSpec`` would add its layout knobs:
``pid_type``, ``indexing``, loop orders), and one private name: Helion's searches take their
benchmark provider's class as a constructor argument only in ``BaseSearch``, so the sampler sets
``_benchmark_provider_cls`` on the search after building it.

Example:
    >>> from flysearch.samplers._helion import SEARCHES
    >>> SEARCHES["lfbo-tree"]
    'LFBOTreeSearch'
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import logging
import math
import random
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from flysearch.errors import UnknownSamplerError

if TYPE_CHECKING:
    from flysearch.samplers._context import SearchContext
    from flysearch.space import Config, Param

__all__ = ["HELION_VERSION", "SEARCHES", "helion_order"]

HELION_VERSION = "1.5.1"
"""The Helion release whose searches the ``helion:`` samplers were written against and tested with."""

SEARCHES: dict[str, str] = {
    "lfbo-tree": "LFBOTreeSearch",
    "lfbo-pattern": "LFBOPatternSearch",
    "pattern": "PatternSearch",
    "differential-evolution": "DifferentialEvolutionSearch",
    "de-surrogate": "DESurrogateHybrid",
    "random": "RandomSearch",
}
"""The ``helion:<name>`` samplers and the Helion search class each runs (a name of
``helion.autotuner.search_algorithms``). ``lfbo-tree`` is ``@helion.kernel``'s default in Helion
1.5; the LLM-guided searches are left out (they call a language model)."""


class _BudgetSpent(Exception):
    """Raised through Helion's search when it asks for a config beyond the study's budget."""


class _Replay:
    """The table as Helion sees it, and the distinct configs it benchmarked, in order."""

    def __init__(self, names: Sequence[str], configs: Sequence[Config],
                 measured: Mapping[str, float | None], budget: int) -> None:
        self.names = tuple(names)
        self.by_values = {tuple(c[n] for n in names): c for c in configs}
        self.measured = measured
        self.budget = budget
        self.order: dict[str, Config] = {}

    def config(self, helion_config: Any) -> Config | None:
        """The table's config that Helion's config stands for (``None``: rejected or not in it)."""
        return self.by_values.get(tuple(helion_config.get(n) for n in self.names))

    def time_ms(self, helion_config: Any) -> float:
        """The table's time of a config Helion benchmarks, recorded as a compile the first time;
        ``inf`` where it failed."""
        config = self.config(helion_config)
        if config is None:  # the filter lets only the table's configs through
            return math.inf
        if config.key not in self.order:
            if len(self.order) >= self.budget:
                raise _BudgetSpent
            self.order[config.key] = config
        ms = self.measured[config.key]
        return math.inf if ms is None else ms


def _fragment(param: Param, helion_autotuner: Any) -> Any:
    """Helion's description of one of the table's parameters (see the module's docstring)."""
    from helion.autotuner.config_fragment import BlockSizeFragment, NumWarpsFragment

    values = param.values
    if param.kind == "int":
        ints = [int(v) for v in values]
        if ints[0] > 0 and ints[0] & (ints[0] - 1) == 0 and ints == [ints[0] << i for i in range(len(ints))]:
            name = param.name.lower()
            cls = (BlockSizeFragment if "block" in name or "tile" in name else
                   NumWarpsFragment if name == "num_warps" else helion_autotuner.PowerOfTwoFragment)
            return cls(ints[0], ints[-1], ints[0])
        if ints == list(range(ints[0], ints[-1] + 1)):
            return helion_autotuner.IntegerFragment(ints[0], ints[-1], ints[0])
    return helion_autotuner.EnumFragment(tuple(values))


class _Env:
    """The device a Helion kernel names; no tensor is ever placed on it."""

    process_group_name = None

    def __init__(self) -> None:
        import torch

        self.device = torch.device("cpu")


class _TableKernel:
    """What Helion's searches need of a kernel, answered from the table (nothing is compiled)."""

    def __init__(self, config_spec: Any, settings: Any, replay: _Replay) -> None:
        self.config_spec = config_spec
        self.settings = settings
        self.replay = replay
        self.env = _Env()
        self.configs: list[Any] = []

    def compile_config(self, config: Any = None, *, allow_print: bool = True) -> Callable[..., object]:
        raise AssertionError("a replayed Helion search compiles nothing: the table provider times it")

    bench_compile_config = compile_config

    def format_kernel_decorator(self, config: Any, settings: Any) -> str:
        return repr(config)

    def get_cached_path(self, config: Any = None) -> str | None:
        return None

    def to_code(self, config: Any = None, **_: object) -> str | None:
        return None

    to_triton_code = to_code

    def maybe_log_repro(self, log_func: Callable[[str], None], args: Sequence[object],
                        config: Any = None) -> None:
        return None

    def extra_cache_key(self) -> str:
        return ""

    def supports_subprocess_benchmark(self) -> bool:
        return False

    def is_cacheable(self) -> bool:
        return False


def _provider_class() -> type:
    """A Helion ``BenchmarkProvider`` that times every config from the table."""
    from helion.autotuner.benchmark_provider import BenchmarkProvider, BenchmarkResult

    class TableBenchmarkProvider(BenchmarkProvider):
        def __init__(self, kernel: _TableKernel, settings: Any, config_spec: Any, args: Sequence[object],
                     log: Any, autotune_metrics: Any) -> None:
            self.replay = kernel.replay
            self.mutated_arg_indices: Sequence[int] = []

        def setup(self) -> None:
            return None

        def cleanup(self) -> None:
            return None

        def benchmark(self, configs: list[Any], *, desc: str = "Benchmarking",
                      raise_if_no_viable_config: bool = True) -> list[Any]:
            results = []
            for config in configs:
                ms = self.replay.time_ms(config)
                results.append(BenchmarkResult(
                    config=config, fn=functools.partial(float, ms), perf=ms,
                    status="ok" if math.isfinite(ms) else "error", compile_time=0.0,
                    completed_at=time.perf_counter()))
            return results

    return TableBenchmarkProvider


def _retime(fns: Sequence[Callable[[], object]], *, repeat: int = 1, desc: str | None = None) -> list[float]:
    """Helion's re-timing of benchmarked configs: each one's table time again."""
    return [float(fn()) for fn in fns]  # type: ignore[arg-type]


def helion_order(context: SearchContext, search: str, measured: Mapping[str, float | None], *,
                 seed: int | None = None, budget: int | None = None) -> list[dict[str, Any]]:
    """The distinct configs a Helion search benchmarks on the table, in its order, as trial
    parameters (a :class:`~flysearch.samplers.FeasibleGridSampler` then proposes them).

    Args:
        context: The search context: its feasible configs the table measured are Helion's space.
        search: One of :data:`SEARCHES`.
        measured: Each feasible config's time in ms by config key, ``None`` where it failed (the
            replayed table's rows).
        seed: Helion's ``autotune_random_seed``; ``None``: drawn at random.
        budget: Distinct configs the search may benchmark; default: all.
    """
    if search not in SEARCHES:
        raise UnknownSamplerError(f"Unknown Helion search {search!r}; choose one of: {', '.join(SEARCHES)}.")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import helion.autotuner as helion_autotuner
            from helion.autotuner.effort_profile import get_effort_profile
            from helion.autotuner.external import create_user_config_spec
            from helion.autotuner.pattern_search import InitialPopulationStrategy
            from helion.runtime.settings import Settings
    except ImportError as e:
        raise UnknownSamplerError("The helion: samplers need Helion: pip install 'flysearch[helion]' "
                                  f"(Helion {HELION_VERSION}).") from e
    names = [p.name for p in context.space.params]
    configs = [c for c in context.feasible if c.key in measured]
    replay = _Replay(names, configs, measured, min(budget or len(configs), len(configs)))
    if seed is None:
        seed = random.SystemRandom().randrange(2**31)
    py_state = random.getstate()
    try:
        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()), \
                contextlib.redirect_stderr(io.StringIO()):
            warnings.simplefilter("ignore")
            spec = create_user_config_spec({p.name: _fragment(p, helion_autotuner)
                                            for p in context.space.params})
            settings = Settings(
                autotune_random_seed=seed, autotune_effort="full", autotune_benchmark_fn=_retime,
                autotune_config_filter=lambda config: config if replay.config(config) is not None else None,
                autotune_benchmark_subprocess=False, autotune_precompile=None, autotune_accuracy_check=False,
                autotune_progress_bar=False, autotune_log_level=logging.CRITICAL, autotune_log=None,
                autotune_budget_seconds=None, autotune_handoff=False)
            cls = helion_autotuner.search_algorithms[SEARCHES[search]]
            accepted = inspect.signature(cls.__init__).parameters
            defaults = cls.get_kwargs_from_profile(get_effort_profile("full"), settings)
            kwargs = {k: v for k, v in defaults.items() if k in accepted}
            if "initial_population_strategy" in accepted:
                kwargs["initial_population_strategy"] = InitialPopulationStrategy.FROM_RANDOM
            if "num_neighbors_cap" in accepted:
                kwargs["num_neighbors_cap"] = -1
            random.seed(seed)  # RandomSearch draws its configs when it is built
            helion_search = cls(_TableKernel(spec, settings, replay), [], **kwargs)
            if not hasattr(helion_search, "_benchmark_provider_cls"):
                raise UnknownSamplerError(
                    f"This Helion's searches take no benchmark provider where Helion {HELION_VERSION}'s "
                    f"do; install that release: pip install 'helion=={HELION_VERSION}'.")
            helion_search._benchmark_provider_cls = _provider_class()
            with contextlib.suppress(_BudgetSpent):
                helion_search.autotune()
    finally:
        random.setstate(py_state)
    return [context.space.encode(c, context.encoding) for c in replay.order.values()]
