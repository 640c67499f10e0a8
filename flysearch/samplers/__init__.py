"""Samplers by name (:func:`make_sampler`), each in its own module, and the :class:`SearchContext`
they may read before a search starts.
"""

from __future__ import annotations

from flysearch.samplers._context import SearchContext
from flysearch.samplers._history import candidate_features
from flysearch.samplers._registry import SAMPLERS, SamplerRequest, make_sampler, register_sampler

__all__ = [
    "SAMPLERS",
    "SamplerRequest",
    "SearchContext",
    "candidate_features",
    "make_sampler",
    "register_sampler",
]
