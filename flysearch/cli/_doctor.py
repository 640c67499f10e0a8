"""``flysearch doctor``: what this machine can run, and the exact fix for what it cannot."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from dataclasses import dataclass

from flysearch.errors import FlysearchError
from flysearch.evaluators import LLD_MIN, amd_compile_fix, find_lld, flydsl_version, lld_fix, smoke_compile

__all__ = ["Check", "run_checks"]


@dataclass(frozen=True)
class Check:
    """One line of the report: what was checked, whether it is fine, what was found or the fix."""

    name: str
    ok: bool
    detail: str


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _torch_device() -> tuple[str | None, str, str | None]:
    """(torch version, what device it sees, ``"rocm"``/``"cuda"`` or ``None`` without a GPU)."""
    version = _version("torch")
    if version is None:
        return None, "torch is not installed", None
    import torch

    if torch.cuda.is_available():
        name = torch.cuda.get_device_name(0)
        kind = "rocm" if getattr(torch.version, "hip", None) else "cuda"
        return version, f"{kind.upper()} device {name} ({torch.cuda.device_count()} visible)", kind
    return version, "CPU only (no CUDA/ROCm device visible)", None


def _triton_amd() -> Check:
    """Whether ``triton-amd-compile`` runs here: its packages, then one tiny real compile per arch
    (in one worker process, about two seconds)."""
    name = "evaluator triton-amd-compile (gfx942, gfx950)"
    fix = amd_compile_fix()
    if fix:
        return Check(name, False, f"cannot run here; {fix}")
    try:
        failed = {arch: why for arch, why in smoke_compile().items() if why}
    except FlysearchError as exc:
        return Check(name, False, f"cannot run here: {exc}")
    if failed:
        reasons = "; ".join(f"{arch}: {why}" for arch, why in failed.items())
        return Check(name, False, f"cannot run here: a tiny compile failed ({reasons})")
    return Check(name, True, "can run here (a tiny aiter GEMM compiled for each arch)")


def run_checks() -> list[Check]:
    """Every check of the doctor report, in order."""
    checks = []
    fly = flydsl_version()
    checks.append(Check("flydsl", fly is not None, fly or "not installed: pip install flydsl"))
    lld = find_lld()
    checks.append(Check(
        "ld.lld", lld is not None,
        f"{lld.path} (LLD {lld.major})" if lld else f"no ld.lld >= {LLD_MIN} found; {lld_fix()}",
    ))
    torch_version, device, gpu = _torch_device()
    checks.append(Check("torch", torch_version is not None, f"{torch_version or 'missing'}: {device}"))
    triton = _version("triton")
    checks.append(Check("triton", triton is not None, triton or "not installed (live Triton needs it)"))
    aiter = _version("amd-aiter")
    checks.append(Check("amd-aiter", aiter is not None, aiter or "not installed: pip install amd-aiter"))
    evaluators = {
        "replay": True,
        "flydsl-compile (gfx942, gfx950)": fly is not None and lld is not None,
        "flydsl (live, AMD GPU)": fly is not None and gpu == "rocm",
        "triton (live, GPU)": triton is not None and gpu is not None,
    }
    for name, ok in evaluators.items():
        checks.append(Check(f"evaluator {name}", ok, "can run here" if ok else "cannot run here"))
        if name.startswith("flydsl-compile"):
            checks.append(_triton_amd())
    return checks
