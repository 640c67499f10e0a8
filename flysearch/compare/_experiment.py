"""Experiment files: which tables, samplers, seeds and budget a comparison runs (TOML in ``studies/``).

An experiment file::

    [experiment]
    name = "hub-convolution-MI250X"          # names the results; rerunning resumes
    kind = "search"                          # or "key_mistake" (a matrix computed from the tables)
    budget = 200                             # unique compiles per run
    seeds = 20                               # 0..19, or an explicit list [0, 1, 2]
    workers = 2                              # worker processes
    output = "../lab/benchmarks/results/compare/hub-convolution-MI250X"   # where its committed results are
    db = "../flysearch.db"                   # table database, for tables given by name
    stop_at_optimum = true                   # end a run once it found the space's optimum (default)
    times = "race"                           # or "retimed": count against re-timed medians
    prior_on_tables = true                   # costmodel's prior also trains on the other [[table]]s

    [[table]]
    source = "../../shared/data/benchmark_hub/convolution_milo/MI250X.json.gz"   # a file, or a table name
    label = "convolution/MI250X"             # optional
    restrict = { BLOCK_M = [16, 32] }        # optional: a sub-space (allowed values per parameter)
    group = "decode-shaped"                  # optional: the aggregate group (default: arch/regime)

    [[sampler]]
    name = "tpe"
    encoding = "categorical"                 # "ordinal" (default) or "categorical"
    label = "tpe-categorical"                # optional
    options = { n_startup_trials = 20 }      # optional: the Optuna class's keyword arguments

``[[prior_table]]`` entries (same keys as ``[[table]]``) add training tables for the ``costmodel``
sampler and the zero-shot baselines ``fixed-list``, ``decision-tree`` and ``winners-first``
(:mod:`flysearch.samplers`); they are always trained leave-one-table-out: on the
``[[prior_table]]`` entries and the experiment's other tables, or on the ``[[prior_table]]``
entries alone with ``prior_on_tables = false`` (test tables that must never train a prior).
Relative paths are read from the file's folder.
A ``[[table]]`` or ``[[prior_table]]`` source may be a glob
(``"../lab/benchmarks/data/h200/*.table.json.gz"``): one table per file it matches, sorted. A
sampler may run fewer seeds than the experiment (``seeds = 2`` on a slow one, such as ``gp``).
Unknown keys are rejected with the list of allowed ones.

``output`` names the folder that holds the file's committed results. ``flysearch compare`` writes
there only when told to (``--out`` that folder): by default it writes to a new folder in the working
directory, so that running a committed file never rewrites what the repository holds. Its overrides
(a quick run on fewer seeds, a smaller budget, some samplers or tables) are parsed here:
:func:`parse_seeds`, :func:`select_samplers`, :func:`select_tables`.

``stop_at_optimum`` (default true) ends a run as soon as it has compiled the best config of the
searched space: from then on its best time cannot change, so every reported metric (compiles and
simulated seconds to 0/1/2/5%, fractions of the optimum at 25..200 compiles, success rates, the
score) is the same as if it had spent its whole budget; only the compiles, trials and seconds a run
actually spent are smaller. Set it to false to spend every budget in full.

``times = "retimed"`` makes the ground truth noise-aware: a config that the table's race re-timed in
interleaved rounds (:meth:`flysearch.tables.GroundTruth.with_retimed_times`) answers with its median
over the rounds, both to the samplers and to the metrics, so the optimum and the 1% and 2% sets are
the re-timed ones; every other config keeps its race time. ``"race"`` (the default) uses each
config's single race timing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flysearch._tomlfile import read_toml
from flysearch.errors import InputFormatError
from flysearch.samplers import SAMPLERS, TRANSFER_SAMPLERS, sampler_options_problem
from flysearch.space import ENCODINGS
from flysearch.study import MAX_SEED, positive_int_problem, seed_problem
from flysearch.tables import DEFAULT_DB

__all__ = [
    "KINDS",
    "MODEL_SAMPLERS",
    "Experiment",
    "SamplerSpec",
    "TableSpec",
    "check_output_folder",
    "load_experiment",
    "parse_seeds",
    "select_samplers",
    "select_tables",
]

KINDS: tuple[str, ...] = ("search", "key_mistake")
TIMES: tuple[str, ...] = ("race", "retimed")
# Samplers of flysearch.costmodel / flysearch.samplers; skipped while that module is absent.
MODEL_SAMPLERS: tuple[str, ...] = ("costmodel", "surrogate", "spreadforest")
_TABLE_SUFFIXES = (".json", ".json.gz")


@dataclass(frozen=True)
class SamplerSpec:
    """One sampler setting of an experiment.

    Attributes:
        name: Sampler name (:data:`flysearch.samplers.SAMPLERS` or :data:`MODEL_SAMPLERS`).
        label: Name in the results (default ``name``, or ``name-encoding`` when not ordinal).
        encoding: ``"ordinal"`` (tiles as log2 ordinals) or ``"categorical"`` (Optuna's default style).
        max_idle: Suggestions in a row without a new compile after which a run stops.
        seeds: Seeds of this sampler when it should run fewer than the experiment's (a slow one).
        options: Keyword arguments of the Optuna class an Optuna sampler builds, as sorted pairs
            (the label then names them unless one is given).
    """

    name: str
    label: str = ""
    encoding: str = "ordinal"
    max_idle: int = 1000
    seeds: tuple[int, ...] | None = None
    options: tuple[tuple[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if not self.label:
            label = self.name if self.encoding == "ordinal" else f"{self.name}-{self.encoding}"
            if self.options:
                label += "[" + ",".join(f"{k}={v}" for k, v in self.options) + "]"
            object.__setattr__(self, "label", label)

    @property
    def needs_prior(self) -> bool:
        """It learns from other tables, leave-one-table-out: ``costmodel`` and the zero-shot
        baselines ``fixed-list``, ``decision-tree`` and ``winners-first``."""
        return self.name == "costmodel" or self.name in TRANSFER_SAMPLERS


@dataclass(frozen=True)
class TableSpec:
    """One table of an experiment.

    Attributes:
        source: A table file (Kernel Tuner cache, ``*.table.json.gz``) or a table name in the database.
        label: Name in the results (default: the table's name, plus the restriction if any).
        restrict: Allowed values per parameter: the run searches that sub-space of the table.
        group: Aggregate group (default: ``arch/regime`` for GEMM tables, ``kernel/device`` otherwise).
    """

    source: str
    label: str = ""
    restrict: tuple[tuple[str, tuple[Any, ...]], ...] = ()
    group: str = ""

    @property
    def is_file(self) -> bool:
        return self.source.endswith(_TABLE_SUFFIXES)


@dataclass(frozen=True)
class Experiment:
    """A comparison: seeds x samplers x tables, or a key-mistake matrix over tables."""

    name: str
    tables: tuple[TableSpec, ...]
    samplers: tuple[SamplerSpec, ...] = ()
    seeds: tuple[int, ...] = (0,)
    budget: int = 200
    workers: int = 2
    output: str = "compare-results"
    db: str = DEFAULT_DB
    kind: str = "search"
    title: str = ""
    prior_tables: tuple[TableSpec, ...] = field(default=())
    stop_at_optimum: bool = True
    times: str = "race"
    prior_on_tables: bool = True
    # Positions (from 0) of the tables that get runs and a report; ``None``: all. The others still
    # train the costmodel sampler's prior, so a run on a few tables is the same run as in the whole.
    only_tables: tuple[int, ...] | None = None

    def validate(self) -> None:
        """Raise a one-line :class:`InputFormatError` for a mistake (touches no file)."""
        if self.kind not in KINDS:
            raise InputFormatError(
                f"Unknown experiment kind {self.kind!r}; choose one of: {', '.join(KINDS)}."
            )
        if not self.tables:
            raise InputFormatError(f"Experiment {self.name!r} names no [[table]]; add at least one.")
        if self.only_tables is not None and (
                not self.only_tables or not all(0 <= i < len(self.tables) for i in self.only_tables)):
            raise InputFormatError(
                f"only_tables must pick positions 0 to {len(self.tables) - 1}, got {list(self.only_tables)}."
            )
        if self.kind == "key_mistake":
            return
        if not self.samplers:
            raise InputFormatError(f"Experiment {self.name!r} names no [[sampler]]; add at least one.")
        if not isinstance(self.budget, int) or self.budget < 1:
            raise InputFormatError(f"The budget must be a positive number of compiles, got {self.budget!r}.")
        if not isinstance(self.workers, int) or self.workers < 1:
            raise InputFormatError(f"workers must be a positive integer, got {self.workers!r}.")
        if not isinstance(self.stop_at_optimum, bool):
            raise InputFormatError(f"stop_at_optimum must be true or false, got {self.stop_at_optimum!r}.")
        if not isinstance(self.prior_on_tables, bool):
            raise InputFormatError(f"prior_on_tables must be true or false, got {self.prior_on_tables!r}.")
        if self.times not in TIMES:
            raise InputFormatError(f"Unknown times {self.times!r}; choose one of: {', '.join(TIMES)}.")
        for s in self.samplers:
            if s.name not in SAMPLERS + MODEL_SAMPLERS:
                known = ", ".join(dict.fromkeys(SAMPLERS + MODEL_SAMPLERS))
                raise InputFormatError(f"Unknown sampler {s.name!r}; choose one of: {known}.")
            problem = positive_int_problem(f"max_idle of sampler {s.label!r}", s.max_idle)
            problem = problem or sampler_options_problem(s.name, dict(s.options))
            if problem:
                raise InputFormatError(problem)
            if s.encoding not in ENCODINGS:
                raise InputFormatError(
                    f"Unknown encoding {s.encoding!r} of sampler {s.label!r}; choose one of: "
                    f"{', '.join(ENCODINGS)}."
                )
        _unique("sampler label", [s.label for s in self.samplers])
        with_prior = any(s.needs_prior for s in self.samplers)
        candidates = len(self.prior_tables) + (len(self.tables) if self.prior_on_tables else 0)
        if with_prior and candidates < (2 if self.prior_on_tables else 1):
            raise InputFormatError(
                "The costmodel sampler's prior (and fixed-list, decision-tree, winners-first) trains on the "
                "other tables (leave-one-table-out); add a "
                "[[prior_table]]" + (" or a second [[table]]." if self.prior_on_tables else ".")
            )
        if len(set(self.seeds)) != len(self.seeds) or not self.seeds:
            raise InputFormatError(f"Seeds must be a non-empty list without repeats, got {list(self.seeds)}.")


def _unique(what: str, labels: list[str]) -> None:
    dup = sorted({x for x in labels if labels.count(x) > 1})
    if dup:
        raise InputFormatError(f"Each {what} must be unique, but {dup} repeat; give them distinct labels.")


_EXP_KEYS = {"name", "kind", "budget", "seeds", "workers", "output", "db", "title", "stop_at_optimum",
             "times", "prior_on_tables"}
_TABLE_KEYS = {"source", "label", "restrict", "group"}
_SAMPLER_KEYS = {"name", "label", "encoding", "max_idle", "seeds", "options"}
_TOP_KEYS = {"experiment", "table", "sampler", "prior_table"}


def _check_keys(path: Path, where: str, raw: Any, allowed: set[str]) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise InputFormatError(f"Experiment file {path}: {where} must be a table of keys.")
    unknown = set(raw) - allowed
    if unknown:
        raise InputFormatError(
            f"Experiment file {path}: {where} has unknown keys {sorted(unknown)}; allowed: {sorted(allowed)}."
        )
    return raw


def _table_spec(path: Path, where: str, raw: Any) -> TableSpec:
    raw = _check_keys(path, where, raw, _TABLE_KEYS)
    if not isinstance(raw.get("source"), str):
        raise InputFormatError(f"Experiment file {path}: {where} needs a source (a table file or name).")
    source = raw["source"]
    if source.endswith(_TABLE_SUFFIXES):
        source = str((path.parent / source).resolve())
    restrict = raw.get("restrict", {})
    if not isinstance(restrict, dict) or not all(isinstance(v, list) and v for v in restrict.values()):
        raise InputFormatError(
            f"Experiment file {path}: {where} restrict must map parameters to non-empty lists of values."
        )
    items = tuple(sorted((str(k), tuple(v)) for k, v in restrict.items()))
    return TableSpec(source, str(raw.get("label", "")), items, str(raw.get("group", "")))


def _expand(spec: TableSpec, where: str) -> list[TableSpec]:
    """A table source with a ``*`` stands for every file it matches (sorted); a label names one
    table, so it cannot go with a pattern that matches several."""
    if "*" not in spec.source:
        return [spec]
    matches = sorted(Path("/").glob(spec.source.lstrip("/")))
    if not matches:
        raise InputFormatError(f"{where} source {spec.source} matches no file; fix the pattern.")
    if spec.label and len(matches) > 1:
        raise InputFormatError(f"{where} gives the label {spec.label!r} to {len(matches)} files its source "
                               "matches; a label names one table: drop it or list the files one by one.")
    return [TableSpec(str(m), spec.label, spec.restrict, spec.group) for m in matches]


def _seeds(path: Path, raw: Any) -> tuple[int, ...]:
    if isinstance(raw, int) and not isinstance(raw, bool) and 0 < raw <= MAX_SEED + 1:
        return tuple(range(raw))
    if isinstance(raw, list) and all(seed_problem(x) is None and x is not None for x in raw):
        return tuple(raw)
    raise InputFormatError(
        f"Experiment file {path}: seeds must be a count or a list of integers from 0 to {MAX_SEED}, "
        f"got {raw!r}."
    )


def load_experiment(path: str | Path) -> Experiment:
    """Read and validate an experiment file (see the module docstring)."""
    path = Path(path)
    doc = read_toml(path, "Experiment file")
    _check_keys(path, "the top level", doc, _TOP_KEYS)
    exp = dict(_check_keys(path, "[experiment]", doc.get("experiment", {}), _EXP_KEYS))
    tables, priors = (
        tuple(spec for i, t in enumerate(doc.get(key, []))
              for spec in _expand(_table_spec(path, f"[[{key}]] #{i + 1}", t), f"[[{key}]] #{i + 1}"))
        for key in ("table", "prior_table")
    )
    samplers = []
    for i, raw in enumerate(doc.get("sampler", [])):
        raw = _check_keys(path, f"[[sampler]] #{i + 1}", raw, _SAMPLER_KEYS)
        if not isinstance(raw.get("name"), str):
            raise InputFormatError(f"Experiment file {path}: [[sampler]] #{i + 1} needs a name.")
        raw = dict(raw)
        if "seeds" in raw:
            raw["seeds"] = _seeds(path, raw["seeds"])
        if "options" in raw:
            if not isinstance(raw["options"], dict):
                raise InputFormatError(f"Experiment file {path}: [[sampler]] #{i + 1}: options must be "
                                       "a table of keyword arguments, such as { n_startup_trials = 20 }.")
            raw["options"] = tuple(sorted(raw["options"].items()))
        try:
            samplers.append(SamplerSpec(**raw))
        except TypeError as exc:
            raise InputFormatError(
                f"Experiment file {path}: [[sampler]] #{i + 1} is malformed: {exc}."
            ) from None
    values: dict[str, Any] = {k: v for k, v in exp.items() if k not in ("seeds", "output", "db")}
    values["name"] = str(exp.get("name") or path.stem)
    if "seeds" in exp:
        values["seeds"] = _seeds(path, exp["seeds"])
    values["output"] = str(
        (path.parent / str(exp.get("output", f"compare-results/{values['name']}"))).resolve()
    )
    if "db" in exp:
        values["db"] = str((path.parent / str(exp["db"])).resolve())
    experiment = Experiment(tables=tables, samplers=tuple(samplers), prior_tables=priors, **values)
    experiment.validate()
    return experiment


# -- overrides of an experiment, as ``flysearch compare`` takes them ------------------------------


def check_output_folder(folder: str | Path) -> None:
    """Raise a one-line :class:`InputFormatError` when *folder* cannot be made a folder (it, or a
    folder above it, is a file), before any run is spent."""
    folder = Path(folder)
    blocker = next((p for p in (folder, *folder.parents) if p.exists()), None)
    if blocker is not None and not blocker.is_dir():
        raise InputFormatError(f"--out {folder} cannot be a folder: {blocker} is a file.")


# More seeds than this in one --seeds is a typo (0-4294967295), not a plan.
_MAX_SEEDS = 100_000
_SEED_ITEM = re.compile(r"\s*([0-9]+)\s*(?:-\s*([0-9]+)\s*)?")


def parse_seeds(text: str) -> tuple[int, ...]:
    """Seeds written as a comma-separated list of seeds and inclusive ranges: ``0-4``, ``0,1,2``,
    ``0-2,7``; a single number is that one seed (``3`` runs seed 3 only).

    Raises:
        InputFormatError: not that syntax, a range that runs backwards, a seed outside 0..MAX_SEED,
            a seed given twice, or more than 100,000 seeds.
    """
    usage = (f"--seeds {text!r} is not a list of seeds; write a range 0-4, a list 0,1,2 or both (0-2,7), "
             f"with seeds from 0 to {MAX_SEED}.")
    seeds: list[int] = []
    for item in text.split(","):
        m = _SEED_ITEM.fullmatch(item)
        if m is None or int(m.group(2) or m.group(1)) > MAX_SEED:
            raise InputFormatError(usage)
        first, last = int(m.group(1)), int(m.group(2) or m.group(1))
        if first > last:
            raise InputFormatError(
                f"--seeds {text!r}: the range {first}-{last} runs backwards; write {last}-{first}."
            )
        if len(seeds) + last - first >= _MAX_SEEDS:
            raise InputFormatError(f"--seeds {text!r} asks for more than {_MAX_SEEDS} seeds.")
        seeds.extend(range(first, last + 1))
    seen: set[int] = set()
    for seed in seeds:
        if seed in seen:
            raise InputFormatError(f"--seeds {text!r} repeats seed {seed}; give each seed once.")
        seen.add(seed)
    return tuple(seeds)


def select_samplers(exp: Experiment, text: str) -> tuple[SamplerSpec, ...]:
    """The samplers a comma-separated *text* names, in its order: a label of one of *exp*'s samplers
    (with that sampler's settings), else any sampler flysearch knows (with default settings).

    Raises:
        InputFormatError: no name, or a name that is neither.
    """
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise InputFormatError(f"--samplers {text!r} names no sampler; give labels such as random,tpe.")
    by_label = {s.label: s for s in exp.samplers}
    known = SAMPLERS + MODEL_SAMPLERS
    picked = []
    for name in names:
        if name in by_label:
            picked.append(by_label[name])
        elif name in known:
            picked.append(SamplerSpec(name))
        else:
            raise InputFormatError(
                f"Unknown sampler {name!r} in --samplers; choose a label of the file "
                f"({', '.join(by_label)}) or one of: {', '.join(dict.fromkeys(known))}."
            )
    _unique("sampler in --samplers", [s.label for s in picked])
    return tuple(picked)


def select_tables(text: str, names: Sequence[tuple[str, str]]) -> tuple[int, ...]:
    """The positions (from 0) of the tables a comma-separated *text* picks, in the file's order.

    *names* holds each table's ``(label, table name)``. An item that is a number is a table's
    position in the file, counted from 1 (``[[table]] #2`` is ``2``); any other item picks every
    table whose label or name contains it (case-sensitive).

    Raises:
        InputFormatError: no item, a position past the last table, or an item that matches no table.
    """
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise InputFormatError(f"--tables {text!r} names no table; give positions (1,2) or parts of labels.")
    picked: set[int] = set()
    for item in items:
        if re.fullmatch(r"[0-9]+", item):
            if not 1 <= int(item) <= len(names):
                raise InputFormatError(
                    f"--tables {text!r}: there is no [[table]] #{item} (the file has {len(names)})."
                )
            picked.add(int(item) - 1)
            continue
        found = {i for i, pair in enumerate(names) if any(item in n for n in pair)}
        if not found:
            raise InputFormatError(
                f"--tables {item!r} matches no table; the tables are: {', '.join(p[0] for p in names)}."
            )
        picked |= found
    return tuple(sorted(picked))
