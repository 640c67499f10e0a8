"""The configs aiter ships for its Triton bf16 GEMM (``_gemm_a16_w16_kernel``), read as aiter's loader
hands them to the kernel, and their coverage by flysearch's ``aiter_triton_gemm`` space:
``aiter_triton_coverage.py`` reports it, ``amd_triton_resources.py`` compiles them.

:func:`shipped_configs` reads every config aiter ships for this kernel, and :func:`coverage` checks
each against the space's value sets and rules at its own M bucket. ``BLOCK_SIZE_K`` is lowered to
fit one K split as aiter's ``_get_config`` lowers it, by flysearch's one copy of that clamp
(``flysearch.kernels.aiter_triton_launch_constexprs``).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flysearch.errors import FlysearchError
from flysearch.kernels import (
    aiter_triton_launch_constexprs,
    aiter_triton_space,
    import_aiter_module,
    triton_configs_dir,
)
from flysearch.space import Config, Shape, Space, Value, get_arch

__all__ = ["ANY_M", "BOUNDS", "RULE_READS", "ConfigCoverage", "Coverage", "ShippedConfig", "coverage",
           "shipped_configs"]

# Which shape dimensions each rule reads (rules absent here read none); coverage uses it to tell
# which rules a config of aiter's default file (no N, no K) can be checked against.
RULE_READS: dict[str, str] = {
    "tile_m_fits_shape": "M",
    "tile_n_fits_shape": "N",
    "split_k_tile_fits": "K",
    "split_k_needs_idle_cus": "MN",
    "group_m_needs_rows": "M",
}

# NOTE(flysearch): the M bounds of aiter's _get_config (gemm_a16w16.py, amd-aiter 0.1.7): the
# first M_LEQ_{b} present with M <= b serves M, else "any".
BOUNDS: tuple[int, ...] = (4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)
# The M at which an "any" bucket is checked: twice the largest bound.
ANY_M = 16384
_FILE = re.compile(r"(?P<device>[A-Za-z0-9]+)-GEMM-A16W16(?:-N=(?P<N>\d+)-K=(?P<K>\d+))?\.json")
_BUCKET = re.compile(r"M_LEQ_(\d+)")
_REQUIRED = ("BLOCK_SIZE_M", "BLOCK_SIZE_N", "BLOCK_SIZE_K", "GROUP_SIZE_M", "cache_modifier")
# Keys a shipped entry may leave out, with what the kernel then gets and who sets it.
_DEFAULTS: dict[str, tuple[Value, str]] = {
    "NUM_KSPLIT": (1, "aiter _get_config"),
    "num_warps": (4, "triton HIPOptions"),
    "num_stages": (2, "triton HIPOptions"),
    "waves_per_eu": (0, "triton HIPOptions"),
    "matrix_instr_nonkdim": (0, "triton HIPOptions"),
    "kpack": (1, "triton HIPOptions"),
}


@dataclass(frozen=True)
class ShippedConfig:
    """One entry of one of aiter's config files for this kernel.

    Attributes:
        arch: ``"gfx942"`` (aiter's ``MI300X`` files) or ``"gfx950"`` (``MI350X``).
        file: The file's name.
        bucket: The entry's key: ``M_LEQ_{b}``, ``any``, or a key aiter never reads.
        m_range: ``(lo, hi)``: aiter serves ``lo < M <= hi`` with it (``hi`` ``None`` for
            ``any``); ``None`` for a key aiter never reads.
        N: N of a per-(N, K) file; ``None`` for the default file (any N and K).
        K: K likewise.
        params: What the kernel gets, as the space's parameters: absent keys filled with their
            defaults (``defaults`` says which), ``cache_modifier`` ``""`` for aiter's ``null``,
            and ``BLOCK_SIZE_K`` lowered as aiter's loader lowers it for this K (only where K is
            known).
        written: The entry as the file writes it.
        defaults: The keys the entry leaves out, with who supplies the value the kernel gets.
    """

    arch: str
    file: str
    bucket: str
    m_range: tuple[int, int | None] | None
    N: int | None
    K: int | None
    params: dict[str, Value]
    written: dict[str, Any] = field(repr=False)
    defaults: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        """``"MI300X-GEMM-A16W16.json:M_LEQ_64"``."""
        return f"{self.file}:{self.bucket}"

    @property
    def eval_M(self) -> int:
        """The M its rules are checked at: the largest M its bucket serves, :data:`ANY_M` for
        ``any``, the number a never-read key names (else ``ANY_M``)."""
        if self.m_range is not None:
            return self.m_range[1] if self.m_range[1] is not None else ANY_M
        number = re.search(r"\d+", self.bucket)
        return int(number.group()) if number else ANY_M


def _archs_by_device() -> dict[str, str]:
    """aiter's own map of its device names to archs (``"MI300X"`` -> ``"gfx942"``)."""
    try:
        arch_info = import_aiter_module("ops.triton.utils._triton.arch_info")
    except ImportError as exc:
        raise FlysearchError(f"aiter's Triton helpers fail to import ({exc}); pip install triton.") from None
    return {device: arch for arch, device in arch_info._ARCH_TO_DEVICE.items()}


