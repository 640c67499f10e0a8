"""``@flysearch.autotune``: a drop-in for ``@triton.autotune`` that searches a space instead of
timing a list, and keeps what it learned.

Over a ``@triton.jit`` function it returns a kernel launched as before, ``kernel[grid](*args)``;
over any other callable (a FlyDSL ``@flyc.jit`` function, a CuPy or TileLang kernel, a CPU
function) a callable that passes the config's values as keyword arguments. On a call whose key
values were never tuned it tunes them in this process (see :mod:`flysearch.tune._tuner`);
every later call, in this process or another, dispatches from memory or the store.

Example (a CPU function, so that it runs anywhere):

    >>> import numpy as np, flysearch, tempfile, os
    >>> store = os.path.join(tempfile.mkdtemp(), "tuned.db")
    >>> @flysearch.autotune(space={"chunk": [64, 256, 1024]}, key=["n"], store=store, budget=3,
    ...                     reference=lambda x, out, n: x * 2, outputs=["out"])
    ... def double(x, out, n, chunk):
    ...     for i in range(0, n, chunk):
    ...         out[i:i + chunk] = x[i:i + chunk] * 2
    >>> x, out = np.arange(4096.0), np.empty(4096)
    >>> double(x, out, 4096)
    >>> bool((out == 2 * x).all()), sorted(double.best_config(n=4096))
    (True, ['chunk'])
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flysearch.errors import AutotuneError, UnknownArchError
from flysearch.evaluators import RetimeSettings, TimingProtocol
from flysearch.space import ArchProfile, Constraint, Param, Space, arch_of_device, get_arch
from flysearch.tables import GroundTruth, dump_table_file
from flysearch.tune._keys import (
    LAUNCH_OPTIONS,
    KernelArgs,
    KeyValues,
    callable_names,
    python_function,
    source_hash,
)
from flysearch.tune._measure import CallLauncher, KernelEvaluator, TritonLauncher
from flysearch.tune._store import TuneStore, store_url
from flysearch.tune._tuner import Tuner, TuneSettings, check_summary
from flysearch.tune._workload import Workload

__all__ = ["Autotuned", "CheckRun", "autotune", "checking", "make_space", "racing"]

_RACING: contextvars.ContextVar[str | None] = contextvars.ContextVar("flysearch_racing", default=None)


@dataclass
class CheckRun:
    """A :func:`checking` block: the AMD arch, the configs each key compiles (``None``: every
    feasible one), the folder of the tables, and what each checked key gave (its one-line summary
    and table path, in call order)."""

    arch: ArchProfile
    folder: Path
    budget: int | None = None
    checked: list[tuple[str, Path]] = field(default_factory=list)


_CHECKING: contextvars.ContextVar[CheckRun | None] = contextvars.ContextVar("flysearch_checking",
                                                                            default=None)


@contextlib.contextmanager
def checking(folder: str | os.PathLike[str], arch: str, *, budget: int | None = None) -> Iterator[CheckRun]:
    """Inside the block, a call of a decorated ``@triton.jit`` or FlyDSL ``@flyc.jit`` kernel checks
    its key for the AMD *arch* instead of running: every feasible config (or *budget* of them) is
    compiled for *arch* on this machine, GPU or not, and its resources read (:meth:`Tuner.check`);
    configs that spill, overflow LDS or fit no wave are stored as rejected, so that a tune on
    *arch* never compiles them. The table is written to *folder* as
    ``<kernel>__<key>.table.json.gz`` (for ``flysearch tables import``); the call launches nothing
    and returns ``None``.

    Raises:
        UnknownArchError: *arch* is not an arch flysearch knows.
        AutotuneError: *arch* is not AMD, or *budget* is not a positive integer.
    """
    profile = get_arch(arch)
    if profile.vendor != "amd":
        raise AutotuneError(f"A check compiles for an AMD arch (gfx942, gfx950); {arch} is {profile.vendor}.")
    if budget is not None and (not isinstance(budget, int) or budget < 1):
        raise AutotuneError(f"budget must be a positive number of compiles, got {budget!r}.")
    Path(folder).mkdir(parents=True, exist_ok=True)
    run = CheckRun(profile, Path(folder), budget)
    token = _CHECKING.set(run)
    try:
        yield run
    finally:
        _CHECKING.reset(token)


@contextlib.contextmanager
def racing(folder: str | os.PathLike[str]) -> Iterator[None]:
    """Inside the block, a call of a decorated kernel races its key instead of tuning it: every
    feasible config is compiled and timed, the top re-timed, and the table written to *folder* as
    ``<kernel>__<key>.table.json.gz`` (for ``flysearch tables import`` and ``flysearch compare``);
    the call then launches the race's best. Nothing is stored."""
    Path(folder).mkdir(parents=True, exist_ok=True)
    token = _RACING.set(str(folder))
    try:
        yield
    finally:
        _RACING.reset(token)


