"""``nvmmh``: NVIDIA's nvMatmulHeuristics top 8 for the shape, mapped onto a GEMM family's parameters.

nvMatmulHeuristics (``pip install nvidia-matmul-heuristics``, NVIDIA's licence) predicts good GEMM
kernel configurations from the problem and a predefined GPU with an analytic model: no GPU is needed,
it runs on the CPU. flysearch asks it for the Triton target (``PERF_MODEL_BASED_AUTO_TUNING``,
layout ``NT`` row-major: ``y = x W^T`` with ``x`` and ``W`` row-major), precision from the dtype
(bf16 ``BSB``, fp16 ``HSH``, fp32 ``SSS``) and the context's GPU (:data:`GPUS`), and maps each of its
top 8 onto the family's parameters:

=============  =========================================================
parameter      nvMatmulHeuristics
=============  =========================================================
``BLOCK_M``    CTA tile M
``BLOCK_N``    CTA tile N
``BLOCK_K``    CTA tile K
``SPLIT_K``    split-K factor
``num_warps``  CTA tile / warp tile (M x N x K)
``num_stages`` pipeline stages
``GROUP_M``    CTA swizzle factor
=============  =========================================================

Each value is snapped to the nearest value of the parameter's domain (on a log2 scale, the smaller
on a tie; :func:`~flysearch.samplers._zeroshot.nearest_feasible`): stages above the family's largest
(nvMatmulHeuristics often gives 8) become its largest, a split-K of 3 or 5 becomes 4. What does
not map: the warp tile's shape (only the warp count does), the instruction tile, the thread-block
cluster, the CTA order (rasterization), and any parameter of the family not in the table above (it
is free in the next step). The mapped config is then replaced by the feasible config nearest to it
(fewest value steps over the mapped parameters, ties by key), so that a tile the shape's
constraints reject still yields a config to try; configs the 8 map to twice are tried once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flysearch.errors import FlysearchError, UnknownSamplerError
from flysearch.samplers._zeroshot import nearest_feasible

if TYPE_CHECKING:
    from flysearch.samplers._context import SearchContext

__all__ = ["GPUS", "NVMMH_TOP", "map_config", "nvmmh_order"]

NVMMH_TOP = 8
"""Configs asked of nvMatmulHeuristics."""
GPUS: dict[str, str] = {"H100": "H100_SXM", "H200": "H200_SXM", "H20": "H20_SXM", "A100": "A100_SXM_80GB",
                        "B200": "B200", "L40S": "L40S", "L4": "L4", "A10": "A10_PCIE"}
"""flysearch's device names -> nvMatmulHeuristics' predefined GPUs."""
_PRECISION = {"bf16": "BSB", "fp16": "HSH", "f16": "HSH", "fp32": "SSS", "f32": "SSS"}


def map_config(kernel: Any) -> dict[str, int]:
    """An nvMatmulHeuristics ``GemmConfig`` as flysearch's GEMM parameters (before snapping)."""
    warps = (kernel.cta_tile_m // kernel.warp_tile_m) * (kernel.cta_tile_n // kernel.warp_tile_n) * max(
        kernel.cta_tile_k // kernel.warp_tile_k, 1)
    return {"BLOCK_M": kernel.cta_tile_m, "BLOCK_N": kernel.cta_tile_n, "BLOCK_K": kernel.cta_tile_k,
            "SPLIT_K": kernel.split_k, "num_warps": warps, "num_stages": kernel.stages,
            "GROUP_M": kernel.swizzle_factor}


def nvmmh_order(context: SearchContext, top: int = NVMMH_TOP) -> list[str]:
    """The keys of the feasible configs nearest nvMatmulHeuristics' *top* configs, in its order.

    Raises:
        FlysearchError: nvMatmulHeuristics is not installed.
        UnknownSamplerError: the search is no GEMM (no M, N, K), or its GPU or dtype is not one
            nvMatmulHeuristics models.
    """
    try:
        import nvMatmulHeuristics as nv
    except ImportError:
        raise FlysearchError("The nvmmh sampler needs NVIDIA's nvMatmulHeuristics, which is not installed; "
                             "pip install nvidia-matmul-heuristics, or choose another sampler.") from None
    problem = context.problem or {}
    device = context.arch.devices[0].name if context.arch is not None and context.arch.devices else ""
    gpu = GPUS.get(device)
    precision = _PRECISION.get(str(problem.get("dtype", "bf16")))
    if not all(isinstance(problem.get(d), int) for d in "MNK") or gpu is None or precision is None:
        raise UnknownSamplerError(
            f"The nvmmh sampler picks GEMM configs for the GPUs {', '.join(GPUS)} and dtypes "
            f"{', '.join(_PRECISION)}; this search ({context.space.name} on {device or 'no GPU'}, "
            f"{problem}) is none of them, so choose another sampler.")
    heuristics = nv.NvMatmulHeuristicsInterfaceEx(
        backend=nv.NvMatmulHeuristicsTarget.TRITON,
        flags=nv.NvMatmulHeuristicsFlags.PERF_MODEL_BASED_AUTO_TUNING, load_discovery_implicitly=True,
        gpu=getattr(nv.NvMatmulHeuristicsNvidiaGpu, gpu))
    query = heuristics.makeNvMatmulHeuristicsProblem(problem["M"], problem["N"], problem["K"],
                                                     nv.NvMatmulHeuristicsMatmulLayout.NT_ROW_MAJOR)
    picks = [map_config(c["kernel"]) for c in heuristics.get(query, top, precision=precision)]
    return nearest_feasible(context, picks)

