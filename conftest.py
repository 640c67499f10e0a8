"""Collection rules for the doctests of the package (``--doctest-modules`` over ``flysearch``)."""

from __future__ import annotations

import importlib.util
import os

# Importing the Triton kernel's source needs Triton (present on GPU machines, not on CI's CPU).
collect_ignore = [] if importlib.util.find_spec("triton") else ["flysearch/kernels/_triton_gemm_jit.py"]

# A pytest-xdist worker starts with COLUMNS=80 in its environment, which a plain run has not: the
# commands' output would be laid out for 80 columns (see flysearch/cli/_console.py).
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ.pop("COLUMNS", None)