def _file_name(text: str) -> str:
    return "".join(c if c.isalnum() or c in "=.,_-" else "_" for c in text)


Predicates = Iterable[Constraint | Callable[..., bool]] | Mapping[str, Callable[..., bool]]


def make_space(name: str, space: Space | Mapping[str, Iterable[Any]], constraints: Predicates = ()) -> Space:
    """A :class:`Space` from a space or a dict of value lists, with *constraints* added (a
    :class:`Constraint`, a function named by its ``__name__``, or a dict of name -> predicate;
    a predicate is called as ``predicate(config, key, arch)``)."""
    if isinstance(constraints, Mapping):
        extra = [Constraint(n, p) for n, p in constraints.items()]
    else:
        extra = [c if isinstance(c, Constraint) else Constraint(getattr(c, "__name__", "constraint"), c)
                 for c in constraints]
    if isinstance(space, Space):
        return Space(space.name, list(space.params), [*space.constraints, *extra]) if extra else space
    if not isinstance(space, Mapping) or not space:
        raise AutotuneError("space must be a flysearch Space or a non-empty dict of parameter -> values.")
    try:
        params = [Param(str(p), tuple(values)) for p, values in space.items()]
    except (TypeError, ValueError) as exc:
        raise AutotuneError(f"The space is not a dict of value lists: {exc}") from None
    return Space(name, params, extra)


def _protocol(warmup: int | None, rep: float | None, protocol: TimingProtocol | None) -> TimingProtocol:
    """The timing protocol: given, or built from ``triton.autotune``'s *warmup* runs and *rep*
    milliseconds of timed runs (spread over the protocol's batches)."""
    if protocol is not None:
        if warmup is not None or rep is not None:
            raise AutotuneError("Give either protocol= or warmup=/rep=, not both.")
        return protocol
    base = TimingProtocol()
    if warmup is not None and (not isinstance(warmup, int) or warmup < 1):
        raise AutotuneError(f"warmup must be a positive number of runs, got {warmup!r}.")
    if rep is not None and (not isinstance(rep, int | float) or rep <= 0):
        raise AutotuneError(f"rep must be a positive number of milliseconds, got {rep!r}.")
    return TimingProtocol(batches=base.batches, warmup=warmup or base.warmup,
                          min_batch_ms=(rep / base.batches) if rep else base.min_batch_ms)


def _is_triton(fn: Any) -> bool:
    kind = type(fn)
    return kind.__module__.startswith("triton.") and kind.__name__ in ("JITFunction", "InterpretedFunction")


