"""Study definitions (TOML files in ``studies/`` or keyword arguments) and their launch.

A study file::

    [study]
    name = "quickstart"                      # the Optuna study name; running it again resumes
    table = "convolution_milo/MI250X"        # the ground-truth table to replay
    import = "../../shared/data/benchmark_hub/convolution_milo/MI250X.json.gz"
    sampler = "tpe"
    sampler_options = { n_startup_trials = 20 }   # optional: the Optuna class's keyword arguments
    budget = 200                             # unique compiles
    seed = 0

A live study names a live evaluator and may say how its workers run in a ``[live]`` table (the
fields of :class:`~flysearch.study.LiveSettings`)::

    [study]
    evaluator = "triton"
    shape = "1x6144x4096,4096x4096x4096"     # one study per shape
    sampler = "tpe-unseen"
    budget = 64
    storage = "sqlite:///live.db"

    [live]
    gpus = ["0", "1"]                        # one worker per GPU
    compile_workers = 14
    finalists = 5

Relative paths (``import``, ``db``, ``prior``, a ``sqlite:///`` storage; ``cache_dir`` and
``compile_log`` of ``[live]``) are read from the study file's folder. Unknown keys are rejected with
the list of allowed ones.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from flysearch._tomlfile import read_toml
from flysearch.errors import InputFormatError, MissingTableError
from flysearch.evaluators import EvaluatorSetup, build_evaluator, evaluator_entry, evaluator_names
from flysearch.space import get_arch, parse_shape
from flysearch.study._spec import LiveSettings, StudySpec, positive_int_problem
from flysearch.study._study import StudySummary, run_study
from flysearch.tables import GroundTruth, TableStore, import_table

__all__ = ["evaluator_setup", "launch", "load_study_file", "searched"]


# The keys of a study file's [study] table: a replayed study's fields (``import`` for ``import_path``).
_FILE_KEYS = {"table", "kernel", "arch", "shape", "sampler", "sampler_options", "budget", "seed", "name",
              "encoding", "storage", "db", "import", "max_idle", "prior", "evaluator"}
# The keys of its [live] table: the fields of LiveSettings but those set per worker.
_LIVE_KEYS = {f.name for f in fields(LiveSettings)} - {"gpu", "worker_index"}
_LIVE_COUNTS = {"compile_workers", "depth", "timer_queue", "rounds", "max_attempts"}  # positive integers
_LIVE_NUMBERS = {"noise_floor", "lease_s", "scale", "noise"}  # numbers >= 0
_LIVE_PATHS = {"cache_dir", "compile_log"}  # read from the file's folder


def load_study_file(path: str | Path) -> StudySpec:
    """Read a study file (see the module docstring)."""
    path = Path(path)
    doc = read_toml(path, "Study file")
    raw = doc.get("study")
    if not isinstance(raw, dict) or set(doc) - {"study", "live"}:
        raise InputFormatError(f"Study file {path} must hold exactly one [study] table (and a live study's "
                               "[live] table).")
    unknown = set(raw) - _FILE_KEYS
    if unknown:
        raise InputFormatError(
            f"Study file {path} has unknown keys {sorted(unknown)}; allowed: {sorted(_FILE_KEYS)}."
        )
    if not {"table", "kernel", "arch", "shape"} & set(raw):
        raise InputFormatError(f"Study file {path} does not name a table (or kernel, arch, shape).")
    here = path.parent
    values: dict[str, Any] = {k: v for k, v in raw.items() if k != "import"}
    if "import" in raw:
        values["import_path"] = str(here / raw["import"])
    if "db" in raw:
        values["db"] = str(here / raw["db"])
    if "prior" in raw:
        values["prior"] = str(here / raw["prior"])
    storage = raw.get("storage")
    if isinstance(storage, str) and storage.startswith("sqlite:///") and not storage.startswith("sqlite:////"):
        values["storage"] = "sqlite:///" + str(here / storage.removeprefix("sqlite:///"))
    if "live" in doc:
        values["live"] = _live_settings(path, doc["live"])
    try:
        spec = StudySpec(**values)
    except TypeError as exc:
        raise InputFormatError(f"Study file {path} is malformed: {exc}.") from None
    if "live" in doc and not evaluator_entry(spec.evaluator).live:
        raise InputFormatError(f"Study file {path} has a [live] table but its evaluator {spec.evaluator!r} "
                               f"is not live; name one of: {', '.join(evaluator_names(live=True))}.")
    spec.validate()
    return spec


def _live_settings(path: Path, raw: Any) -> LiveSettings:
    """The [live] table of the study file *path*, checked key by key."""
    if not isinstance(raw, dict):
        raise InputFormatError(f"Study file {path}: [live] must be a table.")
    unknown = set(raw) - _LIVE_KEYS
    if unknown:
        raise InputFormatError(
            f"Study file {path} has unknown keys {sorted(unknown)} in [live]; allowed: {sorted(_LIVE_KEYS)}.")
    values = dict(raw)
    for key, value in raw.items():
        problem = _live_value_problem(key, value)
        if problem:
            raise InputFormatError(f"Study file {path}: [live] {problem}")
        if key == "gpus":
            gpus = value.split(",") if isinstance(value, str) else value
            values[key] = tuple(str(g).strip() for g in gpus)
        elif key in _LIVE_PATHS:
            values[key] = str(path.parent / value)
    return LiveSettings(**values)


def _live_value_problem(key: str, value: Any) -> str | None:
    """Why *value* is no value of the [live] key *key* (``None`` when it is one)."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if key in _LIVE_COUNTS:
        return positive_int_problem(key, value)
    if key == "finalists":
        return None if number and isinstance(value, int) and value >= 0 else (
            f"finalists must be an integer >= 0, got {value!r}.")
    if key in _LIVE_NUMBERS:
        return None if number and value >= 0 else f"{key} must be a number >= 0, got {value!r}."
    if key == "gpus":
        listed = isinstance(value, list) and all(isinstance(g, int | str) and not isinstance(g, bool)
                                                 for g in value)
        return None if listed or isinstance(value, str) else (
            f'gpus must be a list of GPUs, such as ["0", "1"], got {value!r}.')
    return None if isinstance(value, str) else f"{key} must be a string, got {value!r}."


