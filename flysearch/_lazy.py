"""A package's public names imported on first use (PEP 562), so that a process which needs one name
of a package does not import every module behind the others (a compile worker, for example)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for *package* that imports each public name from its home: a module
    of the package (``"_store"``) or, given with a dot, any module (``"flysearch.tune._keys"``).

    Example:
        >>> getattr_ = lazy_names("flysearch.tables", {"Outcome": "_outcome"})
        >>> getattr_("Outcome").OK.value
        'ok'
    """

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        home = homes[name]
        return getattr(importlib.import_module(home if "." in home else f"{package}.{home}"), name)

    return __getattr__
