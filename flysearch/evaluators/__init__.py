"""Evaluators turn configs into measurements: replayed from tables, or compiled and timed live."""

from flysearch.evaluators.base import Compiled, Evaluator, Measurement, Outcome
from flysearch.evaluators.replay import ReplayEvaluator

__all__ = ["Compiled", "Evaluator", "Measurement", "Outcome", "ReplayEvaluator"]
