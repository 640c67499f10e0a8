"""A half-precision GEMM as a linear layer computes it, tuned by flysearch.

``c = a @ b`` with ``a`` ``[M, K]`` fp16 activations, ``b`` ``[K, N]`` the transpose of an
``nn.Linear`` weight as stored (``[N, K]``, so ``b``'s column stride is 1), an fp32 accumulator and
an fp16 ``c``. Each program computes one ``TILE_M x TILE_N`` tile of ``c``, walking K in ``TILE_K``
steps that ``num_stages`` pipelines. Programs are ordered in bands of ``GROUP`` tile rows, so the
programs running at one time share their ``b`` tiles in L2.

The space: TILE_M (16 .. 256), TILE_N (32 .. 256), TILE_K (32 .. 128), GROUP (1, 8), num_warps
(4, 8) and num_stages (2 .. 4), 720 configs; the constraints below keep 553 to 590 of them per
key on sm_90.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
import triton
import triton.language as tl

import flysearch
from flysearch import ArchProfile, Config, Constraint, Param, Space


@triton.jit
def matmul_kernel(
    a_ptr, b_ptr, c_ptr, M, N, K,
    stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
    TILE_M: tl.constexpr, TILE_N: tl.constexpr, TILE_K: tl.constexpr, GROUP: tl.constexpr,
):
    # Which tile: bands of GROUP tile rows, each band walked column by column.
    tiles_m = tl.cdiv(M, TILE_M)
    tiles_n = tl.cdiv(N, TILE_N)
    pid = tl.program_id(0)
    band = pid // (GROUP * tiles_n)
    band_rows = tl.minimum(tiles_m - band * GROUP, GROUP)
    in_band = pid % (GROUP * tiles_n)
    tile_m = band * GROUP + in_band % band_rows
    tile_n = in_band // band_rows

    rows = tile_m * TILE_M + tl.arange(0, TILE_M)
    cols = tile_n * TILE_N + tl.arange(0, TILE_N)
    ks = tl.arange(0, TILE_K)
    a_tile = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_tile = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn

    acc = tl.zeros((TILE_M, TILE_N), dtype=tl.float32)
    for k in range(0, K, TILE_K):
        a = tl.load(a_tile, mask=(rows[:, None] < M) & (k + ks[None, :] < K), other=0.0)
        b = tl.load(b_tile, mask=(k + ks[:, None] < K) & (cols[None, :] < N), other=0.0)
        acc = tl.dot(a, b, acc)
        a_tile += TILE_K * stride_ak
        b_tile += TILE_K * stride_bk

    c_tile = c_ptr + rows[:, None] * stride_cm + cols[None, :] * stride_cn
    tl.store(c_tile, acc.to(c_ptr.dtype.element_ty), mask=(rows[:, None] < M) & (cols[None, :] < N))


kernel_fn = matmul_kernel

KEY = ["M", "N", "K"]

# Tokens x out_features x in_features of a prefill's linear layers: Llama 2 7B (attention output,
# fused QKV, fused gate/up, down), Llama 2 70B (down), the Llama 3 8B LM head, a ragged token count
# through a 13B projection, and a short prefill through Llama 3 8B's up projection.
KEYS: list[dict[str, int]] = [
    {"M": 4096, "N": 4096, "K": 4096},
    {"M": 4096, "N": 12288, "K": 4096},
    {"M": 4096, "N": 22016, "K": 4096},
    {"M": 4096, "N": 4096, "K": 11008},
    {"M": 2048, "N": 8192, "K": 28672},
    {"M": 1024, "N": 128256, "K": 4096},
    {"M": 3000, "N": 5120, "K": 5120},
    {"M": 1024, "N": 14336, "K": 4096},
]

OUTPUTS = ["c_ptr"]
RTOL = 1e-2  # fp16 output of an fp32 sum over K; entries are O(1)
ATOL = 1e-2

# NOTE(examples): H100 numbers for when no arch profile is given (flysearch's sm_90 profile has them).
_SMEM_PER_BLOCK = 227 * 1024
_WARP = 32
_FP16_BYTES = 2
# 255 registers a thread is the hardware cap; an fp32 accumulator of more than half of that leaves
# too little for the operand fragments and addresses, and spills.
_ACC_REGS = 128


def smem_bytes(c: Config) -> int:
    """Shared memory of the pipelined ``a`` and ``b`` tiles: stages x (TILE_M + TILE_N) x TILE_K x 2."""
    return int(c["num_stages"]) * (int(c["TILE_M"]) + int(c["TILE_N"])) * int(c["TILE_K"]) * _FP16_BYTES


def _smem_fits(c: Config, key: Mapping[str, int] | None, arch: ArchProfile | None) -> bool:
    return smem_bytes(c) <= (arch.max_lds_per_block if arch is not None else _SMEM_PER_BLOCK)


def _acc_fits_registers(c: Config, key: Mapping[str, int] | None, arch: ArchProfile | None) -> bool:
    threads = (arch.wave_size if arch is not None else _WARP) * int(c["num_warps"])
    return int(c["TILE_M"]) * int(c["TILE_N"]) <= _ACC_REGS * threads


def _warps_have_work(c: Config, key: Mapping[str, int] | None, arch: ArchProfile | None) -> bool:
    # At least four accumulator values a thread.
    threads = (arch.wave_size if arch is not None else _WARP) * int(c["num_warps"])
    return int(c["TILE_M"]) * int(c["TILE_N"]) >= 4 * threads


def _tiles_fit_shape(c: Config, key: Mapping[str, int] | None, arch: ArchProfile | None) -> bool:
    # No tile longer than its dimension rounded up to a power of two.
    if key is None:
        return True
    return all(int(c[tile]) <= max(16, triton.next_power_of_2(key[dim]))
               for tile, dim in (("TILE_M", "M"), ("TILE_N", "N"), ("TILE_K", "K")))


def _group_has_rows(c: Config, key: Mapping[str, int] | None, arch: ArchProfile | None) -> bool:
    # A band of more tile rows than there are is the same order as a band of all of them.
    return key is None or int(c["GROUP"]) <= triton.cdiv(key["M"], int(c["TILE_M"]))


SPACE = Space(
    "example_matmul",
    [
        Param("TILE_M", (16, 32, 64, 128, 256)),
        Param("TILE_N", (32, 64, 128, 256)),
        Param("TILE_K", (32, 64, 128)),
        Param("GROUP", (1, 8)),
        Param("num_warps", (4, 8)),
        Param("num_stages", (2, 3, 4)),
    ],
    [
        Constraint("smem_fits", _smem_fits, "num_stages x (TILE_M + TILE_N) x TILE_K x 2 bytes fit a block"),
        Constraint("acc_fits_registers", _acc_fits_registers, "fp32 accumulator <= 128 registers a thread"),
        Constraint("warps_have_work", _warps_have_work, ">= 4 accumulator values a thread"),
        Constraint("tiles_fit_shape", _tiles_fit_shape, "each tile <= next_pow2 of its dimension"),
        Constraint("group_has_rows", _group_has_rows, "GROUP <= tile rows"),
    ],
)


def make_args(key: Mapping[str, int], device: str) -> dict[str, Any]:
    """Unit-variance activations and a weight scaled by 1/sqrt(K), fp16 (seeded)."""
    gen = None if device == "meta" else torch.Generator(device).manual_seed(0)
    m, n, k = key["M"], key["N"], key["K"]
    a = torch.randn(m, k, device=device, generator=gen).to(torch.float16)
    weight = (torch.randn(n, k, device=device, generator=gen) / k**0.5).to(torch.float16)
    b = weight.t()
    c = torch.empty(m, n, device=device, dtype=torch.float16)
    return {"a_ptr": a, "b_ptr": b, "c_ptr": c, "M": m, "N": n, "K": k,
            "stride_am": a.stride(0), "stride_ak": a.stride(1), "stride_bk": b.stride(0),
            "stride_bn": b.stride(1), "stride_cm": c.stride(0), "stride_cn": c.stride(1)}


def grid(args: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], tuple[int, ...]]:
    return lambda meta: (triton.cdiv(args["M"], meta["TILE_M"]) * triton.cdiv(args["N"], meta["TILE_N"]),)


def launch(kernel_like: Any, args: Mapping[str, Any], **meta: Any) -> None:
    """``kernel_like[grid](**args)``; *meta* (a config's values) when *kernel_like* is the raw kernel."""
    kernel_like[grid(args)](**args, **meta)


def reference(**args: Any) -> torch.Tensor:
    return (args["a_ptr"].float() @ args["b_ptr"].float()).to(args["c_ptr"].dtype)


kernel = flysearch.autotune(space=SPACE, key=KEY, reference=reference, outputs=OUTPUTS, rtol=RTOL,
                            atol=ATOL)(kernel_fn)


def workload(M: int, N: int, K: int) -> None:
    """Launch the tuned kernel once on CUDA inputs of one key (``flysearch tune run
    examples/matmul.py:workload --keys examples/matmul_keys.toml`` calls it for each key)."""
    launch(kernel, make_args({"M": M, "N": N, "K": K}, "cuda"))
