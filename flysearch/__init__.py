"""flysearch: search GPU kernel configs with Bayesian optimization, counting compiles.

The library is usable without the CLI::

    from flysearch import TableStore, ReplayEvaluator, StudySettings, run_study, space_for_table

    store = TableStore("flysearch.db")
    table = store.load("convolution_milo/MI250X")
    space = space_for_table(table)
    summary = run_study("conv-tpe", space, ReplayEvaluator(table),
                        StudySettings("tpe", budget=200, seed=0, space=space.name, table=table.name))
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flysearch.arch import ArchProfile, Device, get_arch
    from flysearch.errors import FlysearchError
    from flysearch.evaluators import Measurement, Outcome, ReplayEvaluator
    from flysearch.kernels import get_space, space_for_table
    from flysearch.shapes import Shape
    from flysearch.space import Config, Constraint, Param, Space
    from flysearch.study import StudySettings, StudySummary, run_study, summarize
    from flysearch.tables import GroundTruth, TableStore

# The names are imported when first used (PEP 562), so that a process that needs one module (a
# compile worker of a live study) does not pay for Optuna, SQLite and the rest at start-up.
_HOME = {
    "ArchProfile": "arch", "Device": "arch", "get_arch": "arch", "FlysearchError": "errors",
    "Measurement": "evaluators", "Outcome": "evaluators", "ReplayEvaluator": "evaluators",
    "get_space": "kernels", "space_for_table": "kernels", "Shape": "shapes", "Config": "space",
    "Constraint": "space", "Param": "space", "Space": "space", "StudySettings": "study",
    "StudySummary": "study", "run_study": "study", "summarize": "study", "GroundTruth": "tables",
    "TableStore": "tables",
}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'flysearch' has no attribute {name!r}")
    return getattr(importlib.import_module(f"flysearch.{_HOME[name]}"), name)


__version__ = "0.1.0"

__all__ = [
    "ArchProfile",
    "Config",
    "Constraint",
    "Device",
    "FlysearchError",
    "GroundTruth",
    "Measurement",
    "Outcome",
    "Param",
    "ReplayEvaluator",
    "Shape",
    "Space",
    "StudySettings",
    "StudySummary",
    "TableStore",
    "get_arch",
    "get_space",
    "run_study",
    "space_for_table",
    "summarize",
]
