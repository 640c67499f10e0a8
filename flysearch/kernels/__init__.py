"""Kernel families: each registers its space by name; flysearch's own Triton and FlyDSL GEMMs,
aiter's FlyDSL HGEMM space, its kernel-name codec and how its constraints cut it, and the port of
configs to ``flydsl.Config``.
"""

from __future__ import annotations

from flysearch.kernels._aiter_cut import RegimeCut, format_cuts, shape_cut, shape_free_survivors, space_cuts
from flysearch.kernels._aiter_hgemm import SHAPE_FREE_CONSTRAINTS, SPACE_NAME, aiter_hgemm_space
from flysearch.kernels._aiter_names import build_kernel_name, parse_kernel_name
from flysearch.kernels._flydsl_config import (
    ConfigMappingError,
    FlydslConfigSpec,
    check_reaches_kernel,
    to_flydsl_config,
)
from flysearch.kernels._registry import get_space, register_space, space_names, table_kernel
from flysearch.kernels._triton_gemm import TILE_PARAMS, compile_config, spec_key

__all__ = [
    "SHAPE_FREE_CONSTRAINTS",
    "SPACE_NAME",
    "TILE_PARAMS",
    "ConfigMappingError",
    "FlydslConfigSpec",
    "RegimeCut",
    "aiter_hgemm_space",
    "build_kernel_name",
    "check_reaches_kernel",
    "compile_config",
    "format_cuts",
    "get_space",
    "parse_kernel_name",
    "register_space",
    "shape_cut",
    "shape_free_survivors",
    "space_cuts",
    "space_names",
    "spec_key",
    "table_kernel",
    "to_flydsl_config",
]
