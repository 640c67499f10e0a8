"""Table builders: exhaustive races on a GPU, and sweeps of a space with any evaluator.
"""

from __future__ import annotations

from flysearch.race._flydsl_sweep import compile_sweep, write_sweep_csv
from flysearch.race._race import (
    VENDOR_KEY,
    RaceSettings,
    RaceShape,
    fastest_backends,
    race_summary,
    run_race,
    vendor_in_rounds,
    vendor_ms,
)
from flysearch.race._sweep import sweep_to_table

__all__ = [
    "VENDOR_KEY",
    "RaceSettings",
    "RaceShape",
    "compile_sweep",
    "fastest_backends",
    "race_summary",
    "run_race",
    "sweep_to_table",
    "vendor_in_rounds",
    "vendor_ms",
    "write_sweep_csv",
]
