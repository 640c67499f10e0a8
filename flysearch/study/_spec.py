"""One description of a study, replayed or live: what it searches, how, and where it is stored.

A :class:`StudySpec` is plain data: a study file (``studies/*.toml``), the command's flags and
Python code all build one, and it crosses process boundaries to the workers of a live study. Its
:meth:`~StudySpec.identity` is stored with the study and checked when the study is resumed, so that
a resumed study cannot silently change sampler, seed, space or table; with the :class:`Space` it
searches, the identity also holds the space's parameters, value sets and constraints
(:meth:`Space.fingerprint <flysearch.space.Space.fingerprint>`), and
:func:`identity_differences` names what differs.

Example:
    >>> from flysearch.study import StudySpec
    >>> spec = StudySpec(table="convolution_milo/MI250X", sampler="gp", budget=100)
    >>> spec.study_name
    'convolution_milo/MI250X:gp:seed0'
    >>> spec.with_overrides(seed=3, budget=None).study_name
    'convolution_milo/MI250X:gp:seed3'
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from flysearch.errors import FlysearchError, InputFormatError, UnknownSamplerError
from flysearch.evaluators import EvaluatorRequest, evaluator_entry
from flysearch.samplers import SAMPLERS, sampler_options_problem
from flysearch.space import ENCODINGS, Encoding, get_arch, parse_shape
from flysearch.tables import DEFAULT_DB

if TYPE_CHECKING:
    from flysearch.space import Space
    from flysearch.tables import GroundTruth

__all__ = [
    "DEFAULT_STORAGE",
    "MAX_SEED",
    "LiveSettings",
    "StudySpec",
    "identity_differences",
    "positive_int_problem",
    "seed_problem",
]

DEFAULT_STORAGE = "sqlite:///flysearch-studies.db"
MAX_SEED = 2**32 - 1  # numpy's and Optuna's samplers take seeds up to this


def seed_problem(seed: Any) -> str | None:
    """Why *seed* is no sampler seed (``None`` when it is one: ``None`` or 0 to :data:`MAX_SEED`)."""
    if seed is None or (isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed <= MAX_SEED):
        return None
    return f"A seed must be an integer from 0 to {MAX_SEED}, got {seed!r}."


def positive_int_problem(what: str, value: Any) -> str | None:
    """Why *value* is not a positive integer (``None`` when it is), naming it *what*."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return None
    return f"{what} must be a positive integer, got {value!r}."


