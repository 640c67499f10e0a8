"""Layer norm forward of a bf16 activation matrix (tokens x hidden), tuned by flysearch.

``y = (x - mean) * rstd * weight + bias`` per row, with the row's ``mean`` and ``rstd =
1 / sqrt(var + eps)`` stored in fp32 for the backward pass. Each program normalizes
``ROWS_PER_PROGRAM`` consecutive rows, in a loop that ``num_stages`` pipelines. With ``ONE_PASS``
a row fits in one ``BLOCK_N`` tile: it is read once, and ``weight`` and ``bias`` are loaded once
per program. Without it a row is read twice in ``BLOCK_N`` chunks: the first pass merges each
chunk's mean and sum of squared deviations into the row's (Chan's parallel variance, stable where
the mean is large against the spread), the second normalizes.

The space: BLOCK_N (128 .. 32768), ROWS_PER_PROGRAM (1 .. 16), ONE_PASS, num_warps (1 .. 32) and
num_stages (1 .. 4), 2,160 configs; the constraints below keep 528 to 660 of them per key on sm_90.
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
def layernorm_kernel(
    x_ptr, w_ptr, b_ptr, y_ptr, mean_ptr, rstd_ptr, x_row_stride, y_row_stride, n_rows, n_cols, eps,
    BLOCK_N: tl.constexpr, ROWS_PER_PROGRAM: tl.constexpr, ONE_PASS: tl.constexpr,
):
    cols = tl.arange(0, BLOCK_N)
    if ONE_PASS:
        w = tl.load(w_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
        b = tl.load(b_ptr + cols, mask=cols < n_cols, other=0.0).to(tl.float32)
    for r in tl.range(0, ROWS_PER_PROGRAM):
        row = tl.program_id(0) * ROWS_PER_PROGRAM + r
        row_exists = row < n_rows  # the last program's rows may run past n_rows: masked, not skipped
        x_row = x_ptr + row.to(tl.int64) * x_row_stride
        y_row = y_ptr + row.to(tl.int64) * y_row_stride
        if ONE_PASS:
            inside = (cols < n_cols) & row_exists
            x = tl.load(x_row + cols, mask=inside, other=0.0).to(tl.float32)
            mean = tl.sum(x, axis=0) / n_cols
            centered = tl.where(inside, x - mean, 0.0)
            rstd = 1.0 / tl.sqrt(tl.sum(centered * centered, axis=0) / n_cols + eps)
            tl.store(y_row + cols, (centered * rstd * w + b).to(y_ptr.dtype.element_ty), mask=inside)
        else:
            # Pass 1: merge (count, mean, m2) of each chunk into the row's.
            mean = 0.0
            m2 = 0.0
            for start in range(0, n_cols, BLOCK_N):
                inside = (start + cols < n_cols) & row_exists
                x = tl.load(x_row + start + cols, mask=inside, other=0.0).to(tl.float32)
                seen = start * 1.0
                count = tl.minimum(n_cols - start, BLOCK_N) * 1.0
                chunk_mean = tl.sum(x, axis=0) / count
                chunk_m2 = tl.sum(tl.where(inside, x - chunk_mean, 0.0) * (x - chunk_mean), axis=0)
                delta = chunk_mean - mean
                mean += delta * count / (seen + count)
                m2 += chunk_m2 + delta * delta * seen * count / (seen + count)
            rstd = 1.0 / tl.sqrt(m2 / n_cols + eps)
            # Pass 2: normalize, scale and shift.
            for start in range(0, n_cols, BLOCK_N):
                inside = (start + cols < n_cols) & row_exists
                x = tl.load(x_row + start + cols, mask=inside, other=0.0).to(tl.float32)
                w = tl.load(w_ptr + start + cols, mask=inside, other=0.0).to(tl.float32)
                b = tl.load(b_ptr + start + cols, mask=inside, other=0.0).to(tl.float32)
                y = (x - mean) * rstd * w + b
                tl.store(y_row + start + cols, y.to(y_ptr.dtype.element_ty), mask=inside)
        tl.store(mean_ptr + row, mean, mask=row_exists)
        tl.store(rstd_ptr + row, rstd, mask=row_exists)


kernel_fn = layernorm_kernel

KEY = ["n_rows", "n_cols"]

# Tokens x hidden size of a prefill batch: Phi-2, Llama 2 7B, 13B and 70B, Mistral Large, GPT-3
# 175B, Llama 3 405B, and a ragged token count.
KEYS: list[dict[str, int]] = [
    {"n_rows": 8192, "n_cols": 2560},
    {"n_rows": 16384, "n_cols": 4096},
    {"n_rows": 8192, "n_cols": 5120},
    {"n_rows": 4096, "n_cols": 8192},
    {"n_rows": 4096, "n_cols": 12288},
    {"n_rows": 2048, "n_cols": 16384},
    {"n_rows": 4096, "n_cols": 6144},
    {"n_rows": 3000, "n_cols": 4096},
    {"n_rows": 32768, "n_cols": 3072},
]

OUTPUTS = ["y_ptr", "mean_ptr", "rstd_ptr"]
RTOL = 1e-2  # y is bf16; mean and rstd are fp32 and agree far closer
ATOL = 1e-2
EPS = 1e-5

# NOTE(examples): H100 numbers for when no arch profile is given (flysearch's sm_90 profile has them).
_SMS = 132
_WARP = 32
# A thread keeps at most 64 of a tile's fp32 values, a block at most half of the 64K-register file.
_VALUES_PER_THREAD = 64
_VALUES_PER_BLOCK = 32768


def _one_pass_holds_row(c: Config, key: Mapping[str, int] | None, arch: ArchProfile | None) -> bool:
    # One pass: the smallest power-of-two tile that holds the row; chunks: a tile shorter than the row.
    if key is None:
        return True
    if c["ONE_PASS"]:
        return int(c["BLOCK_N"]) == triton.next_power_of_2(key["n_cols"])
    return int(c["BLOCK_N"]) < key["n_cols"]


def _tile_fits_registers(c: Config, key: Mapping[str, int] | None, arch: ArchProfile | None) -> bool:
    # A one-pass tile lives beside its weight and bias: three values per column.
    threads = (arch.wave_size if arch is not None else _WARP) * int(c["num_warps"])
    values = int(c["BLOCK_N"]) * (3 if c["ONE_PASS"] else 1)
    return values <= min(_VALUES_PER_THREAD * threads, _VALUES_PER_BLOCK)


def _threads_have_work(c: Config, key: Mapping[str, int] | None, arch: ArchProfile | None) -> bool:
    threads = (arch.wave_size if arch is not None else _WARP) * int(c["num_warps"])
    return int(c["BLOCK_N"]) >= threads


def _programs_fill_sms(c: Config, key: Mapping[str, int] | None, arch: ArchProfile | None) -> bool:
    if key is None or c["ROWS_PER_PROGRAM"] == 1:
        return True
    sms = arch.compute_units if arch is not None else _SMS
    return triton.cdiv(key["n_rows"], int(c["ROWS_PER_PROGRAM"])) >= sms


SPACE = Space(
    "example_layernorm",
    [
        Param("BLOCK_N", tuple(2**i for i in range(7, 16))),
        Param("ROWS_PER_PROGRAM", (1, 2, 4, 8, 16)),
        Param("ONE_PASS", (False, True)),
        Param("num_warps", (1, 2, 4, 8, 16, 32)),
        Param("num_stages", (1, 2, 3, 4)),
    ],
    [
        Constraint("one_pass_holds_row", _one_pass_holds_row,
                   "ONE_PASS: BLOCK_N = next_pow2(n_cols); otherwise BLOCK_N < n_cols"),
        Constraint("tile_fits_registers", _tile_fits_registers,
                   "fp32 values of the tile (x3 with weight and bias) <= 64 a thread and <= 32768 a block"),
        Constraint("threads_have_work", _threads_have_work, "BLOCK_N >= threads (no idle lanes)"),
        Constraint("programs_fill_sms", _programs_fill_sms,
                   "ROWS_PER_PROGRAM > 1 only while the grid still covers every SM"),
    ],
)


def make_args(key: Mapping[str, int], device: str) -> dict[str, Any]:
    """Activations with a nonzero mean, weight near 1 and bias near 0, all bf16 (seeded)."""
    gen = None if device == "meta" else torch.Generator(device).manual_seed(0)
    n_rows, n_cols = key["n_rows"], key["n_cols"]
    x = (2.0 * torch.randn(n_rows, n_cols, device=device, generator=gen) + 0.5).to(torch.bfloat16)
    w = (1.0 + 0.1 * torch.randn(n_cols, device=device, generator=gen)).to(torch.bfloat16)
    b = (0.1 * torch.randn(n_cols, device=device, generator=gen)).to(torch.bfloat16)
    y = torch.empty_like(x)
    mean = torch.empty(n_rows, device=device, dtype=torch.float32)
    rstd = torch.empty(n_rows, device=device, dtype=torch.float32)
    return {"x_ptr": x, "w_ptr": w, "b_ptr": b, "y_ptr": y, "mean_ptr": mean, "rstd_ptr": rstd,
            "x_row_stride": x.stride(0), "y_row_stride": y.stride(0), "n_rows": n_rows, "n_cols": n_cols,
            "eps": EPS}


def grid(args: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], tuple[int, ...]]:
    return lambda meta: (triton.cdiv(args["n_rows"], meta["ROWS_PER_PROGRAM"]),)


def launch(kernel_like: Any, args: Mapping[str, Any], **meta: Any) -> None:
    """``kernel_like[grid](**args)``; *meta* (a config's values) when *kernel_like* is the raw kernel."""
    kernel_like[grid(args)](**args, **meta)


def reference(**args: Any) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    x = args["x_ptr"].float()
    mean = x.mean(dim=1)
    rstd = torch.rsqrt(x.var(dim=1, unbiased=False) + args["eps"])
    y = torch.nn.functional.layer_norm(x, x.shape[1:], args["w_ptr"].float(), args["b_ptr"].float(),
                                       args["eps"])
    return y.to(args["y_ptr"].dtype), mean, rstd


kernel = flysearch.autotune(space=SPACE, key=KEY, reference=reference, outputs=OUTPUTS, rtol=RTOL,
                            atol=ATOL)(kernel_fn)


def workload(n_rows: int, n_cols: int) -> None:
    """Launch the tuned kernel once on CUDA inputs of one key (``flysearch tune run
    examples/layernorm.py:workload --keys examples/layernorm_keys.toml`` calls it for each key)."""
    launch(kernel, make_args({"n_rows": n_rows, "n_cols": n_cols}, "cuda"))
