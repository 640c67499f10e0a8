"""The tuner behind the decorator: dispatch from memory or the store, or tune the key once.

For a call whose key values were never tuned, :meth:`Tuner.config` runs one study
(:func:`flysearch.study.run_study`) over the space's feasible configs for that key, compiles
counted, then re-times its finalists in interleaved rounds (:func:`finalist_keys`,
:func:`round_adjusted`) and stores the winner. **It learns across keys**: once ``transfer_after``
keys of the kernel are tuned, a prior (:func:`flysearch.costmodel.fit_prior`) trained on their
studies ranks the new key's configs before anything compiles, and the ``costmodel`` sampler follows
it with a small budget.

Every trial is kept in the store's Optuna study of the key, so a tune that is interrupted (Ctrl-C,
a kill, a crash of the kernel) resumes where it stopped, and :meth:`Tuner.tables` gives every tuned
key's measurements as tables (for ``flysearch compare``, ``flysearch model train`` or an export).
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

import optuna

from flysearch.costmodel import fit_prior
from flysearch.errors import AutotuneError, FlysearchError
from flysearch.evaluators import (
    KernelResources,
    RetimeSettings,
    TimingProtocol,
    amd_verdict,
    decide,
    interleaved_rounds,
    resource_extra,
    top_rows,
    with_rounds,
)
from flysearch.space import ArchProfile, Constraint, Space
from flysearch.study import StudySpec, run_study, trial_records
from flysearch.tables import GroundTruth, Measurement, Outcome, Row, TableMeta
from flysearch.tune._keys import KeyValues
from flysearch.tune._measure import KernelEvaluator
from flysearch.tune._store import TuneStore

__all__ = ["TuneResult", "TuneSettings", "Tuner", "check_summary", "cold_budget", "finalist_keys",
           "round_adjusted", "space_fingerprint"]

log = logging.getLogger("flysearch.autotune")


def cold_budget(n_feasible: int) -> int:
    """Compiles a key gets without a prior: 6% of the feasible configs, at least 24 (all of a
    small space) and at most 64."""
    return min(n_feasible, max(24, min(64, math.ceil(0.06 * n_feasible))))


@dataclass(frozen=True)
class TuneSettings:
    """How a key is tuned.

    Attributes:
        budget: Unique compiles for a key tuned without a prior (``None``: :func:`cold_budget`).
        sampler: The sampler of such a key (see :data:`flysearch.samplers.SAMPLERS`).
        seed: Seed of the samplers and of the re-timing order.
        transfer_after: Tuned keys of the kernel after which a prior ranks the next key's configs.
        transfer_budget: Unique compiles for a key tuned with a prior.
        finalists: The fastest configs re-timed in interleaved rounds before the winner is chosen
            (at least this many; see :func:`finalist_keys`).
        finalist_within: Also re-time every config whose searched time is within this fraction of
            the study's best (a search timing of a large GEMM can be 10-20% off).
        max_finalists: At most this many finalists.
        rounds: Rounds of that re-timing.
        protocol: How a config is timed (batches, their length, warm-up runs).
    """

    budget: int | None = None
    sampler: str = "auto"
    seed: int = 0
    transfer_after: int = 3
    transfer_budget: int = 32
    finalists: int = 5
    finalist_within: float = 0.15
    max_finalists: int = 12
    rounds: int = 10
    protocol: TimingProtocol = field(default_factory=TimingProtocol)

    def __post_init__(self) -> None:
        for name in ("transfer_budget", "finalists", "max_finalists", "rounds"):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise AutotuneError(f"{name} must be a positive integer, got {value!r}.")
        if self.max_finalists < self.finalists:
            raise AutotuneError(f"max_finalists ({self.max_finalists}) must be at least finalists "
                                f"({self.finalists}).")
        if not isinstance(self.finalist_within, (int, float)) or not 0 <= self.finalist_within < 1:
            raise AutotuneError(f"finalist_within must be a fraction in [0, 1), got "
                                f"{self.finalist_within!r}.")
        if self.budget is not None and (not isinstance(self.budget, int) or self.budget < 1):
            raise AutotuneError(f"budget must be a positive number of compiles, got {self.budget!r}.")


@dataclass
class TuneResult:
    """What tuning one key found and what it cost."""

    key: str
    config: dict[str, Any]
    winner_ms: float
    compiles: int
    n_feasible: int
    sampler: str
    seconds: float
    tie_set: list[str] = field(default_factory=list)
    failed: int = 0
    first_within: dict[str, int | None] = field(default_factory=dict)
    problem: dict[str, Any] = field(default_factory=dict)
    arch: str = ""
    graphed: int = 0  # finalists re-timed as CUDA graph replays

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def finalist_keys(searched_ms: dict[str, float], at_least: int, within: float, at_most: int) -> list[str]:
    """The configs a study re-times before it names a winner, fastest first by their searched time
    (*searched_ms*: config key -> ms): the *at_least* fastest, and every other one within *within*
    of the fastest, at most *at_most* in all.

    Example:
        >>> finalist_keys({"a": 1.0, "b": 1.08, "c": 1.2, "d": 1.05}, 1, 0.1, 5)
        ['a', 'd', 'b']
    """
    order = sorted(searched_ms, key=lambda k: (searched_ms[k], k))
    if not order:
        return []
    best = searched_ms[order[0]]
    near = sum(searched_ms[k] <= best * (1 + within) for k in order)
    return order[: min(at_most, max(at_least, near))]


def round_adjusted(samples: dict[str, list[float]]) -> dict[str, list[float]]:
    """Each finalist's re-timed samples (ms, one per interleaved round, every finalist timed in
    every round) with each round's common factor divided out.

    A GPU's clocks drift between rounds (a large GEMM on an H100 can run 10-20% slower in one round
    than in the next, for every config of the round alike), and that drift, not the configs, can
    decide a comparison of medians. A round's factor is the geometric mean, over the finalists, of
    each one's sample in that round over its median; divided by it, the samples keep their scale (ms)
    and lose what the round shared.

    Example:
        >>> adjusted = round_adjusted({"a": [1.0, 1.2, 1.0], "b": [1.02, 1.224, 1.02]})
        >>> [round(t, 3) for t in adjusted["a"]], [round(t, 3) for t in adjusted["b"]]
        ([1.0, 1.0, 1.0], [1.02, 1.02, 1.02])
    """
    rounds = min(len(v) for v in samples.values())
    medians = {k: statistics.median(v[:rounds]) for k, v in samples.items()}
    factors = [statistics.geometric_mean([v[r] / medians[k] for k, v in samples.items()])
               for r in range(rounds)]
    return {k: [t / f for t, f in zip(v[:rounds], factors, strict=True)] for k, v in samples.items()}


def space_fingerprint(space: Space) -> str:
    """A short hash of :meth:`Space.fingerprint`: the parameters' values and the constraints' code,
    the same in every process, so an edited space or constraint tunes again."""
    text = json.dumps(space.fingerprint(), sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


class Tuner:
    """Finds, stores and remembers the best config of one kernel per key.

    Args:
        name: The kernel's name (shown, and the first part of its identity).
        space: What is searched; constraints see ``(config, key values, arch)``.
        settings: How a key is tuned.
        store: Where winners and studies live (a :class:`TuneStore`).
        source: The kernel's source hash.
        versions: The compiler's version text (part of the identity).
    """

    def __init__(self, name: str, space: Space, settings: TuneSettings, store: TuneStore, *, source: str,
                 versions: str = "") -> None:
        self.name, self.space, self.settings, self.store = name, space, settings, store
        self.source, self.versions = source, versions
        self.best: dict[Any, dict[str, Any]] = {}
        self._identity: dict[str, str] = {}

    def identity(self, device: str) -> str:
        """The kernel's identity on *device*: name, source, space, device, compiler version."""
        if device not in self._identity:
            self._identity[device] = ":".join(
                [self.name, self.source, space_fingerprint(self.space), device, self.versions])
        return self._identity[device]

    @property
    def storage(self) -> optuna.storages.BaseStorage:
        return self.store.optuna

    # -- dispatch ---------------------------------------------------------------------------------

    def config(self, values: Any, key: KeyValues, device: str, arch: ArchProfile | None,
               evaluator: Callable[[], KernelEvaluator]) -> dict[str, Any]:
        """The winner for *key* (raw key *values* index the in-memory table): from memory, from the
        store, from a process tuning it now (waited for), or tuned here with ``evaluator()``."""
        kernel = self.identity(device)
        while True:
            config = self.store.winner(kernel, key.key)
            if config is not None:
                break
            if self.store.acquire(kernel, key.key, name=self.name):
                try:
                    with self.store.heartbeat(kernel, key.key):
                        result = self.tune(key, device, arch, evaluator())
                except BaseException:
                    self.store.release(kernel, key.key)
                    raise
                self.store.finish(kernel, key.key, result.config, result.as_dict())
                config = result.config
                break
            log.info("%s %s: another process is tuning it; waiting for its winner", self.name, key.key)
            time.sleep(0.5)
        self.best[values] = config
        return config

    # -- tuning one key ---------------------------------------------------------------------------

    @staticmethod
    def study_name(kernel: str, key: str) -> str:
        """The Optuna study of *key* of the kernel identity *kernel*."""
        return f"autotune:{kernel}:{key}"

    def tune(self, key: KeyValues, device: str, arch: ArchProfile | None, evaluator: KernelEvaluator, *,
             progress: Callable[[int, int], None] | None = None) -> TuneResult:
        """Tune *key*: a study (with a prior once enough keys are tuned), then the finalists'
        rounds. Raises :class:`AutotuneError` when no config of the key runs correctly."""
        t0 = time.perf_counter()
        kernel = self.identity(device)
        space = self._without_rejected(key, arch)
        n_feasible = len(space.enumerate(key, arch).feasible)
        prior = self._prior(kernel, key, arch, device)
        s = self.settings
        if prior is not None:
            spec = StudySpec(sampler="costmodel", budget=min(s.transfer_budget, n_feasible), seed=s.seed)
        else:
            spec = StudySpec(sampler=s.sampler, budget=s.budget or cold_budget(n_feasible), seed=s.seed)
        log.info("%s %s: tuning %d of %d feasible configs with %s", self.name, key.key, spec.budget,
                 n_feasible, spec.sampler)
        verbosity = optuna.logging.get_verbosity()
        optuna.logging.set_verbosity(optuna.logging.WARNING)  # a decorator tunes quietly
        try:
            summary = run_study(self.study_name(kernel, key.key), space, evaluator, spec, shape=key,
                                arch=arch, storage=self.storage, prior=prior, problem=key.problem(),
                                progress=progress)
        finally:
            optuna.logging.set_verbosity(verbosity)
        ok = self._ok_times(self.study_name(kernel, key.key))
        if not ok:
            raise AutotuneError(f"No config of {self.name} ran correctly for {key.key} "
                                f"({summary.failed} failed of {summary.compiles} compiled); see the "
                                "study's failures with 'flysearch tune show'.")
        finalists = finalist_keys({k: ms for k, (ms, _i) in ok.items()}, s.finalists, s.finalist_within,
                                  s.max_finalists)
        samples, failed = interleaved_rounds(
            finalists, lambda k: evaluator.time_again(k, self.space.config_from_key(k).as_dict()),
            s.rounds, s.seed, key=lambda k: k)
        evaluator.done()
        timed = {k: v for k, v in samples.items() if k not in failed and v}
        if not timed:
            raise AutotuneError(f"No finalist of {self.name} could be timed again for {key.key} "
                                f"({next(iter(failed.values()), 'no timing')}); see the study with "
                                "'flysearch tune show'.")
        report = decide(round_adjusted(timed), search_ms={k: ok[k][0] for k in timed})
        order = sorted(ok.values())
        best = order[0][0]
        first_within = {f"{int(eps * 100)}%": min((i for ms, i in ok.values() if ms <= best * (1 + eps)),
                                                  default=None) for eps in (0.01, 0.05)}
        return TuneResult(
            key=key.key, config=self.space.config_from_key(report.winner).as_dict(),
            winner_ms=report.winner_ms, compiles=summary.compiles, n_feasible=n_feasible,
            sampler=spec.sampler, seconds=round(time.perf_counter() - t0, 3), tie_set=report.tie_set,
            failed=summary.failed, first_within=first_within, problem=key.problem(),
            arch=arch.name if arch is not None else "", graphed=evaluator.graphed)

    def _ok_times(self, study_name: str) -> dict[str, tuple[float, int]]:
        """Each correct config's searched time and its compile index, from the stored study."""
        study = optuna.load_study(study_name=study_name, storage=self.storage)
        return {r.key: (r.time_ms, r.compile_index or 0) for _t, r in trial_records(study)
                if r.outcome == Outcome.OK.value and r.time_ms is not None and r.duplicate_of is None}

    def _without_rejected(self, key: KeyValues, arch: ArchProfile | None) -> Space:
        """The space with the configs a :meth:`check` found unfit on *arch* for *key* rejected by a
        constraint per reason (``resource:spills``, ...): a study skips them without a compile."""
        if arch is None or arch.vendor != "amd":
            return self.space
        rejected = self.store.rejected(self.identity(arch.name), key.key)
        if not rejected:
            return self.space
        extra = [Constraint(reason, functools.partial(_not_in, frozenset(c for c, r in rejected.items()
                                                                         if r == reason)))
                 for reason in sorted(set(rejected.values()))]
        return Space(self.space.name, list(self.space.params), [*self.space.constraints, *extra])

    # -- compile-only check for an AMD arch --------------------------------------------------------

    def check(self, key: KeyValues, arch: ArchProfile, compile_for: Callable[[dict[str, Any]],
              list[KernelResources]], *, budget: int | None = None,
              progress: Callable[[int, int], None] | None = None) -> GroundTruth:
        """Compile *key*'s feasible configs (or *budget* of them, drawn with the settings' seed) for
        the AMD *arch* with ``compile_for(config)``, on any machine, and read their resources. A
        config that spills, needs more LDS than *arch* has or fits no wave is rejected, and stored
        so, so that a tune on *arch* never compiles it. The table (``extra``: the resources; no
        times) is returned; nothing else is stored.

        Raises:
            AutotuneError: *arch* is not AMD, or no config compiles for it.
        """
        if arch.vendor != "amd":
            raise AutotuneError(f"A check compiles for an AMD arch (gfx942, gfx950); {arch.name} is "
                                f"{arch.vendor}.")
        enumeration = self.space.enumerate(key, arch)
        configs = enumeration.feasible
        if budget is not None and budget < len(configs):
            configs = enumeration.shuffled(self.settings.seed)[:budget]
        rows: dict[str, Row] = {}
        rejected: dict[str, str] = {}
        for i, config in enumerate(configs, 1):
            params, t0 = config.as_dict(), time.perf_counter()
            try:
                resources = compile_for(params)
            except FlysearchError:
                raise
            except Exception as exc:  # a config that does not build is an outcome, not an error
                text = f"{type(exc).__name__}: {exc}".splitlines()
                rows[config.key] = Row(config.key, params, Outcome.COMPILE_FAILED.value, None,
                                       time.perf_counter() - t0, detail=text[0][:300])
            else:
                reason = amd_verdict(resources, arch)
                if reason is not None:
                    rejected[config.key] = f"resource:{reason}"
                rows[config.key] = Row(
                    config.key, params, (Outcome.REJECTED if reason else Outcome.RUNTIME_FAILED).value,
                    None, time.perf_counter() - t0,
                    detail=rejected.get(config.key, "compile-only check: no AMD GPU to time on"),
                    extra=resource_extra(resources[0], arch))
            if progress is not None:
                progress(i, len(configs))
        if all(r.outcome == Outcome.COMPILE_FAILED.value for r in rows.values()):
            first = next(iter(rows.values()))
            raise AutotuneError(f"No config of {self.name} compiles for {arch.name} ({first.detail}); "
                                "check that the kernel runs on an AMD GPU.")
        self.store.reject(self.identity(arch.name), key.key, rejected)
        meta = TableMeta(name=f"{self.name}/{arch.name}/{key.key}", kernel=self.name, arch=arch.name,
                         device=f"{arch.name} (compile only)", problem=key.problem(),
                         space=self.space.to_json(), source="flysearch.autotune check",
                         versions={"compiler": self.versions} if self.versions else {})
        return GroundTruth(meta, rows)

    # -- ground truth ----------------------------------------------------------------------------

    def race(self, key: KeyValues, device: str, arch: ArchProfile | None, evaluator: KernelEvaluator, *,
             retime: RetimeSettings | None = None,
             progress: Callable[[int, int], None] | None = None) -> GroundTruth:
        """Compile and time every feasible config of *key* (the exhaustive race a search is judged
        against), then re-time its top in interleaved rounds; the table it makes (nothing is stored:
        write it with :func:`flysearch.tables.dump_table_file` for ``flysearch compare``)."""
        retime = retime or RetimeSettings()
        feasible = self.space.enumerate(key, arch).feasible
        rows: dict[str, Row] = {}
        for i, config in enumerate(feasible, 1):
            compiled = evaluator.compile(config, None)
            m = (evaluator.time(compiled) if compiled.outcome is Outcome.OK
                 else Measurement(compiled.outcome, None, compiled.compile_s, None, compiled.detail))
            rows[config.key] = Row.from_measurement(config.key, config.as_dict(), m)
            if progress is not None:
                progress(i, len(feasible))
        meta = TableMeta(name=f"{self.name}/{device}/{key.key}", kernel=self.name,
                         arch=arch.name if arch is not None else "", device=device, problem=key.problem(),
                         space=self.space.to_json(), source="flysearch.autotune race",
                         versions={"compiler": self.versions} if self.versions else {})
        table = GroundTruth(meta, rows)
        top = top_rows(table, retime.within, retime.min_k, retime.max_k)
        samples, failed = interleaved_rounds(
            top, lambda r: evaluator.time_again(r.key, r.params), retime.rounds, self.settings.seed)
        for row in with_rounds(top, samples, failed):
            rows[row.key] = row
        evaluator.done()
        return table

    # -- learning across keys ---------------------------------------------------------------------

    def tables(self, device: str, *, exclude: str | None = None) -> list[GroundTruth]:
        """Every tuned key of this kernel on *device* as a table of its measured configs."""
        kernel = self.identity(device)
        out = []
        for tuned in self.store.tuned(kernel):
            if tuned.state != "done" or tuned.key == exclude:
                continue
            study = optuna.load_study(study_name=self.study_name(kernel, tuned.key), storage=self.storage)
            rows = {}
            for _t, r in trial_records(study):
                if r.duplicate_of is not None or r.outcome == Outcome.REJECTED.value:
                    continue
                rows[r.key] = Row(r.key, self.space.config_from_key(r.key).as_dict(), r.outcome,
                                  r.time_ms if r.outcome == Outcome.OK.value else None, r.compile_s,
                                  detail=r.detail)
            meta = TableMeta(name=f"{self.name}/{device}/{tuned.key}", kernel=self.name,
                             arch=tuned.report.get("arch", ""), device=device,
                             problem=tuned.report.get("problem", {}), space=self.space.to_json(),
                             source="flysearch.autotune")
            out.append(GroundTruth(meta, rows))
        return out

    def _prior(self, kernel: str, key: KeyValues, arch: ArchProfile | None, device: str) -> Any:
        done = [t for t in self.store.tuned(kernel) if t.state == "done" and t.key != key.key]
        if len(done) < self.settings.transfer_after:
            return None
        tables = [t for t in self.tables(device, exclude=key.key) if any(r.ok for r in t.rows.values())]
        if len(tables) < self.settings.transfer_after:
            return None
        return fit_prior(tables)


def _not_in(keys: frozenset[str], config: Any, _key: Any, _arch: Any) -> bool:
    return config.key not in keys


def check_summary(table: GroundTruth) -> str:
    """One line of a :meth:`Tuner.check` table: configs compiled, spilling, rejected (each reason)
    and failed to compile."""
    rows = list(table.rows.values())
    failed = sum(r.outcome == Outcome.COMPILE_FAILED.value for r in rows)
    reasons: dict[str, int] = {}
    for r in rows:
        if r.outcome == Outcome.REJECTED.value:
            reasons[r.detail] = reasons.get(r.detail, 0) + 1
    why = ", ".join(f"{n} {d.removeprefix('resource:')}" for d, n in sorted(reasons.items()))
    key = table.meta.name.split("/", 2)[-1]
    spilling = reasons.get("resource:spills", 0)
    return (f"{table.meta.kernel} {key}: {len(rows) - failed} compiled for {table.meta.arch}, {spilling} "
            f"spilling, {sum(reasons.values())} rejected{f' ({why})' if why else ''}, {failed} failed "
            "to compile")
