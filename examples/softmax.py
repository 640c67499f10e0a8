"""Fused row softmax of a bf16 matrix (attention scores, vocabulary logits), tuned by flysearch.

``y[r, :] = softmax(x[r, :])`` in fp32, stored in the input's dtype. Each program normalizes
``ROWS_PER_PROGRAM`` consecutive rows one after another, in a loop that ``num_stages`` pipelines.
With ``ONE_PASS`` a row fits in one ``BLOCK_N`` tile: it is read once and stays in registers.
Without it a row is streamed twice in ``BLOCK_N`` chunks: the first pass keeps a running max and a
running sum of exponentials rescaled to that max (the online softmax), the second writes ``y``.

The space: BLOCK_N (128 .. 32768), ROWS_PER_PROGRAM (1 .. 16), ONE_PASS, num_warps (1 .. 32) and
num_stages (1 .. 4), 2,160 configs; the constraints below keep 580 to 760 of them per key on sm_90.
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
def softmax_kernel(
    x_ptr, y_ptr, x_row_stride, y_row_stride, n_rows, n_cols,
    BLOCK_N: tl.constexpr, ROWS_PER_PROGRAM: tl.constexpr, ONE_PASS: tl.constexpr,
):
    cols = tl.arange(0, BLOCK_N)
    for r in tl.range(0, ROWS_PER_PROGRAM):
        row = tl.program_id(0) * ROWS_PER_PROGRAM + r
        row_exists = row < n_rows  # the last program's rows may run past n_rows: masked, not skipped
        x_row = x_ptr + row.to(tl.int64) * x_row_stride
        y_row = y_ptr + row.to(tl.int64) * y_row_stride
        if ONE_PASS:
            inside = (cols < n_cols) & row_exists
            x = tl.load(x_row + cols, mask=inside, other=-float("inf")).to(tl.float32)
            e = tl.exp(x - tl.max(x, axis=0))
            tl.store(y_row + cols, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=inside)
        else:
            # Pass 1: running max m and sum s of exp(x - m); every chunk of a row holds a column, so m
            # is finite after the first chunk and the rescale exp(m_old - m) never sees inf - inf.
            m = -float("inf")
            s = 0.0
            for start in range(0, n_cols, BLOCK_N):
                inside = (start + cols < n_cols) & row_exists
                x = tl.load(x_row + start + cols, mask=inside, other=-float("inf")).to(tl.float32)
                m_new = tl.maximum(m, tl.max(x, axis=0))
                s = s * tl.exp(m - m_new) + tl.sum(tl.exp(x - m_new), axis=0)
                m = m_new
            # Pass 2: normalize and store.
            scale = 1.0 / s
            for start in range(0, n_cols, BLOCK_N):
                inside = (start + cols < n_cols) & row_exists
                x = tl.load(x_row + start + cols, mask=inside, other=-float("inf")).to(tl.float32)
                y = tl.exp(x - m) * scale
                tl.store(y_row + start + cols, y.to(y_ptr.dtype.element_ty), mask=inside)


kernel_fn = softmax_kernel

KEY = ["n_rows", "n_cols"]

# Rows x columns: attention scores (batch x heads x queries, keys) and the logits of a prefill
# over a vocabulary (tokens, vocab: Llama 2, GPT-2, Phi-3, Llama 3, Qwen 2, Gemma).
KEYS: list[dict[str, int]] = [
    {"n_rows": 16384, "n_cols": 4096},
    {"n_rows": 32768, "n_cols": 8192},
    {"n_rows": 8192, "n_cols": 16384},
    {"n_rows": 4096, "n_cols": 32000},
    {"n_rows": 4096, "n_cols": 50257},
    {"n_rows": 3000, "n_cols": 32064},
    {"n_rows": 4096, "n_cols": 128256},
    {"n_rows": 2304, "n_cols": 151936},
    {"n_rows": 2304, "n_cols": 256000},
]

OUTPUTS = ["y_ptr"]
RTOL = 2e-2  # two bf16 roundings (an ulp is 2**-7 of the value at worst)
ATOL = 1e-5

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
    threads = (arch.wave_size if arch is not None else _WARP) * int(c["num_warps"])
    return int(c["BLOCK_N"]) <= min(_VALUES_PER_THREAD * threads, _VALUES_PER_BLOCK)


def _threads_have_work(c: Config, key: Mapping[str, int] | None, arch: ArchProfile | None) -> bool:
    threads = (arch.wave_size if arch is not None else _WARP) * int(c["num_warps"])
    return int(c["BLOCK_N"]) >= threads


def _programs_fill_sms(c: Config, key: Mapping[str, int] | None, arch: ArchProfile | None) -> bool:
    if key is None or c["ROWS_PER_PROGRAM"] == 1:
        return True
    sms = arch.compute_units if arch is not None else _SMS
    return triton.cdiv(key["n_rows"], int(c["ROWS_PER_PROGRAM"])) >= sms


SPACE = Space(
    "example_softmax",
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
                   "BLOCK_N <= 64 values a thread and <= 32768 a block"),
        Constraint("threads_have_work", _threads_have_work, "BLOCK_N >= threads (no idle lanes)"),
        Constraint("programs_fill_sms", _programs_fill_sms,
                   "ROWS_PER_PROGRAM > 1 only while the grid still covers every SM"),
    ],
)


def make_args(key: Mapping[str, int], device: str) -> dict[str, Any]:
    """Logits-like bf16 inputs (seeded) and an output of the same shape."""
    gen = None if device == "meta" else torch.Generator(device).manual_seed(0)
    n_rows, n_cols = key["n_rows"], key["n_cols"]
    x = 3.0 * torch.randn(n_rows, n_cols, device=device, generator=gen)
    y = torch.empty(n_rows, n_cols, device=device, dtype=torch.bfloat16)
    x = x.to(torch.bfloat16)
    return {"x_ptr": x, "y_ptr": y, "x_row_stride": x.stride(0), "y_row_stride": y.stride(0),
            "n_rows": n_rows, "n_cols": n_cols}


def grid(args: Mapping[str, Any]) -> Callable[[Mapping[str, Any]], tuple[int, ...]]:
    return lambda meta: (triton.cdiv(args["n_rows"], meta["ROWS_PER_PROGRAM"]),)


def launch(kernel_like: Any, args: Mapping[str, Any], **meta: Any) -> None:
    """``kernel_like[grid](**args)``; *meta* (a config's values) when *kernel_like* is the raw kernel."""
    kernel_like[grid(args)](**args, **meta)


def reference(**args: Any) -> torch.Tensor:
    x = args["x_ptr"]
    return torch.softmax(x.float(), dim=-1).to(x.dtype)


kernel = flysearch.autotune(space=SPACE, key=KEY, reference=reference, outputs=OUTPUTS, rtol=RTOL,
                            atol=ATOL)(kernel_fn)


def workload(n_rows: int, n_cols: int) -> None:
    """Launch the tuned kernel once on CUDA inputs of one key (``flysearch tune run
    examples/softmax.py:workload --keys examples/softmax_keys.toml`` calls it for each key)."""
    launch(kernel, make_args({"n_rows": n_rows, "n_cols": n_cols}, "cuda"))