@dataclass(frozen=True)
class LiveSettings:
    """How the workers of a live study run: their GPUs, pools, finalists, playback.

    Attributes:
        gpus: GPUs to time on (``CUDA_VISIBLE_DEVICES`` names: indices or ``GPU-``/``MIG-``
            UUIDs), one worker each, sharing the study; several studies are dealt to them. Default:
            one worker, on the GPU this process sees.
        compile_workers: Compile processes (default: CPU count minus 2, at least 1).
        depth: Most trials in flight at once (compiling, queued for a compile process, compiled,
            timing); default :meth:`in_flight`. A worker whose GPU is its bottleneck keeps fewer.
        timer_queue: Configs sent to the GPU's timer at once: one timing and the rest queued
            behind it, so that the GPU keeps timing while the study loop stores results, claims
            configs or asks the sampler (a timing takes milliseconds; one pass of the loop can
            take tens of them).
        gpu: The GPU one worker's timer owns (``CUDA_VISIBLE_DEVICES``/``HIP_VISIBLE_DEVICES``; set
            per worker from *gpus*).
        table: Name of the table the measurements land in (default ``live/<kernel>/<device>/<MxNxK>``).
        finalists: Configs re-timed before the winner is named (0: none).
        rounds: Re-timing rounds of the finalists.
        noise_floor: Relative noise below which two finalists are tied.
        lease_s: Another host's worker is dead when its heartbeat is older than this.
        max_attempts: A config whose claim outlived this many workers is recorded as failed (a
            backstop: a compile or launch that crashes is a recorded failure at once, since it
            runs in a pool process; this catches a config that takes the worker itself down).
        worker_index: This worker's number among the study's workers: its sampler draws from its
            own random stream (workers with one seed would all propose the same configs).
        server: Unix socket of a worker server (``flysearch serve``) to take a warm timer and warm
            compile processes from, instead of starting them (``""``: its default socket).
        cache_dir: Where the evaluator caches its compiles (Triton's cache; default: a fresh folder
            per run, removed when it ends).
        scale: ``simulated`` only: time scale of the playback.
        noise: ``simulated`` only: log-normal sigma of the playback.
        compile_log: ``simulated`` only: each finished compile appends its key to this file (an
            audit of what was compiled, across workers and restarts).
    """

    gpus: tuple[str, ...] = ()
    compile_workers: int | None = None
    depth: int | None = None
    timer_queue: int = 8
    gpu: str | None = None
    table: str | None = None
    finalists: int = 5
    rounds: int = 5
    noise_floor: float = 0.01
    lease_s: float = 120.0
    max_attempts: int = 5
    worker_index: int = 0
    server: str | None = None
    cache_dir: str | None = None
    scale: float = 1.0
    noise: float = 0.0
    compile_log: str | None = None

    def __post_init__(self) -> None:
        if self.timer_queue < 1:
            raise FlysearchError(f"timer_queue must be at least 1, got {self.timer_queue}.")
        bad = [g for g in self.gpus if not isinstance(g, str) or not re.fullmatch(_GPU, g)]
        if bad or len(set(self.gpus)) < len(self.gpus):
            raise InputFormatError(f"gpus {list(self.gpus)!r}: give GPU indices (or GPU-/MIG- UUIDs), "
                                   "distinct, as strings.")

    def workers(self) -> int:
        return self.compile_workers or max(1, (os.cpu_count() or 2) - 2)

    def in_flight(self) -> int:
        """Trials in flight: one per compile process, half as many again queued behind them (so
        that a process starts its next compile while the study loop is busy), and two for the
        GPU."""
        return self.depth or self.workers() + max(2, self.workers() // 2)


_GPU = r"\d+|(GPU|MIG)-[0-9A-Za-z/-]+"  # a GPU as CUDA_VISIBLE_DEVICES names it

# What a study stores about itself, in this order (its settings user attribute).
_STORED = ("sampler", "budget", "seed", "encoding", "space", "table", "arch", "shape", "max_idle")


@dataclass(frozen=True, kw_only=True)
class StudySpec:
    """One study, replayed or live.

    What is searched:
        evaluator: A registered evaluator (:func:`flysearch.evaluators.evaluator_names`):
            ``"replay"`` (a stored table, in process), or live: ``"triton"``, ``"flydsl"`` (compiled
            and timed on a GPU), ``"simulated"`` (a table played back in real time).
        table: The table replayed or played back; when ``None``, the one table that *kernel*,
            *arch* and *shape* pick.
        kernel: Kernel family, to pick a replayed table.
        arch: Arch profile name (picks a replayed table; the target of a live study; default
            ``sm_90`` for Triton, required for FlyDSL).
        shape: GEMM shape ``"MxNxK"`` (picks a replayed table; required by a live study).
        space: Space name (set from the table for a replay; default ``triton_gemm_splitk`` /
            ``flydsl_gemm`` for a live study).

    How:
        sampler: Sampler name (see :data:`flysearch.samplers.SAMPLERS`).
        sampler_options: Keyword arguments of the Optuna class an Optuna sampler builds
            (``{"n_startup_trials": 20}``; see :func:`flysearch.samplers.sampler_options_problem`).
        budget: Unique compiles the study may spend (may grow when a study is resumed; shared by
            all workers of a live study).
        seed: Seed of the sampler (and of the grid order).
        encoding: How integer parameters reach the sampler (``"ordinal"`` or ``"categorical"``).
        max_idle: Suggestions in a row without a new compile after which the study stops.
        prior: A model file (``flysearch model train``) for the ``costmodel`` sampler.

    Where:
        name: Study name; defaults to ``"<table>:<sampler>:seed<seed>"`` (see :attr:`study_name`).
            Workers with the same name and storage share the study.
        storage: Optuna storage URL (a SQLite file by default; PostgreSQL for many machines).
        db: Table database: the replayed table is read from it, live measurements land in it.
        import_path: A table file imported as *table* when the database lacks it.
        live: How each worker of a live study runs (:class:`LiveSettings`).
    """

    evaluator: str = "replay"
    table: str | None = None
    kernel: str | None = None
    arch: str | None = None
    shape: str | None = None
    space: str | None = None
    sampler: str = "auto"
    sampler_options: Mapping[str, Any] = field(default_factory=dict)
    budget: int = 200
    seed: int | None = 0
    encoding: Encoding = "ordinal"
    max_idle: int = 1000
    prior: str | None = None
    name: str | None = None
    storage: str = DEFAULT_STORAGE
    db: str = DEFAULT_DB
    import_path: str | None = None
    live: LiveSettings = field(default_factory=LiveSettings)

    def __post_init__(self) -> None:
        if not isinstance(self.budget, int) or isinstance(self.budget, bool) or self.budget < 1:
            raise InputFormatError(f"The budget must be a positive number of compiles, got {self.budget!r}.")
        problem = seed_problem(self.seed) or positive_int_problem("max_idle", self.max_idle)
        if problem:
            raise InputFormatError(problem)

    _IDENTITY = ("sampler", "seed", "encoding", "space", "table", "arch", "shape")

    @property
    def study_name(self) -> str:
        where = self.table or ":".join(x for x in (self.kernel, self.arch, self.shape) if x)
        return self.name or f"{where}:{self.sampler}:seed{self.seed}"

    def identity(self, space: Space | None = None) -> dict[str, Any]:
        """What a resumed study must share with the one stored: :meth:`stored` less the budget and
        ``max_idle``, which a resume may change (what differs: :func:`identity_differences`)."""
        stored = self.stored(space)
        return {k: stored[k] for k in (*self._IDENTITY, "searched") if k in stored}

    def stored(self, space: Space | None = None) -> dict[str, Any]:
        """What is stored with the study: its identity, budget and ``max_idle``, and, given the
        *space* it searches, what it searches (``"searched"``: :meth:`Space.fingerprint
        <flysearch.space.Space.fingerprint>`)."""
        out = {k: getattr(self, k) for k in _STORED}
        out["space"] = out["space"] or ""
        if self.sampler_options:  # a sampler at its defaults is stored as before options existed
            out["sampler"] = f"{self.sampler} {json.dumps(dict(self.sampler_options), sort_keys=True)}"
        if space is not None:
            out["searched"] = space.fingerprint()
        return out

    def with_overrides(self, **overrides: Any) -> StudySpec:
        """This spec with the given fields replaced (``None`` values are ignored)."""
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})

    def live_studies(self) -> list[StudySpec]:
        """The studies this live spec describes: one per shape it lists (comma-separated), or per
        table for an evaluator that plays tables back, each named ``<name>:<target>`` (one target:
        *name*), or ``<evaluator>:<target>:<sampler>:seed<seed>`` when *name* is not set.

        Example:
            >>> spec = StudySpec(evaluator="triton", shape="64x64x64,128x128x128", sampler="tpe")
            >>> [s.name for s in spec.live_studies()]
            ['triton:64x64x64:tpe:seed0', 'triton:128x128x128:tpe:seed0']
        """
        by_table = evaluator_entry(self.evaluator).target == "table"
        targets = _listed(self.table if by_table else self.shape)

        def study(target: str | None) -> StudySpec:
            name = ":".join(str(x) for x in (self.evaluator, target, self.sampler, f"seed{self.seed}") if x)
            if self.name:
                name = self.name if len(targets) < 2 else f"{self.name}:{target}"
            return replace(self, name=name, shape=self.shape if by_table else target,
                           table=target if by_table else self.table)

        return [study(t) for t in targets] or [study(None)]

    def evaluator_request(self, table: GroundTruth | None = None, gpu: str | None = None) -> EvaluatorRequest:
        """What this study's evaluator is built from (*table*: the table it answers from, loaded;
        *gpu*: the GPU a live worker times on)."""
        live, shape = self.live, parse_shape(self.shape) if self.shape else None
        return EvaluatorRequest(self.evaluator, table=table, shape=shape, arch=self.arch, space=self.space,
                                gpu=gpu, cache_dir=live.cache_dir,
                                scale=live.scale, noise=live.noise, compile_log=live.compile_log)

    def validate(self) -> None:
        """Check the spec without touching any table or study; raise a one-line error on a mistake."""
        entry = evaluator_entry(self.evaluator)
        if entry.live and len(studies := self.live_studies()) > 1:  # a list of shapes or tables
            for study in studies:
                study.validate()
            return
        if self.sampler not in SAMPLERS:
            raise UnknownSamplerError(
                f"Unknown sampler {self.sampler!r}; choose one of: {', '.join(SAMPLERS)}.")
        if not isinstance(self.sampler_options, Mapping):
            raise InputFormatError("sampler_options must be a table of keyword arguments, such as "
                                   "{ n_startup_trials = 20 }.")
        problem = sampler_options_problem(self.sampler, self.sampler_options)
        if problem:
            raise InputFormatError(problem)
        if self.encoding not in ENCODINGS:
            raise InputFormatError(
                f"Unknown encoding {self.encoding!r}; choose one of: {', '.join(ENCODINGS)}.")
        if self.name is not None and not isinstance(self.name, str):
            raise InputFormatError(f"A study name must be a string, got {self.name!r}.")
        if self.shape is not None:
            parse_shape(self.shape)  # a malformed shape fails here, before any study of a list runs
        if self.arch is not None:
            get_arch(self.arch)
        if entry.target == "table":
            if self.table is None and not (self.kernel or self.arch or self.shape):
                raise InputFormatError("Name a table, or a kernel, arch and shape that pick one.")
        elif not self.shape:
            raise InputFormatError(f"A {self.evaluator} study needs --shape MxNxK.")
        problem = entry.problem(self.evaluator_request()) if entry.problem is not None else None
        if problem:
            raise InputFormatError(problem)
        if self.prior and not os.path.isfile(self.prior):
            raise InputFormatError(f"Model file {self.prior} does not exist.")  # before any study is made


