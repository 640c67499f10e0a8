"""The FlyDSL toolchain on a machine: flydsl itself, ld.lld, and the environment a compile needs.

FlyDSL compiles for AMD targets on any x86-64 machine, GPU or not, given ``COMPILE_ONLY=1``,
``FLYDSL_GPU_ARCH=gfx942|gfx950`` (plain ``ARCH=`` alone silently builds gfx942) and an
``ld.lld`` >= 19 at ``$ROCM_PATH/llvm/bin/ld.lld`` — flydsl looks nowhere else. When ROCM_PATH
lacks one but the system has one (Debian's ``lld-19`` puts ``/usr/bin/ld.lld-19``), flysearch lays
out a private ROCM_PATH under ``~/.cache/flysearch/rocm`` that links to it.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from flysearch.errors import ToolchainError

__all__ = ["LLD_MIN", "Lld", "compile_env", "find_lld", "flydsl_version", "lld_fix"]

LLD_MIN = 19
_PRIVATE_ROOT = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "flysearch" / "rocm"


@dataclass(frozen=True)
class Lld:
    """An ld.lld binary and its major version."""

    path: Path
    major: int


def _lld_major(path: Path) -> int | None:
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"LLD (\d+)", out)
    return int(match.group(1)) if match else None


def _candidates() -> list[Path]:
    found: list[Path] = []
    rocm = os.environ.get("ROCM_PATH")
    if rocm:
        found.append(Path(rocm) / "llvm" / "bin" / "ld.lld")
    for name in ["ld.lld", *(f"ld.lld-{v}" for v in range(30, LLD_MIN - 1, -1))]:
        hit = shutil.which(name)
        if hit:
            found.append(Path(hit))
    found.extend(sorted(Path("/usr/lib").glob("llvm-*/bin/ld.lld"), reverse=True))
    return found


def find_lld() -> Lld | None:
    """The first ld.lld >= :data:`LLD_MIN` found ($ROCM_PATH first, then PATH, then /usr/lib/llvm-*)."""
    for path in _candidates():
        if path.is_file():
            major = _lld_major(path)
            if major is not None and major >= LLD_MIN:
                return Lld(path, major)
    return None


def lld_fix() -> str:
    """The exact commands that make an ld.lld reachable where flydsl looks."""
    return (
        "install Debian's lld-19 (apt-get install lld-19) or newer; flysearch then links "
        f"{_PRIVATE_ROOT}/llvm/bin/ld.lld to it, or set ROCM_PATH to a folder whose llvm/bin/ld.lld "
        "is ld.lld >= 19"
    )


def flydsl_version() -> str | None:
    try:
        return importlib.metadata.version("flydsl")
    except importlib.metadata.PackageNotFoundError:
        return None


def _rocm_root(lld: Lld) -> Path:
    """A ROCM_PATH whose llvm/bin/ld.lld is *lld* (the existing one when it already is)."""
    rocm = os.environ.get("ROCM_PATH")
    if rocm and (Path(rocm) / "llvm" / "bin" / "ld.lld") == lld.path:
        return Path(rocm)
    link = _PRIVATE_ROOT / "llvm" / "bin" / "ld.lld"
    link.parent.mkdir(parents=True, exist_ok=True)
    if not (link.is_symlink() and Path(os.readlink(link)) == lld.path.resolve()):
        tmp = link.with_name(f"ld.lld.{os.getpid()}.tmp")
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(lld.path.resolve())
        os.replace(tmp, link)
    return _PRIVATE_ROOT


def compile_env(arch: str, cache_dir: str | Path, *, compile_only: bool = True) -> dict[str, str]:
    """The environment for a FlyDSL compile of *arch* into *cache_dir*.

    Raises:
        ToolchainError: no ld.lld >= 19 exists on this machine (the message says how to fix it).
    """
    lld = find_lld()
    if lld is None:
        raise ToolchainError(f"No ld.lld >= {LLD_MIN} found; {lld_fix()}.")
    env = dict(os.environ)
    env.update(
        FLYDSL_GPU_ARCH=arch,
        ROCM_PATH=str(_rocm_root(lld)),
        FLYDSL_RUNTIME_CACHE_DIR=str(cache_dir),
    )
    if compile_only:
        env["COMPILE_ONLY"] = "1"
    else:
        env.pop("COMPILE_ONLY", None)
    return env
