"""What a sampler may know about a search before it starts (:class:`SearchContext`): the space, the
feasible configs in the study's order, the shape, arch and problem sizes. Every sampler module reads
it; it imports none of them."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution

    from flysearch.space import ArchProfile, Config, Encoding, Shape, Space

__all__ = ["SearchContext"]


@dataclass(frozen=True)
class SearchContext:
    """What a sampler may know about the search before it starts.

    Attributes:
        space: The space searched.
        encoding: How trial parameters encode configs (``space.decode``/``space.encode``).
        feasible: The feasible configs, in the study's seeded order.
        shape: The GEMM shape, when the table has one.
        arch: The arch profile, when known.
        problem: The problem sizes the cost model sees (a GEMM's M, N, K, dtype, or a
            benchmark's ``problem_size``); defaults to the shape's.
    """

    space: Space
    encoding: Encoding
    feasible: list[Config]
    shape: Shape | None = None
    arch: ArchProfile | None = None
    problem: dict[str, Any] | None = None
    distributions: dict[str, BaseDistribution] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "distributions", self.space.distributions(self.encoding))
        if self.problem is None:
            problem = self.shape.as_dict() if self.shape is not None else {}
            object.__setattr__(self, "problem", problem)

    @functools.cached_property
    def keys(self) -> list[str]:
        """Each feasible config's key, in ``feasible`` order (computed once, for every sampler and
        history that indexes the candidates by key)."""
        return [c.key for c in self.feasible]

    def encoded(self) -> list[dict[str, Any]]:
        """The feasible configs as trial parameters."""
        return [self.space.encode(c, self.encoding) for c in self.feasible]
