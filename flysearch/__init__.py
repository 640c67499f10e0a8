"""flysearch: search GPU kernel configs with Bayesian optimization, counting compiles.

The library behind the ``flysearch`` command. Its four jobs, each runnable as it stands here (the
examples replay the H200 tables committed in ``lab/benchmarks/data/h200``):

>>> import tempfile
>>> from pathlib import Path
>>> import flysearch
>>> tmp = Path(tempfile.mkdtemp())
>>> h200 = Path(flysearch.__file__).resolve().parents[1] / "lab" / "benchmarks" / "data" / "h200"
>>> tables = sorted(h200.glob("*.table.json.gz"))[:4]

**Launch a study.** A :class:`StudySpec` says what is searched, how and where it is stored; here it
imports a table file into a table database and replays it (a live study names an evaluator,
``triton``, ``flydsl`` or ``simulated``, and runs with :func:`run_live`):

>>> spec = flysearch.StudySpec(table="triton_gemm/H200/1000x576x7168", import_path=str(tables[0]),
...                            db=str(tmp / "tables.db"), storage=f"sqlite:///{tmp}/studies.db",
...                            sampler="random", budget=20, seed=0)
>>> summary, optimum_ms = flysearch.launch(spec)
>>> summary.compiles, summary.best_ms >= optimum_ms
(20, True)

**Compare samplers against grid.** An :class:`Experiment` runs seeds x samplers x tables and
counts the compiles each sampler needs to come within 1% / 5% of each table's optimum:

>>> exp = flysearch.Experiment("doc", tuple(flysearch.TableSpec(str(t)) for t in tables[:2]),
...                            (flysearch.SamplerSpec("random"), flysearch.SamplerSpec("grid")),
...                            seeds=(0,), budget=10, workers=1, output=str(tmp / "compare"))
>>> flysearch.run_experiment(exp).done
4
>>> sorted(p.name for p in flysearch.report_experiment(exp, plots=False))
['summary.csv', 'summary.md']

**Reuse a cost model across shapes.** A prior trained on past tables ranks a new shape's configs
before anything is compiled; the ``costmodel`` sampler starts from its ranking:

>>> store = flysearch.TableStore(tmp / "tables.db")
>>> for path in tables[1:]:
...     store.write(*flysearch.read_table_file(path), replace=True)
>>> prior = flysearch.fit_prior([store.load(n) for n in store.names()[1:]], max_iter=50)
>>> prior.save(tmp / "prior.joblib")
>>> summary, _ = flysearch.launch(spec.with_overrides(sampler="costmodel", prior=str(tmp / "prior.joblib"),
...                                                   name="with-prior", budget=5))
>>> summary.compiles <= 5
True

**Export best configs** where Triton reads them (FlyDSL artifacts and aiter's tuned CSV: see
:mod:`flysearch.export`):

>>> best = flysearch.best_configs(store, "triton_gemm/H200/1000x576x7168")
>>> source = flysearch.triton_configs_source(best)
>>> compile(source, "configs.py", "exec") and "triton.Config(" in source
True
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from flysearch._version import __version__

if TYPE_CHECKING:
    from flysearch.compare import (
        Experiment,
        SamplerSpec,
        TableSpec,
        load_experiment,
        report_experiment,
        run_experiment,
    )
    from flysearch.costmodel import CostModel, Prior, fit_prior, load_prior
    from flysearch.errors import FlysearchError
    from flysearch.evaluators import Measurement, ReplayEvaluator
    from flysearch.export import best_configs, export_json, triton_configs_source
    from flysearch.kernels import get_space
    from flysearch.space import ArchProfile, Config, Constraint, Device, Param, Shape, Space, get_arch
    from flysearch.study import (
        LiveSettings,
        StudySpec,
        StudySummary,
        launch,
        load_study_file,
        run_live,
        run_study,
        summarize,
    )
    from flysearch.tables import (
        GroundTruth,
        Outcome,
        TableStore,
        read_any_table,
        read_table_file,
        space_for_table,
    )
    from flysearch.tune import autotune

# The names are imported when first used (PEP 562), so that a process that needs one module (a
# compile worker of a live study) does not pay for Optuna, SQLite and the rest at start-up.
_HOME = {
    "autotune": "tune",
    "Experiment": "compare", "SamplerSpec": "compare", "TableSpec": "compare",
    "load_experiment": "compare", "report_experiment": "compare", "run_experiment": "compare",
    "CostModel": "costmodel", "Prior": "costmodel", "fit_prior": "costmodel", "load_prior": "costmodel",
    "FlysearchError": "errors", "Measurement": "evaluators", "ReplayEvaluator": "evaluators",
    "best_configs": "export", "export_json": "export", "triton_configs_source": "export",
    "get_space": "kernels",
    "ArchProfile": "space", "Config": "space", "Constraint": "space", "Device": "space", "Param": "space",
    "Shape": "space", "Space": "space", "get_arch": "space",
    "LiveSettings": "study", "StudySpec": "study", "StudySummary": "study", "launch": "study",
    "load_study_file": "study", "run_live": "study", "run_study": "study", "summarize": "study",
    "GroundTruth": "tables", "Outcome": "tables", "TableStore": "tables", "read_any_table": "tables",
    "read_table_file": "tables", "space_for_table": "tables",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'flysearch' has no attribute {name!r}")
    return getattr(importlib.import_module(f"flysearch.{_HOME[name]}"), name)



__all__ = [
    "ArchProfile",
    "Config",
    "Constraint",
    "CostModel",
    "Device",
    "Experiment",
    "FlysearchError",
    "GroundTruth",
    "LiveSettings",
    "Measurement",
    "Outcome",
    "Param",
    "Prior",
    "ReplayEvaluator",
    "SamplerSpec",
    "Shape",
    "Space",
    "StudySpec",
    "StudySummary",
    "TableSpec",
    "TableStore",
    "__version__",
    "autotune",
    "best_configs",
    "export_json",
    "fit_prior",
    "get_arch",
    "get_space",
    "launch",
    "load_experiment",
    "load_prior",
    "load_study_file",
    "read_any_table",
    "read_table_file",
    "report_experiment",
    "run_experiment",
    "run_live",
    "run_study",
    "space_for_table",
    "summarize",
    "triton_configs_source",
]