def autotune(space: Space | Mapping[str, Iterable[Any]], key: Sequence[str], *,
             constraints: Predicates = (),
             reference: Callable[..., Any] | None = None, outputs: Sequence[str] = (),
             rtol: float = 1e-2, atol: float = 1e-2,
             reset_to_zero: Sequence[str] = (), restore_value: Sequence[str] = (),
             warmup: int | None = None, rep: float | None = None, protocol: TimingProtocol | None = None,
             budget: int | None = None, sampler: str = "auto", seed: int = 0, transfer_after: int = 3,
             transfer_budget: int = 32, finalists: int = 5, finalist_within: float = 0.15,
             rounds: int = 10,
             store: str | os.PathLike[str] | None = None, name: str | None = None,
             prune_configs_by: Any = None) -> Callable[[Any], Autotuned]:
    """Tune a kernel's config per key, in few compiles, and remember it.

    Args:
        space: A :class:`flysearch.space.Space`, or a dict of parameter -> values. For a Triton
            kernel the parameters are its ``tl.constexpr`` arguments and the launch options
            ``num_warps``, ``num_stages``, ``num_ctas``, ``maxnreg``.
        key: The arguments whose values key a config (a tensor's key value is its shape and dtype).
        constraints: Named predicates ``(config, key, arch) -> bool`` that prune configs before
            anything compiles.
        reference: ``reference(**arguments)`` -> the expected value of each of *outputs*; every
            config's result is checked against it, and a wrong one is never chosen.
        outputs: The arguments the kernel writes.
        rtol, atol: The check's tolerances.
        reset_to_zero, restore_value: As ``triton.autotune``'s.
        warmup, rep: ``triton.autotune``'s warm-up runs and milliseconds of timed runs; or
        protocol: The race's timing protocol.
        budget: Compiles for a key tuned without a prior (default: 6% of the feasible configs, at
            least 24, at most 64).
        sampler: The sampler of such a key.
        seed: Seed of the samplers and of the finalists' rounds.
        transfer_after: Tuned keys after which a prior trained on them ranks the next key's configs.
        transfer_budget: Compiles for a key tuned with that prior.
        finalists, finalist_within, rounds: The configs re-timed before the winner is chosen (the
            *finalists* fastest of the study, and every config within *finalist_within* of its best,
            at most 12), and the interleaved rounds they get (the winner: the best median once each
            round's common drift is divided out).
        store: A path or database URL (default: ``$FLYSEARCH_AUTOTUNE_DB`` or
            ``~/.cache/flysearch/autotune.db``).
        name: The kernel's name in the store (default: the function's name).
        prune_configs_by: ``triton.autotune``'s ``{"early_config_prune": fn}``: before a key is tuned,
            ``fn(configs, named_args)`` is called once with the key's feasible configs (``triton.Config``
            objects for a Triton kernel, dicts otherwise) and the call's arguments by name; the configs
            it returns are the ones searched. ``perf_model`` and ``top_k`` are not taken: the search
            (and, after a few keys, the cost model) does their job.

    Raises:
        AutotuneError: a key that is not an argument, a space parameter the kernel does not take,
            an unwritable store, or bad settings.
    """
    early_prune = _early_prune(prune_configs_by)
    settings = TuneSettings(budget=budget, sampler=sampler, seed=seed, transfer_after=transfer_after,
                            transfer_budget=transfer_budget, finalists=finalists,
                            finalist_within=finalist_within, rounds=rounds,
                            protocol=_protocol(warmup, rep, protocol))
    url = store_url(store)
    check = {"reference": reference, "outputs": tuple(outputs), "rtol": rtol, "atol": atol,
             "reset_to_zero": tuple(reset_to_zero), "restore_value": tuple(restore_value)}

    def decorate(fn: Any) -> Autotuned:
        kernel_name = name or getattr(python_function(fn), "__name__", "kernel")
        tuned_space = make_space(kernel_name, space, constraints)
        pruning = _EarlyPrune(early_prune, _is_triton(fn), tuned_space) if early_prune is not None else None
        if pruning is not None:  # named by the function's source: editing it makes another space
            tuned_space = Space(tuned_space.name, list(tuned_space.params), [
                *tuned_space.constraints, Constraint(f"early_config_prune[{source_hash(early_prune)}]",
                                                     pruning.keeps)])
        tunable = [p.name for p in tuned_space.params]
        if _is_triton(fn):
            import triton

            constexprs = ([p.name for p in fn.params if p.is_constexpr] if hasattr(fn, "params") else None)
            args = KernelArgs(kernel_name, fn.arg_names, key, tunable, constexprs=constexprs,
                              launch_options=True)
            versions = f"triton-{triton.__version__}"
            cls: type[Autotuned] = TritonAutotuned
        else:
            names, any_kw = callable_names(fn)
            args = KernelArgs(kernel_name, names, key, tunable, accepts_any=any_kw)
            versions, cls = "", CallAutotuned
        tuner = Tuner(kernel_name, tuned_space, settings, TuneStore(url), source=source_hash(fn),
                      versions=versions)
        tuned = cls(fn, tuner, args, check)
        tuned.pruning = pruning
        return tuned

    return decorate


