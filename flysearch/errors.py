"""Errors a user can cause. Each message is one sentence that names the value and the fix."""

from __future__ import annotations

__all__ = [
    "AutotuneError",
    "EmptySpaceError",
    "FlysearchError",
    "InputFormatError",
    "MissingConfigError",
    "MissingTableError",
    "StudyMismatchError",
    "ToolchainError",
    "UnknownArchError",
    "UnknownEvaluatorError",
    "UnknownSamplerError",
]


class FlysearchError(Exception):
    """Base class of every error flysearch raises for a user mistake."""


class UnknownArchError(FlysearchError, KeyError):
    """An arch or device name that flysearch has no profile for."""

    def __str__(self) -> str:  # KeyError quotes its message; a user wants the sentence.
        return str(self.args[0]) if self.args else ""


class UnknownSamplerError(FlysearchError, ValueError):
    """A sampler name that flysearch does not know."""


class UnknownEvaluatorError(FlysearchError, ValueError):
    """An evaluator name that no evaluator is registered by."""


class EmptySpaceError(FlysearchError, ValueError):
    """The constraints removed every candidate of a space."""


class MissingTableError(FlysearchError, LookupError):
    """A ground-truth table that the database does not hold."""


class MissingConfigError(FlysearchError, LookupError):
    """A config that a replayed table does not hold."""


class InputFormatError(FlysearchError, ValueError):
    """A malformed input file: a study file, a Kernel Tuner cache, a CSV."""


class StudyMismatchError(FlysearchError, ValueError):
    """A stored study that was started with other settings than the ones given now."""


class ToolchainError(FlysearchError, RuntimeError):
    """A tool a compile needs (such as ld.lld >= 19 for FlyDSL) is missing from this machine."""


class AutotuneError(FlysearchError, ValueError):
    """A decorator argument that does not fit the kernel it decorates, or a store it cannot use."""
