"""Kernel families: each registers its space by name; flysearch's own Triton and FlyDSL GEMMs,
aiter's FlyDSL HGEMM space and its kernel-name codec, aiter's Triton
GEMM space (and the tile constexprs its launch passes, and the source Triton compiles of one launch),
aiter's Triton GEMM as a Triton family raced on NVIDIA, the
launcher of the TMA family, the split-K family's ``@triton.jit`` kernel (to compile it
for another target), and the port of configs to ``flydsl.Config``.
"""

from __future__ import annotations

from flysearch._lazy import lazy_names
from flysearch.kernels._aiter_hgemm import SPACE_NAME, aiter_hgemm_space
from flysearch.kernels._aiter_names import build_kernel_name, parse_kernel_name
from flysearch.kernels._aiter_package import (
    DISTRIBUTION as AITER_DISTRIBUTION,
)
from flysearch.kernels._aiter_package import (
    aiter_root,
    aiter_version,
    import_aiter_module,
    triton_configs_dir,
)
from flysearch.kernels._aiter_triton import SPACE_NAME as AITER_TRITON_SPACE
from flysearch.kernels._aiter_triton import launch_constexprs as aiter_triton_launch_constexprs
from flysearch.kernels._aiter_triton import lds_bytes as aiter_triton_lds_bytes
from flysearch.kernels._aiter_triton import make_space as aiter_triton_space
from flysearch.kernels._aiter_triton import register_demand as aiter_triton_register_demand
from flysearch.kernels._aiter_triton import vgpr_budget as aiter_triton_vgpr_budget
from flysearch.kernels._aiter_triton_cuda import SPACE_NAME as AITER_TRITON_CUDA_SPACE
from flysearch.kernels._aiter_triton_source import aiter_kernel as aiter_triton_kernel
from flysearch.kernels._aiter_triton_source import bound_source as triton_bound_source
from flysearch.kernels._aiter_triton_source import kernel_source as aiter_triton_source
from flysearch.kernels._flydsl_config import (
    ConfigMappingError,
    FlydslConfigSpec,
    check_reaches_kernel,
    to_flydsl_config,
)
from flysearch.kernels._registry import (
    TritonFamily,
    get_space,
    register_space,
    register_triton_family,
    space_names,
    table_kernel,
    triton_compiler,
    triton_families,
    triton_family,
)
from flysearch.kernels._triton_gemm import TILE_PARAMS, compile_config, spec_key
from flysearch.kernels._triton_tma import compiled_resources
from flysearch.kernels._triton_tma import gemm_launcher as tma_gemm_launcher

__all__ = [
    "AITER_DISTRIBUTION",
    "AITER_TRITON_CUDA_SPACE",
    "AITER_TRITON_SPACE",
    "SPACE_NAME",
    "TILE_PARAMS",
    "ConfigMappingError",
    "FlydslConfigSpec",
    "TritonFamily",
    "aiter_hgemm_space",
    "aiter_root",
    "aiter_triton_kernel",
    "aiter_triton_launch_constexprs",
    "aiter_triton_lds_bytes",
    "aiter_triton_register_demand",
    "aiter_triton_source",
    "aiter_triton_space",
    "aiter_triton_vgpr_budget",
    "aiter_version",
    "build_kernel_name",
    "check_reaches_kernel",
    "compile_config",
    "compiled_resources",
    "get_space",
    "import_aiter_module",
    "parse_kernel_name",
    "register_space",
    "register_triton_family",
    "space_names",
    "spec_key",
    "splitk_gemm_kernel",
    "table_kernel",
    "tma_gemm_launcher",
    "to_flydsl_config",
    "triton_bound_source",
    "triton_compiler",
    "triton_configs_dir",
    "triton_families",
    "triton_family",
]

# Imported on first use: the kernel's module needs Triton, which flysearch.kernels does not.
__getattr__ = lazy_names(__name__, {"splitk_gemm_kernel": "_triton_gemm_jit"})