def launch(
    spec: StudySpec, *, progress: Callable[[int, int], None] | None = None
) -> tuple[StudySummary, float | None]:
    """Run (or resume) the study *spec* describes with its in-process evaluator (a replayed table
    unless it names another; a live one runs with :func:`~flysearch.study.run_live`).

    Returns:
        The study summary and the table's optimum in ms (``None`` if the table has no success, or
        the evaluator answers from no table).
    """
    spec.validate()
    if evaluator_entry(spec.evaluator).live:
        raise InputFormatError(f"The {spec.evaluator} evaluator runs live; launch runs the in-process ones "
                               f"({', '.join(evaluator_names(live=False))}): run it with run_live.")
    spec, setup = evaluator_setup(spec)
    if spec.prior:
        from flysearch.costmodel import load_prior

        prior = load_prior(spec.prior)
    else:
        prior = None
    assert setup.evaluator is not None, f"the {spec.evaluator} evaluator built no in-process evaluator"
    summary = run_study(
        spec.study_name, setup.space, setup.evaluator, searched(spec, setup), shape=setup.shape,
        arch=setup.arch, storage=spec.storage, progress=progress, problem=setup.problem, prior=prior,
    )
    table = setup.table
    return summary, (table.best().time_ms if table is not None and table.ok_rows() else None)


def evaluator_setup(spec: StudySpec, gpu: str | None = None) -> tuple[StudySpec, EvaluatorSetup]:
    """The evaluator *spec* names, built for it (timing on *gpu*, when live), and *spec* with the
    name of the table it imported; an evaluator that answers from a table gets it loaded (imported
    from ``import_path`` first, or picked by *kernel*, *arch* and *shape*)."""
    table = None
    if evaluator_entry(spec.evaluator).target == "table":
        spec, table = _load_table(spec)
    return spec, build_evaluator(spec.evaluator_request(table, gpu))


def searched(spec: StudySpec, setup: EvaluatorSetup) -> StudySpec:
    """*spec* with what its study searches, as its evaluator was built (*setup*): the space, table,
    arch profile and shape (the settings a study stores)."""
    table, arch, shape = setup.table, setup.arch, setup.shape
    return replace(spec, space=setup.space.name, table=table.name if table is not None else None,
                   arch=arch.name if arch else None, shape=shape.key if shape else None)


def _load_table(spec: StudySpec) -> tuple[StudySpec, GroundTruth]:
    """The table *spec* names (imported from its ``import_path`` when its database lacks it) or that
    its kernel, arch and shape pick, and *spec* with the imported table's name."""
    if spec.import_path is not None:
        held = False
        if Path(spec.db).is_file() and spec.table is not None:
            with contextlib.closing(TableStore(spec.db)) as existing:
                held = spec.table in existing
        if not held:  # imported (checked first, so that a bad file leaves no database behind)
            name = import_table(spec.import_path, db=spec.db, name=spec.table)
            spec = replace(spec, table=name)
        store = TableStore(spec.db)
    else:
        store = TableStore(spec.db, create=False)
    try:
        return spec, store.load(spec.table or pick_table(store, spec.kernel, spec.arch, spec.shape))
    finally:
        store.close()


def pick_table(store: TableStore, kernel: str | None, arch: str | None, shape: str | None) -> str:
    """The name of the one table of *store* that matches *kernel*, *arch* and *shape*."""
    want_shape = parse_shape(shape) if shape else None
    matches = []
    for name in store.names():
        meta = store.meta(name)
        if (kernel and meta.kernel != kernel) or (arch and meta.arch != get_arch(arch).name):
            continue
        if want_shape and meta.shape() != want_shape:
            continue
        matches.append(name)
    asked = ", ".join(f"{k} {v}" for k, v in (("kernel", kernel), ("arch", arch), ("shape", shape)) if v)
    if not matches:
        raise MissingTableError(
            f"No table in {store.path} matches {asked}; 'flysearch tables list' shows them."
        )
    if len(matches) > 1:
        raise MissingTableError(f"Several tables match {asked}: {', '.join(matches)}; name one with --table.")
    return matches[0]
