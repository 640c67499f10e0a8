"""The same numbers on every x86-64 machine: one OpenBLAS kernel for the replayed searches.

numpy's OpenBLAS picks its kernels for the CPU it runs on (``SkylakeX`` on an AVX-512 Xeon,
``Zen`` on an EPYC, ``Haswell`` on an AVX2 laptop), and the kernels sum in different orders, so an
eigendecomposition or a Cholesky factor differs in its last bits from one CPU to the next. A sampler
that rounds a continuous proposal to a grid point (CMA-ES's eigendecomposition, a Gaussian
process's Cholesky solve) then now and then proposes another config, and the search diverges from
there: the same seeds gave different compiles-to-1% for CMA-ES, TPE and the fast GP on an AVX-512
Xeon and on an EPYC. Forcing one kernel (``OPENBLAS_CORETYPE``, read when OpenBLAS loads, so only
a fresh process can take it) removes that source: :func:`portable_env` is the environment a spawned
worker needs, :func:`blas_core` the kernel this process runs.

``Haswell`` (AVX2) is the kernel every AVX2 or newer x86-64 CPU can run. On other CPUs (ARM, older
x86) and with another BLAS (MKL, Accelerate) nothing is forced, and results may differ from those of
the machines that run ``Haswell``.

Example:
    >>> portable_env({"OPENBLAS_CORETYPE": "Zen"}, core="SkylakeX")  # the user's choice stands
    {}
    >>> portable_env({}, core="SkylakeX")
    {'OPENBLAS_CORETYPE': 'Haswell'}
    >>> portable_env({}, core="neoversen1")  # not an AVX2 x86-64 kernel: nothing to force
    {}
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator, Mapping

__all__ = ["PORTABLE_CORE", "blas_core", "portable_env", "portable_environment", "runs_portable"]

PORTABLE_CORE = "Haswell"

# OpenBLAS's names of the x86-64 kernels that need AVX2 or more, lowercased: any CPU that picks one
# of them can run the Haswell kernel.
_AVX2_CORES = frozenset({"haswell", "zen", "skylakex", "cooperlake", "sapphirerapids", "excavator"})


@functools.cache
def blas_core() -> str | None:
    """The kernel name numpy's OpenBLAS runs in this process (``None``: numpy uses another BLAS).
    OpenBLAS picks it once, when it loads, so it is looked up once per process."""
    import numpy  # noqa: F401  (loads the BLAS that threadpoolctl inspects)
    from threadpoolctl import threadpool_info

    openblas = [lib for lib in threadpool_info() if lib.get("internal_api") == "openblas"]
    # numpy's own copy first: another package may load an OpenBLAS of its own.
    openblas.sort(key=lambda lib: "numpy" not in str(lib.get("filepath", "")))
    return openblas[0].get("architecture") if openblas else None


def portable_env(environ: Mapping[str, str] | None = None, *, core: str | None = None) -> dict[str, str]:
    """The variables a fresh process needs to run the portable kernel: ``OPENBLAS_CORETYPE`` when
    this CPU runs an AVX2 x86-64 kernel (*core*, default :func:`blas_core`) and *environ* (default
    ``os.environ``) does not set it already; else nothing."""
    environ = os.environ if environ is None else environ
    if "OPENBLAS_CORETYPE" in environ:
        return {}
    core = blas_core() if core is None else core
    if core is None or core.lower() not in _AVX2_CORES:
        return {}
    return {"OPENBLAS_CORETYPE": PORTABLE_CORE}


def runs_portable() -> bool:
    """Whether this process already computes as a fresh one with :func:`portable_env` would."""
    core = blas_core()
    return core is None or core.lower() == PORTABLE_CORE.lower() or not portable_env(core=core)


@contextlib.contextmanager
def portable_environment() -> Iterator[dict[str, str]]:
    """Set :func:`portable_env` in ``os.environ`` for the processes started inside the block (a
    ``spawn`` pool), and restore the environment after it."""
    extra = portable_env()
    saved = {k: os.environ.get(k) for k in extra}
    os.environ.update(extra)
    try:
        yield extra
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
