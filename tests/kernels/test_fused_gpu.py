"""The fused split-K GEMM on a CUDA GPU (skipped without one): every launch of a launcher (200 in a
row) matches the fp32 reference and leaves its workspace and counters zero, also replayed from a
CUDA graph."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")
if not torch.cuda.is_available():
    pytest.skip("needs a CUDA GPU", allow_module_level=True)

from flysearch.kernels._triton_fused import make_space  # noqa: E402
from tests.kernels._fused_launcher import gemm_launcher  # noqa: E402

pytestmark = pytest.mark.gpu

CASES = [
    ((37, 101, 203), dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=32, GROUP_M=1, SPLIT_K=2)),
    ((1, 576, 7168), dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, GROUP_M=1, SPLIT_K=16)),
    ((4, 6144, 4096), dict(BLOCK_M=16, BLOCK_N=64, BLOCK_K=128, GROUP_M=1, SPLIT_K=8)),
    ((200, 96, 4100), dict(BLOCK_M=64, BLOCK_N=64, BLOCK_K=64, GROUP_M=8, SPLIT_K=4)),
    ((512, 1536, 7168), dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, SPLIT_K=4)),
]


@pytest.mark.parametrize("mnk,tiles", CASES, ids=[f"{m}x{n}x{k}-sk{t['SPLIT_K']}" for (m, n, k), t in CASES])
def test_every_launch_is_right_and_leaves_the_workspace_clean(mnk, tiles) -> None:
    m, n, k = mnk
    config = make_space().config(**tiles, num_warps=4, num_stages=3)
    gen = torch.Generator(device="cuda").manual_seed(m * n + k)
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16, generator=gen)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16, generator=gen)
    c = torch.empty(m, n, device="cuda", dtype=torch.bfloat16)
    ref = a.float() @ w.float().t()
    launch = gemm_launcher(a, w, c, config)
    errors = []
    for _ in range(200):
        c.fill_(float("nan"))
        launch()
        errors.append(float(torch.linalg.vector_norm(c.float() - ref) / torch.linalg.vector_norm(ref)))
    assert max(errors) < 5e-3, errors
    assert int(torch.count_nonzero(launch.workspace)) == 0
    assert int(torch.count_nonzero(launch.arrivals)) == 0

    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        launch()
    for _ in range(50):
        c.fill_(float("nan"))
        graph.replay()
        err = float(torch.linalg.vector_norm(c.float() - ref) / torch.linalg.vector_norm(ref))
        assert err < 5e-3
