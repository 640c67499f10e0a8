"""Which Triton family a live study compiles and launches (no GPU: the backend is only built)."""

from __future__ import annotations

import importlib.util

import pytest

from flysearch.errors import InputFormatError
from flysearch.space import Config, Shape
from flysearch.study.live._launch import backend_to_serve

pytestmark = pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="needs Triton")


def test_a_live_triton_backend_compiles_and_launches_its_family() -> None:
    config = Config.from_dict(dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, GROUP_M=1, SPLIT_K=8,
                                   num_warps=4, num_stages=3))
    shape = Shape(4, 6144, 4096)
    default = backend_to_serve("triton")
    assert default.kernel == "triton_gemm"
    assert default.compile_payload(config, shape).family == "triton_gemm_splitk"
    fused = backend_to_serve("triton", space="triton_gemm_splitk_fused")
    assert fused.kernel == "triton_gemm_fused"
    assert fused.compile_payload(config, shape).family == "triton_gemm_splitk_fused"
    assert fused.time_payload(config, shape, None).family == "triton_gemm_splitk_fused"


def test_a_live_tma_backend_compiles_for_the_arch_default_devices_sm_count() -> None:
    config = Config.from_dict(dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_stages=4, num_warps=4,
                                   EPILOGUE_SUBTILE=False))
    tma = backend_to_serve("triton", space="triton_gemm_tma")
    assert tma.kernel == "triton_gemm_tma"
    payload = tma.compile_payload(config, Shape(16, 4096, 4096))
    assert (payload.family, payload.spec) == ("triton_gemm_tma", "m=16,n16=1,k16=1,sms=132")


def test_a_registered_space_that_is_no_triton_family_is_refused() -> None:
    """aiter's Triton GEMM space is registered, but the live evaluator cannot compile it: refused
    before any worker starts (it would otherwise compile the split-K kernel under its configs' names)."""
    with pytest.raises(InputFormatError, match="space 'aiter_triton_gemm' is none of them"):
        backend_to_serve("triton", space="aiter_triton_gemm")
