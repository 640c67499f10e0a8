"""Best configs exported by flysearch on 2026-11-30."""

import triton

CONFIGS = [
    # triton_gemm/H200/1000x576x7168: 0.0307 ms
    triton.Config(
        {'BLOCK_K': 64, 'BLOCK_M': 64, 'BLOCK_N': 128, 'GROUP_M': 1, 'SPLIT_K': 4},
        num_warps=4, num_stages=3,
    ),
    # triton_gemm/H200/1024x14336x4096: 0.1964 ms
    # triton_gemm/H200/1024x6144x4096: 0.08575 ms
    # triton_gemm/H200/1536x4096x4096: 0.08681 ms
    # triton_gemm/H200/200x8192x8192: 0.05959 ms
    # triton_gemm/H200/512x4096x14336: 0.09684 ms
    triton.Config(
        {'BLOCK_K': 64, 'BLOCK_M': 128, 'BLOCK_N': 128, 'GROUP_M': 8, 'SPLIT_K': 1},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/128x10240x8192: 0.05891 ms
    # triton_gemm/H200/96x14336x4096: 0.03662 ms
    triton.Config(
        {'BLOCK_K': 128, 'BLOCK_M': 128, 'BLOCK_N': 128, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=8, num_stages=3,
    ),
    # triton_gemm/H200/128x8192x28672: 0.1325 ms
    triton.Config(
        {'BLOCK_K': 128, 'BLOCK_M': 128, 'BLOCK_N': 128, 'GROUP_M': 1, 'SPLIT_K': 2},
        num_warps=4, num_stages=3,
    ),
    # triton_gemm/H200/16x4096x14336: 0.03485 ms
    triton.Config(
        {'BLOCK_K': 256, 'BLOCK_M': 16, 'BLOCK_N': 32, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/1x6144x4096: 0.01938 ms
    # triton_gemm/H200/8x8192x8192: 0.03538 ms
    triton.Config(
        {'BLOCK_K': 256, 'BLOCK_M': 16, 'BLOCK_N': 64, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/2048x4096x14336: 0.3624 ms
    # triton_gemm/H200/4096x6144x4096: 0.3252 ms
    # triton_gemm/H200/512x14336x4096: 0.1056 ms
    triton.Config(
        {'BLOCK_K': 64, 'BLOCK_M': 128, 'BLOCK_N': 128, 'GROUP_M': 8, 'SPLIT_K': 1},
        num_warps=4, num_stages=3,
    ),
    # triton_gemm/H200/256x1536x7168: 0.02166 ms
    triton.Config(
        {'BLOCK_K': 64, 'BLOCK_M': 64, 'BLOCK_N': 128, 'GROUP_M': 8, 'SPLIT_K': 8},
        num_warps=4, num_stages=3,
    ),
    # triton_gemm/H200/32x28672x4096: 0.06069 ms
    triton.Config(
        {'BLOCK_K': 128, 'BLOCK_M': 32, 'BLOCK_N': 256, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=8, num_stages=3,
    ),
    # triton_gemm/H200/32x8192x28672: 0.1129 ms
    triton.Config(
        {'BLOCK_K': 256, 'BLOCK_M': 32, 'BLOCK_N': 64, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/4096x4096x4096: 0.2162 ms
    triton.Config(
        {'BLOCK_K': 64, 'BLOCK_M': 256, 'BLOCK_N': 128, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=8, num_stages=3,
    ),
    # triton_gemm/H200/4x576x7168: 0.01031 ms
    triton.Config(
        {'BLOCK_K': 128, 'BLOCK_M': 16, 'BLOCK_N': 64, 'GROUP_M': 1, 'SPLIT_K': 16},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/512x1536x7168: 0.03105 ms
    triton.Config(
        {'BLOCK_K': 64, 'BLOCK_M': 64, 'BLOCK_N': 128, 'GROUP_M': 8, 'SPLIT_K': 4},
        num_warps=4, num_stages=3,
    ),
    # triton_gemm/H200/64x10240x8192: 0.04548 ms
    triton.Config(
        {'BLOCK_K': 128, 'BLOCK_M': 64, 'BLOCK_N': 128, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/64x1536x7168: 0.01456 ms
    triton.Config(
        {'BLOCK_K': 128, 'BLOCK_M': 64, 'BLOCK_N': 128, 'GROUP_M': 1, 'SPLIT_K': 8},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/64x28672x4096: 0.06179 ms
    triton.Config(
        {'BLOCK_K': 64, 'BLOCK_M': 64, 'BLOCK_N': 64, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=4, num_stages=3,
    ),
    # triton_gemm/H200/64x4096x14336: 0.03532 ms
    triton.Config(
        {'BLOCK_K': 256, 'BLOCK_M': 64, 'BLOCK_N': 32, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/64x6144x4096: 0.0188 ms
    triton.Config(
        {'BLOCK_K': 128, 'BLOCK_M': 64, 'BLOCK_N': 64, 'GROUP_M': 1, 'SPLIT_K': 1},
        num_warps=4, num_stages=4,
    ),
    # triton_gemm/H200/768x8192x28672: 0.5401 ms
    triton.Config(
        {'BLOCK_K': 64, 'BLOCK_M': 128, 'BLOCK_N': 256, 'GROUP_M': 8, 'SPLIT_K': 2},
        num_warps=8, num_stages=4,
    ),
]
