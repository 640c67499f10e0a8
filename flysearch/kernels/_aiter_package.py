"""aiter's Python package as a dependency on a machine without ROCm.

The ``amd-aiter`` wheel on PyPI is pure Python and ships aiter's Triton kernels
(``aiter/ops/triton/_triton_kernels/...``) and their tuned configs per arch
(``aiter/ops/triton/configs/gemm/MI300X-GEMM-A16W16*.json``, ``MI350X-...``). Its top-level
``aiter/__init__.py`` loads the JIT machinery of its C++/HIP operators, which reads the ROCm version
file at import and raises without ROCm; the Triton kernels and their helpers import none of it. So
:func:`import_aiter_module` imports a submodule with the top-level package registered as a bare
package over the installed directory: aiter's own files, executed as they are, minus the one
``__init__`` that needs ROCm (the same on a ROCm machine, where it would only cost start-up time).
Where ``aiter`` was already imported, that import is used.

Nothing here copies aiter's code; it locates and imports the installed package.

Example:
    >>> root = aiter_root()
    >>> root is None or (root / "ops" / "triton").is_dir()
    True
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

from flysearch.errors import FlysearchError

__all__ = ["DISTRIBUTION", "aiter_root", "aiter_version", "import_aiter_module", "triton_configs_dir"]

DISTRIBUTION = "amd-aiter"
_INSTALL = f"pip install {DISTRIBUTION}"


def aiter_version() -> str | None:
    """The installed ``amd-aiter`` version, or ``None``."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return None


def aiter_root() -> Path | None:
    """The installed ``aiter`` package directory (found without importing it), or ``None``."""
    module = sys.modules.get("aiter")
    if module is not None and getattr(module, "__path__", None):
        return Path(next(iter(module.__path__)))
    spec = importlib.util.find_spec("aiter")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def triton_configs_dir() -> Path:
    """aiter's tuned Triton GEMM configs (``aiter/ops/triton/configs/gemm``); a
    :class:`FlysearchError` naming the install command when aiter is missing."""
    root = aiter_root()
    if root is None:
        raise FlysearchError(f"aiter is not installed; {_INSTALL}")
    path = root / "ops" / "triton" / "configs" / "gemm"
    if not path.is_dir():
        raise FlysearchError(f"aiter {aiter_version()} at {root} ships no Triton GEMM configs ({path})")
    return path


def import_aiter_module(name: str) -> Any:
    """Import ``aiter.<name>`` (e.g. ``ops.triton._triton_kernels.gemm_a16w16``) from the installed
    package, without running ``aiter/__init__.py`` where it cannot run (see the module docstring)."""
    root = aiter_root()
    if root is None:
        raise FlysearchError(f"aiter is not installed; {_INSTALL}")
    if "aiter" not in sys.modules:
        bare = types.ModuleType("aiter")
        bare.__path__ = [str(root)]
        sys.modules["aiter"] = bare
    return importlib.import_module(f"aiter.{name}")
