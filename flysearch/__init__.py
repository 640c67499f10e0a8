"""flysearch: search GPU kernel configs with Bayesian optimization, counting compiles.

The library is usable without the CLI::

    from flysearch import TableStore, ReplayEvaluator, StudySettings, run_study, space_for_table

    store = TableStore("flysearch.db")
    table = store.load("convolution_milo/MI250X")
    space = space_for_table(table)
    summary = run_study("conv-tpe", space, ReplayEvaluator(table),
                        StudySettings("tpe", budget=200, seed=0, space=space.name, table=table.name))
"""

from flysearch.arch import ArchProfile, Device, get_arch
from flysearch.errors import FlysearchError
from flysearch.evaluators import Measurement, Outcome, ReplayEvaluator
from flysearch.kernels import get_space, space_for_table
from flysearch.shapes import Shape
from flysearch.space import Config, Constraint, Param, Space
from flysearch.study import StudySettings, StudySummary, run_study, summarize
from flysearch.tables import GroundTruth, TableStore

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