def _early_prune(prune_configs_by: Any) -> Callable[..., Any] | None:
    """The ``early_config_prune`` function of ``triton.autotune``'s *prune_configs_by*, if any."""
    if prune_configs_by is None:
        return None
    if not isinstance(prune_configs_by, Mapping):
        raise AutotuneError("prune_configs_by must be a dict, as triton.autotune's: "
                            "{'early_config_prune': fn}.")
    other = sorted(set(prune_configs_by) - {"early_config_prune"})
    if other:
        raise AutotuneError(f"prune_configs_by takes only early_config_prune, not {', '.join(other)}: the "
                            "search (and, after a few keys, the cost model) replaces a perf model; write "
                            "any other rule as a named predicate in constraints=.")
    fn = prune_configs_by.get("early_config_prune")
    if not callable(fn):
        raise AutotuneError("prune_configs_by's early_config_prune must be a function "
                            "fn(configs, named_args) -> the configs to keep.")
    return fn


class _EarlyPrune:
    """``early_config_prune`` as a constraint: the configs it kept for each key (a key it has not
    seen keeps every config until :meth:`run` has seen the key's call). *base* is the space
    without it, whose feasible configs the function is offered."""

    def __init__(self, fn: Callable[..., Any], triton: bool, base: Space) -> None:
        self.fn, self.triton, self.base = fn, triton, base
        self.kept: dict[str, frozenset[str]] = {}

    def keeps(self, config: Any, key: Any, arch: Any) -> bool:
        kept = self.kept.get(key.key)
        return kept is None or config.key in kept

    def run(self, key: KeyValues, arch: ArchProfile | None, arguments: Mapping[str, Any]) -> None:
        """Call the function once on *key*'s feasible configs and the call's *arguments*."""
        if key.key in self.kept:
            return
        space = self.base
        feasible = space.enumerate(key, arch).feasible
        by_id, offered = {}, []
        for config in feasible:
            item = _triton_config(config.as_dict()) if self.triton else config.as_dict()
            by_id[id(item)] = config.key
            offered.append(item)
        try:
            returned = list(self.fn(offered, dict(arguments)))
        except Exception as e:
            raise AutotuneError(f"early_config_prune raised {type(e).__name__}: {e}") from e
        kept = set()
        for item in returned:
            if id(item) in by_id:
                kept.add(by_id[id(item)])
            else:  # a new object: read its values
                values = dict(item.all_kwargs()) if hasattr(item, "all_kwargs") else dict(item)
                kept.add(space.config_from_dict({k: v for k, v in values.items()
                                                 if k in {p.name for p in space.params}}).key)
        if not kept:
            raise AutotuneError(f"early_config_prune kept none of the {len(feasible)} feasible configs of "
                                f"{key.key}; it must return at least one.")
        self.kept[key.key] = frozenset(kept)


def _triton_config(values: Mapping[str, Any]) -> Any:
    import triton

    options = {k: values[k] for k in LAUNCH_OPTIONS if k in values}
    return triton.Config({k: v for k, v in values.items() if k not in options}, **options)


