"""Studies that count compiles: one :class:`StudySpec` describes a study, replayed or live.

:func:`run_study` runs the ask -> answer (duplicate / rejected / compile) -> tell loop against an
evaluator (a replayed table); :func:`launch` runs a :class:`StudySpec` with its in-process evaluator
(whose table is picked or imported); :func:`run_live` (:mod:`flysearch.study.live`) runs a live one,
with a pool of compile processes ahead of each GPU. A spec names its evaluator, found by name
(:func:`flysearch.evaluators.evaluator_names`). Any number of processes may share one stored study.
"""

from __future__ import annotations

from flysearch.study._claims import ClaimStore, pid_alive, sql_engine
from flysearch.study._launch import launch, load_study_file
from flysearch.study._report import list_studies, load_summary
from flysearch.study._shared import lost_connection
from flysearch.study._spec import (
    DEFAULT_STORAGE,
    MAX_SEED,
    StudySpec,
    positive_int_problem,
    seed_problem,
)
from flysearch.study._study import StudySummary, open_storage, run_study, summarize, trial_records
from flysearch.study.live import LiveReport, LiveSettings, run_live, specs_to_serve

__all__ = [
    "DEFAULT_STORAGE",
    "MAX_SEED",
    "ClaimStore",
    "LiveReport",
    "LiveSettings",
    "StudySpec",
    "StudySummary",
    "launch",
    "list_studies",
    "load_study_file",
    "load_summary",
    "lost_connection",
    "open_storage",
    "pid_alive",
    "positive_int_problem",
    "run_live",
    "run_study",
    "seed_problem",
    "specs_to_serve",
    "sql_engine",
    "summarize",
    "trial_records",
]