def _listed(targets: str | None) -> list[str]:
    """The comma-separated shapes or tables of a live spec."""
    return [t.strip() for t in str(targets or "").split(",") if t.strip()]


def identity_differences(stored: Mapping[str, Any], given: Mapping[str, Any]) -> list[str]:
    """What differs between a stored study's record and the :meth:`~StudySpec.identity` given now,
    one phrase each (``"seed: stored 0, given 1"``, ``"constraint lds_fits added"``).

    A record stored before flysearch stored what a study searches has no ``"searched"``: it
    differs in nothing there. Constraint code is compared only under the bytecode it was
    fingerprinted with (another Python version compiles the same code to other bytecode).

    Example:
        >>> old = StudySpec(table="t", sampler="tpe").identity()
        >>> identity_differences(old, StudySpec(table="t", sampler="tpe", seed=2).identity())
        ['seed: stored 0, given 2']
        >>> identity_differences(old, StudySpec(table="t", sampler="tpe",
        ...                                     sampler_options={"n_startup_trials": 5}).identity())
        ['options of sampler tpe: stored {}, given {"n_startup_trials": 5}']
    """
    out = []
    for key, value in given.items():
        was = stored.get(key)
        if key == "searched":
            if was is not None:
                out += _space_differences(was, value)
        elif was != value:
            out.append(_sampler_difference(was, value) if key == "sampler" else
                       f"{key}: stored {was!r}, given {value!r}")
    return out


