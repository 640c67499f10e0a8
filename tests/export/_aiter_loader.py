"""aiter's own loader of its Triton GEMM configs, run on a folder that ``flysearch export
aiter-triton`` wrote: the oracle of the export's round-trip tests (the config aiter's
``_get_config(M, N, K)`` returns is the config exported)."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from flysearch.errors import FlysearchError
from flysearch.export._aiter_triton import _aiter, _archs, _devices, _file_name

_MODULE = "ops.triton._triton_kernels.gemm_a16w16"
_LOCK = threading.Lock()  # load_with_aiter patches module state of aiter's: one call at a time


def aiter_device(arch: str) -> str:
    """aiter's device name for *arch* (``"gfx942"`` -> ``"MI300X"``), read from aiter itself.

    Raises:
        FlysearchError: aiter has no Triton configs for *arch*, or is not installed.
    """
    devices = _devices()
    if arch not in devices:
        raise FlysearchError(f"aiter's Triton GEMM has configs for {_archs(devices)} only, not {arch!r}; "
                             "give one of those archs.")
    return devices[arch]


@contextlib.contextmanager
def _configs_path(configs_dir: Path, device: str, n: int, k: int, shipped_root: str) -> Iterator[str]:
    """The folder aiter should read: *configs_dir* when it has aiter's default file, else a temporary
    copy of its file for (N, K) beside the default file aiter ships (aiter always opens that first)."""
    gemm = configs_dir / "gemm"
    if (gemm / f"{device}-GEMM-A16W16.json").is_file():
        yield str(configs_dir)
        return
    with tempfile.TemporaryDirectory(prefix="flysearch-aiter-") as tmp:
        (Path(tmp) / "gemm").mkdir()
        names = [f"{device}-GEMM-A16W16.json", _file_name(device, n, k)]
        shutil.copyfile(Path(shipped_root) / "gemm" / names[0], Path(tmp) / "gemm" / names[0])
        if (gemm / names[1]).is_file():
            shutil.copyfile(gemm / names[1], Path(tmp) / "gemm" / names[1])
        yield tmp


def load_with_aiter(configs_dir: str | Path, arch: str, M: int, N: int, K: int) -> dict[str, Any]:
    """The config aiter's own ``_get_config(M, N, K)`` returns when its configs folder is
    *configs_dir* (which holds ``gemm/``, as :func:`write_aiter_triton`'s *out*) on *arch*.

    aiter's module state is patched for the call and restored after: ``AITER_TRITON_CONFIGS_PATH``,
    ``arch_info.get_arch`` (so aiter maps the arch to its device itself), and ``_get_config``'s
    lru cache and its ``_config_dict`` of loaded files. Where *configs_dir* has no default file
    (``{dev}-GEMM-A16W16.json``, which aiter opens first), aiter's shipped one is used. Calls are
    serialized; another thread calling aiter's ``_get_config`` meanwhile would see the patch.

    Raises:
        FlysearchError: aiter or triton is missing, or *arch* is not gfx942 or gfx950.
    """
    from unittest import mock

    device = aiter_device(arch)
    module = _aiter(_MODULE)
    get_config = module._get_config
    with _LOCK, _configs_path(Path(configs_dir), device, N, K, module.AITER_TRITON_CONFIGS_PATH) as path:
        had = "_config_dict" in vars(get_config)
        held = vars(get_config).pop("_config_dict", None)
        get_config.cache_clear()
        try:
            with (mock.patch.object(module, "AITER_TRITON_CONFIGS_PATH", path),
                  mock.patch.object(module.arch_info, "get_arch", lambda: arch)):
                return dict(get_config(M, N, K))
        finally:
            get_config.cache_clear()
            vars(get_config).pop("_config_dict", None)
            if had:
                get_config._config_dict = held