class Autotuned:
    """A kernel under ``@flysearch.autotune``: dispatches each call to its key's best config."""

    pruning: _EarlyPrune | None = None

    def __init__(self, fn: Any, tuner: Tuner, args: KernelArgs, check: dict[str, Any]) -> None:
        self.fn, self.tuner, self.args, self.check = fn, tuner, args, check
        self.space, self.store = tuner.space, tuner.store
        functools.update_wrapper(self, python_function(fn), updated=())

    # -- what a subclass supplies -----------------------------------------------------------------

    def _launcher(self, arguments: dict[str, Any], grid: Any) -> Any:
        raise NotImplementedError

    def _check_launcher(self, arguments: dict[str, Any], grid: Any) -> Any:
        return self._launcher(arguments, grid)

    def _device(self, arguments: Mapping[str, Any]) -> tuple[str, ArchProfile | None]:
        """The device the call runs on, and its arch profile (``None`` when flysearch has none)."""
        for value in arguments.values():
            if getattr(value, "is_cuda", False):
                import torch

                device = torch.cuda.get_device_name(value.device)
                try:
                    return device, arch_of_device(device)
                except UnknownArchError:
                    return device, None
        return "cpu", None

    # -- dispatch and tuning ----------------------------------------------------------------------

    def _config(self, values: tuple[Any, ...], args: Sequence[Any], kwargs: Mapping[str, Any],
                grid: Any = None) -> dict[str, Any] | None:
        arguments = self.args.bind(args, kwargs)
        key = self.args.named(values)
        run = _CHECKING.get()
        if self.pruning is not None:
            self.pruning.run(key, run.arch if run is not None else self._device(arguments)[1], arguments)
        if run is not None:  # check the key for an AMD arch instead: nothing is launched
            table = self._check(arguments, grid, key, run.arch, run.budget)
            path = run.folder / f"{_file_name(self.tuner.name)}__{_file_name(key.key)}.table.json.gz"
            dump_table_file(table, path)
            run.checked.append((check_summary(table), path))
            return None
        device, arch = self._device(arguments)

        def evaluator() -> KernelEvaluator:
            return self._evaluator(arguments, grid, arch)

        racing = _RACING.get()
        if racing is not None:  # race the key instead: every feasible config, the table written
            table = self.tuner.race(key, device, arch, evaluator())
            path = Path(racing) / f"{_file_name(self.tuner.name)}__{_file_name(key.key)}.table.json.gz"
            dump_table_file(table, path)
            return table.confirmed_best().params
        return self.tuner.config(values, key, device, arch, evaluator)

    def _evaluator(self, arguments: dict[str, Any], grid: Any, arch: ArchProfile | None) -> KernelEvaluator:
        workload = Workload(arguments, **self.check)
        return KernelEvaluator(self._launcher(arguments, grid), workload, self.tuner.settings.protocol, arch)

    def _race(self, args: Sequence[Any], kwargs: Mapping[str, Any], grid: Any, **options: Any) -> GroundTruth:
        arguments = self.args.bind(args, kwargs)
        device, arch = self._device(arguments)
        key = self.args.named(self.args.values(args, kwargs))
        if self.pruning is not None:
            self.pruning.run(key, arch, arguments)
        return self.tuner.race(key, device, arch, self._evaluator(arguments, grid, arch), **options)

    def _check(self, arguments: dict[str, Any], grid: Any, key: KeyValues, arch: ArchProfile,
               budget: int | None) -> GroundTruth:
        launcher = self._check_launcher(arguments, grid)
        return self.tuner.check(key, arch, lambda config: launcher.compile_for(arch.name, config),
                                budget=budget)

    def check_arch(self, *args: Any, arch: str, budget: int | None = None, grid: Any = None,
                   **kwargs: Any) -> GroundTruth:
        """Compile this call's key for the AMD *arch* on this machine, GPU or not, launching
        nothing: every feasible config, or *budget* of them (:meth:`Tuner.check`). Configs that
        spill, overflow LDS or fit no wave are stored as rejected, so a tune on *arch* skips them;
        the table of resources is returned."""
        arguments = self.args.bind(args, kwargs)
        key = self.args.named(self.args.values(args, kwargs))
        return self._check(arguments, grid, key, get_arch(arch), budget)

    def best_config(self, **key: Any) -> dict[str, Any] | None:
        """The stored best config for these key values on this machine's last device, if tuned."""
        values = tuple(KeyValues.of({k: key[k] for k in self.args.key}).values()) if all(
            k in key for k in self.args.key) else None
        if values is None:
            raise AutotuneError(f"best_config needs every key argument: {', '.join(self.args.key)}.")
        if values in self.tuner.best:
            return self.tuner.best[values]
        for device in self.tuner._identity or {"cpu": ""}:
            found = self.store.winner(self.tuner.identity(device), self.args.named(values).key)
            if found is not None:
                return found
        return None