def _sampler_difference(was: Any, now: str) -> str:
    """A stored and a given sampler (``"tpe"`` or ``"tpe {options}"``): the options that differ
    when the sampler is the same."""
    old_name, _, old_options = str(was).partition(" ")
    name, _, options = now.partition(" ")
    if old_name != name:
        return f"sampler: stored {was!r}, given {now!r}"
    return f"options of sampler {name}: stored {old_options or '{}'}, given {options or '{}'}"


def _space_differences(was: Mapping[str, Any], now: Mapping[str, Any]) -> list[str]:
    """What differs between two space fingerprints (:meth:`flysearch.space.Space.fingerprint`)."""
    out = []
    if was.get("space") != now["space"]:
        out.append(f"space: stored {was.get('space')!r}, given {now['space']!r}")
    old_params, params = was.get("params", {}), now["params"]
    for name, values in params.items():
        if name not in old_params:
            out.append(f"parameter {name} added")
        elif old_params[name] != values:
            added = [v for v in values if v not in old_params[name]]
            removed = [v for v in old_params[name] if v not in values]
            changes = [f"{what} {', '.join(map(repr, vs))}" for what, vs in (("added", added),
                                                                            ("removed", removed)) if vs]
            out.append(f"values of parameter {name}: {' and '.join(changes) or 'reordered'}")
    out += [f"parameter {name} removed" for name in old_params if name not in params]
    old_constraints, constraints = was.get("constraints", {}), now["constraints"]
    same_bytecode = was.get("bytecode") == now["bytecode"]
    for name, fingerprint in constraints.items():
        if name not in old_constraints:
            out.append(f"constraint {name} added")
        elif same_bytecode and old_constraints[name] != fingerprint:
            out.append(f"constraint {name} changed its code")
    out += [f"constraint {name} removed" for name in old_constraints if name not in constraints]
    return out
