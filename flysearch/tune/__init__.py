"""Your kernel, tuned: ``@flysearch.autotune`` over a ``@triton.jit`` kernel or any callable.

On a call whose key values were never tuned it searches the space in few compiles (a study, its
finalists re-timed in interleaved rounds, a prior from the kernel's other keys once it has a few),
stores the winner, and launches it; later calls and later processes dispatch from the store. See
``docs/tune-your-kernel.md``.
"""

from __future__ import annotations

from flysearch.tune._decorator import Autotuned, CheckRun, autotune, checking, make_space, racing
from flysearch.tune._keys import LAUNCH_OPTIONS, KeyValues
from flysearch.tune._store import DEFAULT_STORE, STORE_ENV, Tuned, TuneStore, store_url
from flysearch.tune._tuner import (
    Tuner,
    TuneResult,
    TuneSettings,
    check_summary,
    cold_budget,
    finalist_keys,
    round_adjusted,
    space_fingerprint,
)
from flysearch.tune._workload_file import load_keys, load_workload, run_workload, store_env

__all__ = [
    "DEFAULT_STORE",
    "LAUNCH_OPTIONS",
    "STORE_ENV",
    "Autotuned",
    "CheckRun",
    "KeyValues",
    "TuneResult",
    "TuneSettings",
    "TuneStore",
    "Tuned",
    "Tuner",
    "autotune",
    "check_summary",
    "checking",
    "cold_budget",
    "finalist_keys",
    "load_keys",
    "load_workload",
    "make_space",
    "racing",
    "round_adjusted",
    "run_workload",
    "space_fingerprint",
    "store_env",
    "store_url",
]