def _params(entry: Mapping[str, Any], k: int | None, where: str) -> tuple[dict[str, Value], dict[str, str]]:
    missing = [key for key in _REQUIRED if key not in entry]
    if missing:
        raise FlysearchError(f"{where} lacks {', '.join(missing)}, which the kernel needs; "
                             "check the installed amd-aiter.")
    params: dict[str, Value] = {}
    defaults: dict[str, str] = {}
    for key in (*_REQUIRED, *_DEFAULTS):
        if key in entry:
            params[key] = entry[key]
        else:
            params[key], defaults[key] = _DEFAULTS[key]
    params["cache_modifier"] = entry["cache_modifier"] or ""
    if k is not None:
        params["BLOCK_SIZE_K"] = aiter_triton_launch_constexprs(params, Shape(1, 1, k))["BLOCK_SIZE_K"]
    return params, defaults


def _ranges(keys: Iterable[str]) -> dict[str, tuple[int, int | None]]:
    """The M range aiter serves with each key of one file (keys it never reads are absent)."""
    present = sorted(int(m.group(1)) for key in keys if (m := _BUCKET.fullmatch(key)) and
                     int(m.group(1)) in BOUNDS)
    ranges: dict[str, tuple[int, int | None]] = {}
    lo = 0
    for bound in present:
        ranges[f"M_LEQ_{bound}"] = (lo, bound)
        lo = bound
    ranges["any"] = (lo, None)
    return ranges


def shipped_configs(arch: str | None = None) -> list[ShippedConfig]:
    """Every config aiter ships for ``_gemm_a16_w16_kernel``: each entry of
    ``{dev}-GEMM-A16W16.json`` and ``{dev}-GEMM-A16W16-N={N}-K={K}.json`` in aiter's Triton GEMM
    configs (not the ATOMIC, gated, BATCHED, FUSED or FF files of other kernels), for the devices
    aiter maps to an arch; only *arch*'s when given.

    Raises:
        FlysearchError: aiter (or the triton its helpers import) is not installed, or an entry
            lacks a key the kernel needs.
    """
    folder = triton_configs_dir()
    archs = _archs_by_device()
    out: list[ShippedConfig] = []
    for path in sorted(folder.iterdir()):
        match = _FILE.fullmatch(path.name)
        if match is None or match["device"] not in archs:
            continue
        file_arch = archs[match["device"]]
        if arch is not None and file_arch != arch:
            continue
        n = int(match["N"]) if match["N"] else None
        k = int(match["K"]) if match["K"] else None
        doc = json.loads(path.read_text())
        ranges = _ranges(doc)
        for bucket, entry in doc.items():
            params, defaults = _params(entry, k, f"{path.name}:{bucket}")
            out.append(ShippedConfig(file_arch, path.name, bucket, ranges.get(bucket), n, k, params,
                                     dict(entry), defaults))
    return out


# -- coverage ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConfigCoverage:
    """How one shipped config meets the space.

    Attributes:
        shipped: The config.
        shape: The shape its rules were checked at (``M=eval_M``; for the default file N and K
            are placeholders that no checked rule reads).
        outside: Each parameter whose value lies outside the space's value set, with the value.
        failed: The rules that reject it, in the space's order.
        not_applicable: The rules that read N or K, for a config of the default file.
    """

    shipped: ShippedConfig
    shape: Shape
    outside: dict[str, Value]
    failed: tuple[str, ...]
    not_applicable: tuple[str, ...]

    @property
    def inside(self) -> bool:
        return not self.outside

    @property
    def passes(self) -> bool:
        """Inside the value sets and rejected by no rule it was checked against."""
        return self.inside and not self.failed


@dataclass(frozen=True)
class Coverage:
    """:func:`coverage`'s answer: one :class:`ConfigCoverage` per shipped config."""

    rules: tuple[str, ...]
    results: tuple[ConfigCoverage, ...]

    def misses(self) -> dict[str, int]:
        """Per rule (every rule, in the space's order), how many configs it rejects."""
        return {rule: sum(rule in r.failed for r in self.results) for rule in self.rules}

    def outside_values(self) -> dict[str, int]:
        """Per parameter with a value outside its set, how many configs have one."""
        return dict(Counter(name for r in self.results for name in r.outside))

    def for_arch(self, arch: str) -> Coverage:
        return Coverage(self.rules, tuple(r for r in self.results if r.shipped.arch == arch))


def _outside(space: Space, params: Mapping[str, Value]) -> dict[str, Value]:
    return {p.name: params[p.name] for p in space.params
            if params[p.name] not in p.values or type(params[p.name]) is not type(p.values[0])}


def coverage(
    configs: Iterable[ShippedConfig] | None = None, *, arch: str | None = None, space: Space | None = None
) -> Coverage:
    """Check every shipped config (*configs*, by default :func:`shipped_configs` of *arch*)
    against *space* (by default ``aiter_triton_gemm``): which values fall outside its value sets, and
    which rules reject it at ``Shape(eval_M, N, K)`` on its own arch.

    A config of the default file (no N, no K) is checked only against the rules that read
    neither (:data:`RULE_READS`); the others are *not applicable* to it.
    """
    space = space or aiter_triton_space()
    shipped = list(configs) if configs is not None else shipped_configs(arch)
    results = []
    for s in shipped:
        profile = get_arch(s.arch)
        known = s.N is not None and s.K is not None
        shape = Shape(s.eval_M, s.N if s.N is not None else 1, s.K if s.K is not None else 1)
        skipped = () if known else tuple(c.name for c in space.constraints
                                         if set(RULE_READS.get(c.name, "")) & {"N", "K"})
        config = Config.from_dict(s.params)
        failed = tuple(c.name for c in space.constraints
                       if c.name not in skipped and not c(config, shape, profile))
        results.append(ConfigCoverage(s, shape, _outside(space, s.params), failed, skipped))
    return Coverage(tuple(c.name for c in space.constraints), tuple(results))
