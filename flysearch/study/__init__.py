"""Studies that count compiles: one :class:`StudySpec` describes a study, replayed or live.

:func:`run_study` runs the ask -> answer (duplicate / rejected / compile) -> tell loop against an
evaluator (a replayed table); :func:`launch` runs a :class:`StudySpec` with its in-process evaluator
(whose table is picked or imported); :func:`run_workers` and :func:`run_shapes` run a live one, with a
pool of compile processes ahead of each GPU. A spec names its evaluator, found by name
(:func:`flysearch.evaluators.evaluator_names`). Any number of processes may share one stored study.
"""

from __future__ import annotations

from flysearch.study._claims import ClaimStore, pid_alive, sql_engine
from flysearch.study._launch import launch, load_study_file
from flysearch.study._live_launch import (
    backend_to_serve,
    prepare_live,
    run_jobs,
    run_live,
    run_on_server,
    run_sequence,
    run_shapes,
    run_workers,
    served_specs,
)
from flysearch.study._live_pipeline import LiveReport
from flysearch.study._report import list_studies, load_summary
from flysearch.study._shared import lost_connection
from flysearch.study._spec import (
    DEFAULT_STORAGE,
    MAX_SEED,
    LiveSettings,
    StudySpec,
    positive_int_problem,
    seed_problem,
)
from flysearch.study._study import StudySummary, open_storage, run_study, summarize, trial_records

__all__ = [
    "DEFAULT_STORAGE",
    "MAX_SEED",
    "ClaimStore",
    "LiveReport",
    "LiveSettings",
    "StudySpec",
    "StudySummary",
    "backend_to_serve",
    "launch",
    "list_studies",
    "load_study_file",
    "load_summary",
    "lost_connection",
    "open_storage",
    "pid_alive",
    "positive_int_problem",
    "prepare_live",
    "run_jobs",
    "run_live",
    "run_on_server",
    "run_sequence",
    "run_shapes",
    "run_study",
    "run_workers",
    "seed_problem",
    "served_specs",
    "sql_engine",
    "summarize",
    "trial_records",
]
