"""flysearch's FlyDSL GEMM: its space's constraints (pure Python) and real compile-only builds.

The compiles run only where flydsl and an ld.lld >= 19 are installed; each runs in its own
subprocess (an LLVM error can abort a process) with ``COMPILE_ONLY=1`` for gfx942 or gfx950, and
the resources are read back from the artifact flydsl writes into its cache directory.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from flysearch.kernels import get_space
from flysearch.kernels._flydsl_gemm import FlydslCall, check_shape, flydsl_gemm_space, lds_bytes, num_warps
from flysearch.space import Shape, get_arch

REPO = Path(__file__).resolve().parents[2]
SQUARE = Shape(4096, 4096, 4096)
GFX942, GFX950 = get_arch("gfx942"), get_arch("gfx950")


def cfg(bm: int, bn: int, bk: int, wm: int, wn: int, stages: int) -> dict[str, int]:
    return {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "WARPS_M": wm, "WARPS_N": wn, "STAGES": stages}


# -- the space (pure Python) ----------------------------------------------------------------------


def test_space_is_registered_and_modest() -> None:
    space = get_space("flydsl_gemm")
    assert space.name == "flydsl_gemm"
    assert 200 <= space.size <= 600
    assert [p.name for p in space.params] == ["BLOCK_M", "BLOCK_N", "BLOCK_K", "WARPS_M", "WARPS_N", "STAGES"]


def test_lds_estimate_separates_the_archs() -> None:
    space = flydsl_gemm_space()
    big = space.config(**cfg(128, 128, 64, 2, 2, 4))
    assert lds_bytes(big) == 4 * (128 + 128) * 64 * 2 == 128 * 1024
    assert space.reject_reason(big, SQUARE, GFX942) == "lds_fits"
    assert space.reject_reason(big, SQUARE, GFX950) is None
    exactly_64k = space.config(**cfg(128, 128, 32, 2, 2, 4))
    assert space.reject_reason(exactly_64k, SQUARE, GFX942) is None


def test_feasible_counts_differ_by_arch() -> None:
    space = flydsl_gemm_space()
    on_942 = space.enumerate(SQUARE, GFX942)
    on_950 = space.enumerate(SQUARE, GFX950)
    assert 0 < len(on_942.feasible) < len(on_950.feasible) < space.size
    assert all(lds_bytes(c) <= GFX942.lds_bytes for c in on_942.feasible)
    assert any(lds_bytes(c) > GFX942.lds_bytes for c in on_950.feasible)


@pytest.mark.parametrize(
    ("config", "shape", "reason"),
    [
        (cfg(32, 64, 32, 4, 1, 2), SQUARE, "warp_tile_divides"),  # 4 waves x 16 rows > 32
        (cfg(64, 64, 32, 4, 4, 2), SQUARE, "copy_tile_divides"),  # 256 copy rows a pass > 64
        (cfg(256, 256, 32, 1, 1, 2), SQUARE, "acc_registers_fit"),  # 1024 fp32 a thread
        (cfg(128, 128, 32, 2, 2, 2), Shape(96, 4096, 4096), "tiles_divide_shape"),
        (cfg(128, 128, 32, 2, 2, 2), Shape(128, 128, 4008), "tiles_divide_shape"),
        (cfg(128, 128, 64, 2, 2, 4), Shape(128, 128, 192), "k_tiles_fill_pipeline"),
        (cfg(128, 128, 32, 2, 2, 2), Shape(128, 256, 64), None),
    ],
)
def test_constraints(config: dict[str, int], shape: Shape, reason: str | None) -> None:
    space = flydsl_gemm_space()
    assert space.reject_reason(space.config(**config), shape, GFX950) == reason


def test_thread_limit_uses_the_arch_wave_size() -> None:
    space = flydsl_gemm_space()
    config = space.config(**cfg(256, 256, 64, 4, 4, 2))
    assert num_warps(config) == 16
    assert space.reject_reason(config, None, GFX950) is None  # 16 x 64 = 1024 threads
    wide = dataclasses.replace(GFX950, wave_size=128)
    assert space.reject_reason(config, None, wide) == "threads_fit"


def test_check_shape_rejects_unsupported_shapes() -> None:
    check_shape(256, 256, 128, 128, 128, 32, 4)
    with pytest.raises(ValueError, match="M=96 to be a multiple of BLOCK_M=64"):
        check_shape(96, 256, 128, 64, 128, 32, 2)
    with pytest.raises(ValueError, match="K / BLOCK_K >= STAGES"):
        check_shape(256, 256, 64, 128, 128, 32, 4)


def test_factory_builds_the_call_and_its_reference() -> None:
    torch = pytest.importorskip("torch")
    if importlib.util.find_spec("flydsl") is None:
        pytest.skip("flydsl is not installed: pip install 'flysearch[flydsl]'")
    from flysearch.kernels._flydsl_gemm import gemm_factory

    call = gemm_factory(Shape(64, 128, 96))
    assert isinstance(call, FlydslCall)
    a, b, c, m, n, k = call.args
    assert (m, n, k) == (64, 128, 96) and c is call.output
    assert a.dtype == b.dtype == c.dtype == torch.bfloat16 and tuple(b.shape) == (128, 96)
    ref = call.reference()
    assert ref.dtype == torch.float32
    assert torch.allclose(ref, a.float() @ b.float().t())
    with pytest.raises(ValueError, match="multiples of 32"):
        gemm_factory(Shape(100, 128, 96))
    with pytest.raises(ValueError, match="bf16"):
        gemm_factory(Shape(64, 128, 96, dtype="fp16"))


# -- real compiles (compile-only, no GPU) ---------------------------------------------------------

_COMPILE_SCRIPT = textwrap.dedent(
    """
    import glob, json, os, pickle, re, sys, time
    import flydsl.compiler as flyc
    from flysearch.kernels._flydsl_gemm import gemm_factory
    from flysearch.space import Shape
    shape, config = json.loads(sys.argv[1]), json.loads(sys.argv[2])
    call = gemm_factory(Shape(*shape))
    start = time.perf_counter()
    flyc.compile(call.fn, *call.args, **config)
    seconds = time.perf_counter() - start
    [path] = glob.glob(os.path.join(os.environ["FLYDSL_RUNTIME_CACHE_DIR"], "**", "*.pkl"), recursive=True)
    with open(path, "rb") as f:
        text = pickle.load(f)._ir_text
    meta = re.search(r"kernel_metadata<.*?metadata = \\{([^}]*)\\}", text, re.S).group(1)
    out = {k: int(v) for k, v in re.findall(r"(\\w+) = (-?\\d+) : i64", meta)}
    out["seconds"] = seconds
    print(json.dumps(out))
    """
)

# (arch, config): two per arch, LDS growing with STAGES (gfx942) and BLOCK_K (gfx950), and a
# 128 KiB config that only gfx950's LDS holds.
_BUILDS: dict[str, tuple[str, dict[str, int]]] = {
    "942_s2": ("gfx942", cfg(128, 128, 32, 2, 2, 2)),
    "942_s4": ("gfx942", cfg(128, 128, 32, 2, 2, 4)),
    "950_k32": ("gfx950", cfg(128, 128, 32, 2, 2, 2)),
    "950_k64": ("gfx950", cfg(128, 128, 64, 2, 2, 2)),
    "950_128k": ("gfx950", cfg(128, 128, 64, 2, 2, 4)),
}
_SHAPE = (256, 256, 512)


def _find_lld() -> str | None:
    """An ld.lld of version 19 or newer, or ``None``."""
    rocm = os.environ.get("ROCM_PATH")
    if rocm and os.access(os.path.join(rocm, "llvm", "bin", "ld.lld"), os.X_OK):
        return os.path.join(rocm, "llvm", "bin", "ld.lld")
    for name in ("ld.lld-22", "ld.lld-21", "ld.lld-20", "ld.lld-19", "ld.lld"):
        path = shutil.which(name)
        if path and _lld_major(path) >= 19:
            return path
    return None


def _lld_major(path: str) -> int:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10).stdout
        return int(out.split("LLD ")[1].split(".")[0])
    except (OSError, IndexError, ValueError, subprocess.SubprocessError):
        return 0


def _compile(arch: str, config: dict[str, int], work: Path, rocm: Path) -> dict[str, Any]:
    cache = work / f"cache_{arch}_{'_'.join(str(v) for v in config.values())}"
    env = {
        **os.environ, "COMPILE_ONLY": "1", "FLYDSL_GPU_ARCH": arch, "ROCM_PATH": str(rocm),
        "FLYDSL_RUNTIME_CACHE_DIR": str(cache), "PYTHONPATH": str(REPO),
    }
    proc = subprocess.run(
        [sys.executable, "-c", _COMPILE_SCRIPT, json.dumps(_SHAPE), json.dumps(config)],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, f"{arch} {config} failed:\n{proc.stderr[-3000:]}"
    return json.loads(proc.stdout.strip().splitlines()[-1])


# Under pytest-xdist one worker runs this module, so that its module fixture is set up once.
pytestmark = pytest.mark.xdist_group("kernels/test_flydsl_gemm")


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    if importlib.util.find_spec("flydsl") is None or importlib.util.find_spec("torch") is None:
        pytest.skip("flydsl and torch are not installed: pip install 'flysearch[flydsl]'")
    lld = _find_lld()
    if lld is None:
        pytest.skip("no ld.lld >= 19 found: apt-get install lld-19, or set ROCM_PATH to a ROCm install")
    work = tmp_path_factory.mktemp("flydsl_gemm")
    rocm = work / "rocm"
    (rocm / "llvm" / "bin").mkdir(parents=True)
    (rocm / "llvm" / "bin" / "ld.lld").symlink_to(lld)
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {key: pool.submit(_compile, arch, config, work, rocm) for key, (arch, config) in
                   _BUILDS.items()}
        return {key: future.result() for key, future in futures.items()}


@pytest.mark.slow
@pytest.mark.parametrize("key", sorted(_BUILDS))
def test_compiles_with_resources(builds: dict[str, dict[str, Any]], key: str) -> None:
    arch, config = _BUILDS[key]
    meta = builds[key]
    assert meta["vgpr_count"] > 0
    assert meta["wavefront_size"] == get_arch(arch).wave_size
    assert meta["max_flat_workgroup_size"] == num_warps(config) * 64
    assert meta["group_segment_fixed_size"] == lds_bytes(config)
    assert meta["vgpr_spill_count"] == 0 and meta["private_segment_fixed_size"] == 0


@pytest.mark.slow
def test_lds_grows_with_stages_and_block_k(builds: dict[str, dict[str, Any]]) -> None:
    assert builds["942_s4"]["group_segment_fixed_size"] == 2 * builds["942_s2"]["group_segment_fixed_size"]
    assert builds["950_k64"]["group_segment_fixed_size"] == 2 * builds["950_k32"]["group_segment_fixed_size"]


@pytest.mark.slow
def test_config_over_64k_of_lds_compiles_for_gfx950(builds: dict[str, dict[str, Any]]) -> None:
    _, config = _BUILDS["950_128k"]
    assert lds_bytes(config) > GFX942.lds_bytes
    assert builds["950_128k"]["group_segment_fixed_size"] == 128 * 1024 <= GFX950.lds_bytes
