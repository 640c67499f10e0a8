"""Evaluators turn configs into measurements: replayed from tables, or compiled and timed live."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flysearch.evaluators.base import Compiled, Evaluator, Measurement, Outcome
    from flysearch.evaluators.replay import ReplayEvaluator

__all__ = ["Compiled", "Evaluator", "Measurement", "Outcome", "ReplayEvaluator"]

# Imported when first used, so that a pool process importing one evaluator module pays for it alone.
_HOME = {"Compiled": "base", "Evaluator": "base", "Measurement": "base", "Outcome": "base",
         "ReplayEvaluator": "replay"}


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module 'flysearch.evaluators' has no attribute {name!r}")
    return getattr(importlib.import_module(f"flysearch.evaluators.{_HOME[name]}"), name)
