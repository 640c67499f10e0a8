"""Collection rules for the doctests of the package (``--doctest-modules`` over ``flysearch``)."""

from __future__ import annotations

import importlib.util

# Importing the Triton kernel's source needs Triton (present on GPU machines, not on CI's CPU).
collect_ignore = [] if importlib.util.find_spec("triton") else ["flysearch/kernels/_triton_gemm_jit.py"]
