"""Best configs exported by flysearch on 2026-12-02.

Provenance:
    command: python -m flysearch export triton --db h200.db --prefix triton_gemm/H200 --out lab/benchmarks/results/best_h200.py --json lab/benchmarks/results/best_h200.json
    commit: b1c7407 (the commit that adds this version; the run's own commit not recorded)
    hardware: an export from the race tables (measured on NVIDIA H200); the export itself needs no GPU
    versions: tables measured with driver 580.159.04, CUDA 13.0, torch 2.11.0+cu130, Triton 3.6.0, Python 3.12.3; export not recorded
    date: 2026-12-02
"""

import triton

CONFIGS = [
    # triton_gemm/H200/1000x576x7168: 0.0305 ms
    # triton_gemm/H200/512x1536x7168: 0.03135 ms
    triton.Config(
        {'BLOCK_K': 64, 'BLOCK_M': 64, 'BLOCK_N': 128, 'GROUP_M': 8, 'SPLIT_K': 4},
        num_warps=4, num_stages=3,
    ),
    # triton_gemm/H200/1024x14336x4096: 0.1969 ms
    # triton_gemm/H200/1024x6144x4096: 0.08551 ms
    # triton_gemm/H200/1536x4096x4096: 0.08585 ms
    # triton_gemm/H200/512x4096x14336: 0.09569 ms
    triton.Config(
        {'BLOCK_K': 64, 'BLOCK_M': 128, 'BLOCK_N': 128, 'GROUP_M': 8, 'SPLIT_K': 1},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/128x10240x8192: 0.05862 ms
    # triton_gemm/H200/96x14336x4096: 0.0369 ms
    triton.Config(
        {'BLOCK_K': 128, 'BLOCK_M': 128, 'BLOCK_N': 128, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=8, num_stages=3,
    ),
    # triton_gemm/H200/128x8192x28672: 0.1322 ms
    triton.Config(
        {'BLOCK_K': 128, 'BLOCK_M': 64, 'BLOCK_N': 128, 'GROUP_M': 8, 'SPLIT_K': 1},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/16x4096x14336: 0.03487 ms
    triton.Config(
        {'BLOCK_K': 256, 'BLOCK_M': 16, 'BLOCK_N': 32, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/1x6144x4096: 0.01931 ms
    # triton_gemm/H200/8x8192x8192: 0.03549 ms
    triton.Config(
        {'BLOCK_K': 256, 'BLOCK_M': 16, 'BLOCK_N': 64, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/200x8192x8192: 0.05969 ms
    triton.Config(
        {'BLOCK_K': 128, 'BLOCK_M': 128, 'BLOCK_N': 128, 'GROUP_M': 8, 'SPLIT_K': 1},
        num_warps=8, num_stages=3,
    ),
    # triton_gemm/H200/2048x4096x14336: 0.3621 ms
    # triton_gemm/H200/4096x4096x4096: 0.2166 ms
    # triton_gemm/H200/4096x6144x4096: 0.3239 ms
    # triton_gemm/H200/512x14336x4096: 0.1062 ms
    triton.Config(
        {'BLOCK_K': 64, 'BLOCK_M': 128, 'BLOCK_N': 128, 'GROUP_M': 8, 'SPLIT_K': 1},
        num_warps=4, num_stages=3,
    ),
    # triton_gemm/H200/256x1536x7168: 0.0218 ms
    triton.Config(
        {'BLOCK_K': 64, 'BLOCK_M': 64, 'BLOCK_N': 128, 'GROUP_M': 8, 'SPLIT_K': 8},
        num_warps=4, num_stages=3,
    ),
    # triton_gemm/H200/32x28672x4096: 0.05971 ms
    triton.Config(
        {'BLOCK_K': 128, 'BLOCK_M': 32, 'BLOCK_N': 256, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=4, num_stages=3,
    ),
    # triton_gemm/H200/32x8192x28672: 0.1133 ms
    triton.Config(
        {'BLOCK_K': 256, 'BLOCK_M': 32, 'BLOCK_N': 64, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/4x576x7168: 0.01045 ms
    triton.Config(
        {'BLOCK_K': 128, 'BLOCK_M': 16, 'BLOCK_N': 64, 'GROUP_M': 1, 'SPLIT_K': 16},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/64x10240x8192: 0.04545 ms
    triton.Config(
        {'BLOCK_K': 128, 'BLOCK_M': 64, 'BLOCK_N': 128, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/64x1536x7168: 0.01511 ms
    triton.Config(
        {'BLOCK_K': 128, 'BLOCK_M': 64, 'BLOCK_N': 128, 'GROUP_M': 1, 'SPLIT_K': 8},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/64x28672x4096: 0.06198 ms
    triton.Config(
        {'BLOCK_K': 64, 'BLOCK_M': 64, 'BLOCK_N': 64, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=4, num_stages=3,
    ),
    # triton_gemm/H200/64x4096x14336: 0.03511 ms
    triton.Config(
        {'BLOCK_K': 256, 'BLOCK_M': 64, 'BLOCK_N': 32, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/64x6144x4096: 0.01895 ms
    triton.Config(
        {'BLOCK_K': 128, 'BLOCK_M': 64, 'BLOCK_N': 64, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/768x8192x28672: 0.5372 ms
    triton.Config(
        {'BLOCK_K': 64, 'BLOCK_M': 128, 'BLOCK_N': 256, 'GROUP_M': 8, 'SPLIT_K': 2},
        num_warps=8, num_stages=4,
    ),
]
