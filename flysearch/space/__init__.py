"""What is searched, and for which target: parameters and constraints (:class:`Space`), GEMM
shapes and their regimes, and arch profiles (the one place for each target's numbers).
"""

from __future__ import annotations

from flysearch.space._arch import ArchProfile, Device, arch_of_device, device_label, get_arch, table_profile
from flysearch.space._shapes import DTYPE_BYTES, REGIMES, Shape, load_corpus, parse_shape
from flysearch.space._space import (
    ENCODINGS,
    Config,
    Constraint,
    Encoding,
    Param,
    Space,
    Value,
    keep_recent,
    params_from_json,
)

__all__ = [
    "DTYPE_BYTES",
    "ENCODINGS",
    "REGIMES",
    "ArchProfile",
    "Config",
    "Constraint",
    "Device",
    "Encoding",
    "Param",
    "Shape",
    "Space",
    "Value",
    "arch_of_device",
    "device_label",
    "get_arch",
    "keep_recent",
    "load_corpus",
    "params_from_json",
    "parse_shape",
    "table_profile",
]
