"""FlyDSL offline autotune artifacts: the files ``FLYDSL_AUTOTUNE_CONFIG_DIR`` holds.

flydsl 0.5's ``@flydsl.autotune(..., artifact_name=NAME, key=[...])`` looks, before tuning, for
``<dir>/<NAME>-<sha256>.json`` where the digest is over the canonical JSON (sorted keys, no spaces)
of the *identity* ``{"name": NAME, "key": {arg: value}, "device": {"name", "arch",
"compute_units"}}``; the file holds ``{"version": 1, "identity": ..., "config": {...}}``, the config
being ``flydsl.Config.to_dict()`` (the kernel kwargs plus ``num_warps`` / ``waves_per_eu``).

The device name must be what ``torch.cuda.get_device_properties(dev).name`` prints on the target
machine (``"AMD Instinct MI300X"`` is the usual spelling); flydsl compares it verbatim. This was
checked against flydsl's own loader, with the device identity supplied, not on AMD hardware.

Example:
    >>> import tempfile
    >>> from flysearch.kernels import FlydslConfigSpec
    >>> path = write_flydsl_artifact(
    ...     tempfile.mkdtemp(), name="gemm", key={"M": 1, "N": 4096, "K": 4096},
    ...     device=FlydslDevice("AMD Instinct MI300X", "gfx942", 304),
    ...     config=FlydslConfigSpec({"BLOCK_M": 16}, num_warps=4, waves_per_eu=2))
    >>> path.name.startswith("gemm-") and path.suffix == ".json"
    True
"""

from __future__ import annotations

import hashlib
import json
import reprlib
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from flysearch._atomicfile import atomic_write
from flysearch.errors import InputFormatError
from flysearch.kernels import FlydslConfigSpec

__all__ = ["ARTIFACT_VERSION", "FlydslDevice", "artifact_path", "write_flydsl_artifact"]

ARTIFACT_VERSION = 1


@dataclass(frozen=True)
class FlydslDevice:
    """The device identity flydsl records: driver name, gfx arch, compute units."""

    name: str
    arch: str
    compute_units: int


def _canonical(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)
    except ValueError:
        raise InputFormatError(f"{reprlib.repr(value)} holds a NaN or infinite value, which an artifact's "
                               "JSON cannot hold; export finite keys and configs.") from None


def _check_name(name: str) -> None:
    bare = name.replace("-", "").replace("_", "").replace(".", "")
    if not name or len(name) > 64 or not name.isascii() or not bare.isalnum():
        raise InputFormatError(f"Artifact name {name!r} must be 1-64 letters, digits, '.', '_' or '-'.")


def artifact_path(config_dir: str | Path, name: str, key: Mapping[str, Any], device: FlydslDevice) -> Path:
    """Where flydsl looks for the artifact of (*name*, *key*, *device*)."""
    _check_name(name)
    identity = {"name": name, "key": dict(key), "device": asdict(device)}
    digest = hashlib.sha256(_canonical(identity).encode()).hexdigest()
    return Path(config_dir).expanduser().resolve() / f"{name}-{digest}.json"


def _config_body(config: FlydslConfigSpec) -> dict[str, Any]:
    body = dict(config.kwargs)
    for field_name in ("num_warps", "waves_per_eu"):
        value = getattr(config, field_name)
        if value is not None:
            body[field_name] = value
    if json.loads(_canonical(body)) != body:
        raise InputFormatError(f"Config {body} does not keep its types through JSON.")
    return body


def write_flydsl_artifact(
    config_dir: str | Path, *, name: str, key: Mapping[str, Any], device: FlydslDevice,
    config: FlydslConfigSpec,
) -> Path:
    """Write one artifact atomically (:func:`~flysearch._atomicfile.atomic_write`); return its path."""
    path = artifact_path(config_dir, name, key, device)
    payload = {
        "version": ARTIFACT_VERSION,
        "identity": {"name": name, "key": dict(key), "device": asdict(device)},
        "config": _config_body(config),
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_write(path) as fh:
        json.dump(payload, fh, indent=2, sort_keys=True, allow_nan=False)
        fh.write("\n")
    return path
