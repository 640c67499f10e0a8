"""Samplers by name (:func:`make_sampler`), each in its own module, and the :class:`SearchContext`
they may read before a search starts.

:class:`CostModelSampler` is imported when first used (as :func:`make_sampler` imports it), so that
a study of another sampler does not pay for the cost model's module.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from flysearch.samplers._context import SearchContext
from flysearch.samplers._history import candidate_features, clear_candidate_features
from flysearch.samplers._registry import (
    SAMPLERS,
    SamplerRequest,
    make_sampler,
    register_sampler,
    sampler_options_problem,
)
from flysearch.samplers._zeroshot import TRAINED as TRANSFER_SAMPLERS
from flysearch.samplers._zeroshot import transfer_tables

if TYPE_CHECKING:
    from flysearch.samplers._costmodel import CostModelSampler

__all__ = [
    "SAMPLERS",
    "TRANSFER_SAMPLERS",
    "CostModelSampler",
    "SamplerRequest",
    "SearchContext",
    "candidate_features",
    "clear_candidate_features",
    "make_sampler",
    "register_sampler",
    "sampler_options_problem",
    "transfer_tables",
]

_HOME = {"CostModelSampler": "_costmodel"}  # imported when first used


def __getattr__(name: str) -> Any:
    if name not in _HOME:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOME[name]}"), name)
