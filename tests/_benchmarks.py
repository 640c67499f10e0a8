"""Load a script of benchmarks/ as a module, for tests of its pure parts."""

from __future__ import annotations

import importlib.util
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def benchmark_module(name: str) -> types.ModuleType:
    """``benchmarks/<name>.py``, imported under the module name *name*."""
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
