"""What became of one config: the outcome every table row and every measurement carries."""

from __future__ import annotations

import enum

__all__ = ["Outcome"]


class Outcome(enum.StrEnum):
    """What became of one config."""

    OK = "ok"
    REJECTED = "rejected"
    COMPILE_FAILED = "compile_failed"
    RUNTIME_FAILED = "runtime_failed"
    WRONG_RESULT = "wrong_result"

    @property
    def failed(self) -> bool:
        return self is not Outcome.OK
