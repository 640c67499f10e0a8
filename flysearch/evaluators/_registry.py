"""Evaluators by name, as samplers are: what a study's ``evaluator`` (``--evaluator``) names.

A study, the CLI's list of choices and a worker server (``flysearch serve``) find an evaluator
here, never by comparing its name. Each is registered with a builder, which turns an
:class:`EvaluatorRequest` (a study's table or shape, arch, space, GPU, playback) into an
:class:`EvaluatorSetup`: the space the study searches and what answers its configs, either

* in process, an :class:`~flysearch.evaluators.Evaluator` (``live=False``: ``replay``), that the
  study loop asks one trial at a time; or
* live, a :class:`~flysearch.evaluators.LiveBackend` (``triton``, ``flydsl``, ``simulated``):
  compile processes and one GPU timer, that a live study's pipeline keeps busy.

A registration also says what the study targets: a stored table (``target="table"``: the study
imports, picks and loads it, and names it with ``--table``) or a GEMM shape (``target="shape"``,
``--shape``), and, with *problem*, what else a request must name (checked before any study starts).

Example (a user's evaluator, found by every study without touching the CLI)::

    from flysearch.evaluators import EvaluatorRequest, EvaluatorSetup, register_evaluator

    @register_evaluator("my-gemm", live=False)
    def _my_gemm(r: EvaluatorRequest) -> EvaluatorSetup:
        return EvaluatorSetup(my_space, evaluator=MyEvaluator(r.shape), shape=r.shape)

    launch(StudySpec(evaluator="my-gemm", shape="4096x4096x4096", sampler="tpe", budget=50))

>>> evaluator_names()
('replay', 'triton', 'flydsl', 'simulated')
>>> evaluator_names(live=True)
('triton', 'flydsl', 'simulated')
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from flysearch.errors import FlysearchError, InputFormatError, UnknownEvaluatorError

if TYPE_CHECKING:
    from flysearch.evaluators._base import Evaluator
    from flysearch.evaluators._live_backends import LiveBackend
    from flysearch.space import ArchProfile, Shape, Space
    from flysearch.tables import GroundTruth

__all__ = [
    "EvaluatorEntry",
    "EvaluatorRequest",
    "EvaluatorSetup",
    "build_evaluator",
    "evaluator_entry",
    "evaluator_names",
    "register_evaluator",
]

Target = Literal["table", "shape"]


@dataclass(frozen=True)
class EvaluatorRequest:
    """What an evaluator is built from: a study's target, and how a live one runs.

    Attributes:
        name: The evaluator's name.
        table: The table it answers from (loaded by the study; ``target="table"`` only).
        shape: The GEMM shape it compiles for (``target="shape"``).
        arch: Arch profile name (``None``: the evaluator's default, or the table's).
        space: Space name (``None``: the evaluator's default, or the table's).
        gpu: The GPU a live evaluator's timer owns.
        cache_dir: Where a live evaluator caches its compiles (``None``: the compiler's default).
        scale: Time scale of a playback (``simulated``).
        noise: Log-normal sigma of a playback (``simulated``).
        compile_log: A file each finished compile of a playback appends its key to (``simulated``).
    """

    name: str
    table: GroundTruth | None = None
    shape: Shape | None = None
    arch: str | None = None
    space: str | None = None
    gpu: str | None = None
    cache_dir: str | None = None
    scale: float = 1.0
    noise: float = 0.0
    compile_log: str | None = None


@dataclass(frozen=True)
class EvaluatorSetup:
    """An evaluator built for one study: what it searches and what answers its configs.

    Attributes:
        space: The space the study searches.
        evaluator: What answers a trial in process (an evaluator registered with ``live=False``).
        backend: What compiles and times a live study's trials (registered with ``live=True``).
        arch: The arch profile compiled for (``None`` when the table's device has none).
        shape: The GEMM shape (``None`` for a table of another problem).
        problem: The table's problem (its sizes), when it answers from a table.
        table: The table it answers from, when it does.
    """

    space: Space
    evaluator: Evaluator | None = None
    backend: LiveBackend | None = None
    arch: ArchProfile | None = None
    shape: Shape | None = None
    problem: dict[str, Any] | None = None
    table: GroundTruth | None = None


Builder = Callable[[EvaluatorRequest], EvaluatorSetup]


@dataclass(frozen=True)
class EvaluatorEntry:
    """A registered evaluator (see :func:`register_evaluator`)."""

    name: str
    build: Builder
    live: bool
    target: Target
    problem: Callable[[EvaluatorRequest], str | None] | None = None


_ENTRIES: dict[str, EvaluatorEntry] = {}


def register_evaluator(
    name: str, *, live: bool = True, target: Target = "shape",
    problem: Callable[[EvaluatorRequest], str | None] | None = None,
) -> Callable[[Builder], Builder]:
    """Register the decorated function as the builder of the evaluator called *name*.

    Args:
        name: What a study's ``evaluator`` (``--evaluator``) names it.
        live: Its builder returns a :class:`~flysearch.evaluators.LiveBackend` (a live study's
            pipeline runs it), or else an in-process :class:`~flysearch.evaluators.Evaluator`.
        target: ``"table"``: it answers from a stored table, which the study loads for it;
            ``"shape"``: it compiles for a GEMM shape (a study must name one; a worker server
            builds it without one).
        problem: What a request lacks for it, in one sentence (``None`` when nothing), checked
            before any study starts and again before it is built.
    """
    if target not in ("table", "shape"):
        raise ValueError(f"An evaluator's target is 'table' or 'shape', not {target!r}.")

    def add(builder: Builder) -> Builder:
        _ENTRIES[name] = EvaluatorEntry(name, builder, live, target, problem)
        return builder

    return add


def evaluator_names(*, live: bool | None = None) -> tuple[str, ...]:
    """Every registered evaluator's name, in the order registered (only the live ones, or only the
    in-process ones, given *live*)."""
    return tuple(name for name, e in _ENTRIES.items() if live is None or e.live == live)


def evaluator_entry(name: str) -> EvaluatorEntry:
    """The registration of the evaluator called *name*.

    Raises:
        UnknownEvaluatorError: no evaluator is registered by that name.
    """
    entry = _ENTRIES.get(name)
    if entry is None:
        raise UnknownEvaluatorError(f"Unknown evaluator {name!r}; choose one of: {', '.join(_ENTRIES)}.")
    return entry


def build_evaluator(request: EvaluatorRequest) -> EvaluatorSetup:
    """Build the evaluator *request* names.

    Raises:
        UnknownEvaluatorError: no evaluator is registered by that name.
        InputFormatError: the request lacks what the evaluator needs.
    """
    entry = evaluator_entry(request.name)
    if entry.target == "table" and request.table is None:
        raise InputFormatError(f"The {request.name} evaluator answers from a table; name one with --table.")
    found = entry.problem(request) if entry.problem is not None else None
    if found:
        raise InputFormatError(found)
    return entry.build(request)


# The builders import their evaluator's module when first used, so that a process pays for its own.


def _from_table(table: GroundTruth, **answers: Any) -> EvaluatorSetup:
    """What a study of *table* searches (its space, arch profile, shape and problem), answered by
    *answers* (an ``evaluator`` or a ``backend``)."""
    from flysearch.space import table_profile
    from flysearch.tables import space_for_table

    return EvaluatorSetup(space_for_table(table), arch=table_profile(table.meta.arch, table.meta.device),
                          shape=table.meta.shape(), problem=table.meta.problem, table=table, **answers)


@register_evaluator("replay", live=False, target="table")
def _replay(r: EvaluatorRequest) -> EvaluatorSetup:
    from flysearch.evaluators._replay import ReplayEvaluator

    assert r.table is not None
    return _from_table(r.table, evaluator=ReplayEvaluator(r.table))


def _needs_package(package: str, evaluator: str) -> None:
    # Checked first: each compile worker would die importing it, and be started again.
    if importlib.util.find_spec(package) is None:
        raise FlysearchError(
            f"The {evaluator} evaluator needs the {package} package, which this Python "
            f"({sys.executable}) lacks; install it, or use --evaluator simulated."
        )


@register_evaluator("triton")
def _triton(r: EvaluatorRequest) -> EvaluatorSetup:
    from flysearch.evaluators._live_backends import triton_backend
    from flysearch.kernels import get_space, triton_families
    from flysearch.space import get_arch

    _needs_package("triton", r.name)
    name = r.space or "triton_gemm_splitk"
    if name not in triton_families():
        raise InputFormatError(f"A live Triton study compiles one of flysearch's Triton families "
                               f"({', '.join(triton_families())}); space {name!r} is none of them.")
    arch, space = get_arch(r.arch or "sm_90"), get_space(name)
    backend = triton_backend(arch=arch.name, cache_dir=r.cache_dir, gpu=r.gpu, family=space.name)
    return EvaluatorSetup(space, backend=backend, arch=arch, shape=r.shape)


def _flydsl_problem(r: EvaluatorRequest) -> str | None:
    return None if r.arch else "A live FlyDSL study needs --arch (gfx942 or gfx950)."


@register_evaluator("flydsl", problem=_flydsl_problem)
def _flydsl(r: EvaluatorRequest) -> EvaluatorSetup:
    from flysearch.evaluators._live_backends import flydsl_backend
    from flysearch.kernels import get_space
    from flysearch.space import get_arch

    _needs_package("flydsl", r.name)
    space = get_space(r.space or "flydsl_gemm")
    if not space.kernel:
        raise FlysearchError(f"Space {space.name!r} names no kernel factory.")
    arch = get_arch(str(r.arch))
    return EvaluatorSetup(space, backend=flydsl_backend(space.kernel, arch.name, gpu=r.gpu), arch=arch,
                          shape=r.shape)


@register_evaluator("simulated", target="table")
def _simulated(r: EvaluatorRequest) -> EvaluatorSetup:
    from flysearch.evaluators._live_backends import simulated_backend

    assert r.table is not None
    backend = simulated_backend(r.table, scale=r.scale, noise=r.noise, compile_log=r.compile_log, gpu=r.gpu)
    return _from_table(r.table, backend=backend)