class TritonAutotuned(Autotuned):
    """A ``@triton.jit`` kernel under ``@flysearch.autotune``: ``kernel[grid](*args, **kwargs)``."""

    def __init__(self, fn: Any, tuner: Tuner, args: KernelArgs, check: dict[str, Any]) -> None:
        super().__init__(fn, tuner, args, check)
        self.arg_names = fn.arg_names
        self._run = fn.run
        self._values = args.values
        self._best = tuner.best

    def __getitem__(self, grid: Any) -> Callable[..., Any]:
        def launch(*args: Any, **kwargs: Any) -> Any:
            # A tuned key launches from here, in one frame: the key's values, one lookup, the launch.
            config = self._best.get(self._values(args, kwargs))
            if config is None:
                return self.run(*args, grid=grid, warmup=False, **kwargs)
            return self._run(*args, grid=grid, warmup=False, **kwargs, **config)

        return launch

    def run(self, *args: Any, grid: Any, warmup: bool = False, **kwargs: Any) -> Any:
        values = self._values(args, kwargs)
        config = self._best.get(values)
        if config is None:
            config = self._config(values, args, kwargs, grid)
            if config is None:  # checked for an AMD arch (see checking): nothing runs
                return None
        return self._run(*args, grid=grid, warmup=warmup, **kwargs, **config)

    def warmup(self, *args: Any, grid: Any, **kwargs: Any) -> Any:
        return self.run(*args, grid=grid, warmup=True, **kwargs)

    def _launcher(self, arguments: dict[str, Any], grid: Any) -> Any:
        if grid is None:
            raise AutotuneError("A Triton kernel is tuned on a launch: call kernel[grid](...) "
                                "(or pass grid=).")
        return TritonLauncher(self.fn, grid, arguments)

    def _check_launcher(self, arguments: dict[str, Any], grid: Any) -> Any:
        return TritonLauncher(self.fn, grid, arguments)  # a compile for an arch needs no grid

    def tune(self, *args: Any, grid: Any, **kwargs: Any) -> dict[str, Any] | None:
        """Tune this call's key if it is not tuned yet (nothing is launched); its best config."""
        return self._config(self._values(args, kwargs), args, kwargs, grid)

    def race(self, *args: Any, grid: Any, retime: RetimeSettings | None = None,
             progress: Callable[[int, int], None] | None = None, **kwargs: Any) -> GroundTruth:
        """Compile and time every feasible config on this call's arguments: the ground truth
        (:meth:`Tuner.race`)."""
        return self._race(args, kwargs, grid, retime=retime, progress=progress)


class CallAutotuned(Autotuned):
    """Any callable under ``@flysearch.autotune``: ``kernel(*args, **kwargs)`` runs
    ``fn(*args, **kwargs, **best_config)``."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        values = self.args.values(args, kwargs)
        config = self.tuner.best.get(values)
        if config is None:
            config = self._config(values, args, kwargs)
            if config is None:  # checked for an AMD arch (see checking): nothing runs
                return None
        return self.fn(*args, **kwargs, **config)

    def _launcher(self, arguments: dict[str, Any], grid: Any) -> Any:
        return CallLauncher(self.fn, arguments)

    def tune(self, *args: Any, **kwargs: Any) -> dict[str, Any] | None:
        """Tune this call's key if it is not tuned yet (nothing else runs); its best config."""
        return self._config(self.args.values(args, kwargs), args, kwargs)

    def race(self, *args: Any, retime: RetimeSettings | None = None,
             progress: Callable[[int, int], None] | None = None, **kwargs: Any) -> GroundTruth:
        """Run every feasible config on this call's arguments: the ground truth (:meth:`Tuner.race`)."""
        return self._race(args, kwargs, None, retime=retime, progress=progress)
