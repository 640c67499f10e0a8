"""Study definitions (TOML files in ``studies/`` or keyword arguments) and their launch.

A study file::

    [study]
    name = "quickstart"                      # the Optuna study name; running it again resumes
    table = "convolution_milo/MI250X"        # the ground-truth table to replay
    import = "../../shared/data/benchmark_hub/convolution_milo/MI250X.json.gz"
    sampler = "tpe"
    budget = 200                             # unique compiles
    seed = 0

Relative paths (``import``, ``db``, a ``sqlite:///`` storage) are read from the study file's folder.
Unknown keys are rejected with the list of allowed ones.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from flysearch.arch import get_arch, table_profile
from flysearch.errors import InputFormatError, MissingTableError, UnknownSamplerError
from flysearch.evaluators.replay import ReplayEvaluator
from flysearch.importers.kernel_tuner import read_kernel_tuner_cache
from flysearch.kernels import space_for_table
from flysearch.samplers import SAMPLERS
from flysearch.shapes import parse_shape
from flysearch.space import ENCODINGS
from flysearch.study import (
    DEFAULT_STORAGE,
    StudySettings,
    StudySummary,
    positive_int_problem,
    run_study,
    seed_problem,
)
from flysearch.tables import (
    DEFAULT_DB,
    Row,
    TableMeta,
    TableStore,
    opened_store,
    read_table_file,
)
from flysearch.tomlfile import read_toml

__all__ = ["StudySpec", "import_table", "launch", "load_study_file"]


@dataclass(frozen=True)
class StudySpec:
    """Everything needed to launch one study.

    Attributes:
        table: Ground-truth table to replay; when ``None``, the one table matching *kernel*,
            *arch* and *shape* is used.
        kernel: Kernel family, to pick the table.
        arch: Arch profile name, to pick the table (an unknown arch is an error).
        shape: GEMM shape ``"MxNxK"``, to pick the table.
        sampler: Sampler name.
        budget: Unique compiles.
        seed: Sampler seed.
        name: Study name; defaults to ``"<table>:<sampler>:seed<seed>"``.
        encoding: ``"ordinal"`` or ``"categorical"``.
        storage: Optuna storage URL (SQLite file by default).
        db: Table database file.
        import_path: A Kernel Tuner cache imported as *table* when the database lacks it.
        max_idle: Suggestions in a row without a new compile before the study stops.
        prior: A model file (``flysearch model train``) for the ``costmodel`` sampler.
    """

    table: str | None = None
    kernel: str | None = None
    arch: str | None = None
    shape: str | None = None
    sampler: str = "tpe"
    budget: int = 200
    seed: int | None = 0
    name: str | None = None
    encoding: str = "ordinal"
    storage: str = DEFAULT_STORAGE
    db: str = DEFAULT_DB
    import_path: str | None = None
    max_idle: int = 1000
    prior: str | None = None

    @property
    def study_name(self) -> str:
        where = self.table or ":".join(x for x in (self.kernel, self.arch, self.shape) if x)
        return self.name or f"{where}:{self.sampler}:seed{self.seed}"

    def validate(self) -> None:
        """Check the spec without touching any file; raise a one-line error on a mistake."""
        if self.sampler not in SAMPLERS:
            raise UnknownSamplerError(
                f"Unknown sampler {self.sampler!r}; choose one of: {', '.join(SAMPLERS)}."
            )
        if self.encoding not in ENCODINGS:
            raise InputFormatError(
                f"Unknown encoding {self.encoding!r}; choose one of: {', '.join(ENCODINGS)}."
            )
        if not isinstance(self.budget, int) or isinstance(self.budget, bool) or self.budget < 1:
            raise InputFormatError(f"The budget must be a positive number of compiles, got {self.budget!r}.")
        problem = seed_problem(self.seed) or positive_int_problem("max_idle", self.max_idle)
        if problem:
            raise InputFormatError(problem)
        if self.name is not None and not isinstance(self.name, str):
            raise InputFormatError(f"A study name must be a string, got {self.name!r}.")
        if self.arch is not None:
            get_arch(self.arch)
        if self.shape is not None:
            parse_shape(self.shape)
        if self.table is None and not (self.kernel or self.arch or self.shape):
            raise InputFormatError("Name a table, or a kernel, arch and shape that pick one.")


_FILE_KEYS = {f.name for f in fields(StudySpec)} - {"import_path"} | {"import"}


def load_study_file(path: str | Path) -> StudySpec:
    """Read a study file (see the module docstring)."""
    path = Path(path)
    doc = read_toml(path, "Study file")
    raw = doc.get("study")
    if not isinstance(raw, dict) or set(doc) - {"study"}:
        raise InputFormatError(f"Study file {path} must hold exactly one [study] table.")
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
    try:
        spec = StudySpec(**values)
    except TypeError as exc:
        raise InputFormatError(f"Study file {path} is malformed: {exc}.") from None
    spec.validate()
    return spec


def read_any_table(path: str | Path, *, name: str | None = None) -> tuple[TableMeta, list[Row]]:
    """Read a table file of any supported format: a flysearch table file (``*.table.json.gz``) or
    a Kernel Tuner cache (``.json`` / ``.json.gz``)."""
    if str(path).endswith(".table.json.gz"):
        meta, rows = read_table_file(path)
        if name:
            meta.name = name
        return meta, rows
    return read_kernel_tuner_cache(path, name=name)


def import_table(
    path: str | Path, *, db: str | Path = DEFAULT_DB, name: str | None = None, replace: bool = False
) -> str:
    """Import a table file (see :func:`read_any_table`) into the table database; return its name."""
    meta, rows = read_any_table(path, name=name)
    with opened_store(db) as store:  # a database made for a table that is refused is removed
        store.write(meta, rows, replace=replace, require_ok=True)
    return meta.name


def launch(
    spec: StudySpec, *, progress: Callable[[int, int], None] | None = None
) -> tuple[StudySummary, float | None]:
    """Run (or resume) the study *spec* describes against its replayed table.

    Returns:
        The study summary and the table's optimum in ms (``None`` if the table has no success).
    """
    spec.validate()
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
        table = store.load(spec.table or pick_table(store, spec.kernel, spec.arch, spec.shape))
    finally:
        store.close()
    space = space_for_table(table)
    arch = table_profile(table.meta.arch, table.meta.device)
    shape = table.meta.shape()
    settings = StudySettings(
        spec.sampler, spec.budget, spec.seed, spec.encoding,  # type: ignore[arg-type]
        space=space.name, table=table.name, arch=arch.name if arch else None,
        shape=shape.key if shape else None, max_idle=spec.max_idle,
    )
    if spec.prior:
        from flysearch.costmodel import load_prior  # scikit-learn: only when a prior is asked for

        prior = load_prior(spec.prior)
    else:
        prior = None
    summary = run_study(
        spec.study_name, space, ReplayEvaluator(table), settings, shape=shape, arch=arch,
        storage=spec.storage, progress=progress, problem=table.meta.problem, prior=prior,
    )
    ok = table.ok_rows()
    return summary, (table.best().time_ms if ok else None)


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


def with_overrides(spec: StudySpec, **overrides: Any) -> StudySpec:
    """*spec* with the given fields replaced (``None`` values are ignored)."""
    return replace(spec, **{k: v for k, v in overrides.items() if v is not None})
