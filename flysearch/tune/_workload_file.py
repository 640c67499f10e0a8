"""Pre-tune offline: run a user's workload function once per key, so that every decorated kernel
it calls tunes that key before any production process needs it (``flysearch tune run``).

A *workload* is a function in the user's file that takes the key values as keyword arguments,
builds inputs of that size and calls the decorated kernels, as the user's code would::

    # my_kernels.py
    @flysearch.autotune(space=..., key=["n_rows", "n_cols"])
    @triton.jit
    def softmax_kernel(...): ...

    def workload(n_rows, n_cols):
        x = torch.randn(n_rows, n_cols, device="cuda")
        softmax(x)                     # launches softmax_kernel[grid](...)

and a keys file lists the sizes, one ``[[key]]`` table each::

    [[key]]
    n_rows = 4096
    n_cols = 8192
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from flysearch._tomlfile import read_toml
from flysearch.errors import AutotuneError, InputFormatError
from flysearch.tune._store import STORE_ENV

__all__ = ["load_keys", "load_workload", "run_workload", "store_env"]


def load_keys(path: str | Path) -> list[dict[str, Any]]:
    """The ``[[key]]`` tables of a keys file (each a dict of key argument -> value).

    Raises:
        InputFormatError: a missing or malformed file, or one without a ``[[key]]`` table.
    """
    data = read_toml(path, "Keys file")
    keys = data.get("key")
    if not isinstance(keys, list) or not keys or not all(isinstance(k, dict) and k for k in keys):
        raise InputFormatError(f"Keys file {path} holds no [[key]] table; write one per size, e.g. "
                               "[[key]] n_rows = 4096 n_cols = 8192 (one pair a line).")
    return keys


@contextlib.contextmanager
def store_env(store: str | None) -> Iterator[None]:
    """Make *store* the default store of the decorators created inside the block."""
    if store is None:
        yield
        return
    before = os.environ.get(STORE_ENV)
    os.environ[STORE_ENV] = store
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(STORE_ENV, None)
        else:
            os.environ[STORE_ENV] = before


def load_workload(target: str) -> Callable[..., Any]:
    """The function *target* names: ``path/to/file.py:function``.

    Raises:
        AutotuneError: no such file or function, or the file fails to import (its error named).
    """
    path_text, sep, name = target.rpartition(":")
    if not sep or not path_text or not name:
        raise AutotuneError(f"{target!r} names no workload; write FILE.py:FUNCTION, e.g. "
                            "my_kernels.py:workload.")
    path = Path(path_text)
    if not path.is_file():
        raise AutotuneError(f"No workload file {path}; give the path of the Python file that defines {name}.")
    module_name = f"flysearch_workload_{path.stem}"
    spec = importlib.util.spec_from_file_location(module_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(path.resolve().parent))
    sys.modules[module_name] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        raise AutotuneError(f"{path} fails to import: {type(exc).__name__}: {exc}".splitlines()[0]) from None
    finally:
        sys.path.remove(str(path.resolve().parent))
    fn = getattr(module, name, None)
    if not callable(fn):
        found = sorted(n for n, v in vars(module).items() if callable(v) and not n.startswith("_"))
        raise AutotuneError(f"{path} defines no function {name!r}; it defines {', '.join(found) or 'none'}.")
    return fn


def run_workload(workload: Callable[..., Any], keys: list[dict[str, Any]],
                 progress: Callable[[int, int, dict[str, Any]], None] | None = None) -> None:
    """Call ``workload(**key)`` for each key in order (each untuned key of each kernel it calls is
    tuned then); ``progress(done, total, key)`` after each.

    Raises:
        AutotuneError: the workload does not take a key's values.
    """
    for i, key in enumerate(keys, 1):
        try:
            workload(**key)
        except TypeError as exc:
            if "argument" in str(exc) and exc.__traceback__ is not None and exc.__traceback__.tb_next is None:
                raise AutotuneError(f"The workload does not take the key {key}: {exc}.") from None
            raise
        if progress is not None:
            progress(i, len(keys), key)
