"""Resources of a compiled AMD kernel, read from its ``#gpu.kernel_metadata``, and occupancy.

A FlyDSL compile leaves, per kernel, a metadata dictionary in the compiled module's IR::

    #gpu.kernel_metadata<"gemm_0", ..., metadata = {agpr_count = 0 : i64,
        group_segment_fixed_size = 16384 : i64, private_segment_fixed_size = 0 : i64,
        sgpr_count = 29 : i64, sgpr_spill_count = 0 : i64, vgpr_count = 15 : i64,
        vgpr_spill_count = 0 : i64, wavefront_size = 64 : i64, max_flat_workgroup_size = 256 ...}>

Occupancy (waves per SIMD) on CDNA (gfx90a/gfx942/gfx950) is the least of three limits:

* registers: VGPRs and AGPRs share one file of ``arch.vgprs_per_simd_lane`` (512) registers per lane;
  a wave allocates ``align(vgpr, 4) + agpr`` (just ``vgpr`` when it uses no AGPR) in granules of 8;
* LDS: ``arch.lds_bytes // lds_per_workgroup`` workgroups fit on a CU, each of
  ``ceil(threads / wave_size)`` waves spread over the CU's ``arch.simds_per_cu`` SIMDs (at least one
  wave per SIMD when one workgroup fits at all);
* SGPRs: 800 per SIMD on gfx9, allocated in granules of 16;

capped at ``arch.max_waves_per_simd``. This is the CDNA3 ISA guide's occupancy arithmetic; it is
an estimate (it ignores, for instance, the barrier-slot limit of 16 workgroups per CU).
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from flysearch.space import ArchProfile

__all__ = ["KernelResources", "occupancy", "parse_kernel_metadata", "resource_reject_reason"]

_SGPRS_PER_SIMD = 800
_METADATA = re.compile(r'kernel_metadata<"(?P<name>[^"]+)".*?metadata = \{(?P<body>[^}]*)\}', re.S)
_FIELD = re.compile(r"(\w+) = (-?\d+) : i\d+")


@dataclass(frozen=True)
class KernelResources:
    """Per-kernel resources of a compiled artifact."""

    kernel: str
    vgpr: int
    agpr: int
    sgpr: int
    lds_bytes: int
    scratch_bytes: int
    vgpr_spills: int
    sgpr_spills: int
    wave_size: int
    max_threads: int

    @property
    def spills(self) -> int:
        return self.vgpr_spills + self.sgpr_spills

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def parse_kernel_metadata(ir_text: str) -> list[KernelResources]:
    """Every kernel's resources found in *ir_text* (empty when there is no metadata)."""
    out = []
    for match in _METADATA.finditer(ir_text):
        fields = {k: int(v) for k, v in _FIELD.findall(match.group("body"))}
        out.append(
            KernelResources(
                kernel=match.group("name"),
                vgpr=fields.get("vgpr_count", 0),
                agpr=fields.get("agpr_count", 0),
                sgpr=fields.get("sgpr_count", 0),
                lds_bytes=fields.get("group_segment_fixed_size", 0),
                scratch_bytes=fields.get("private_segment_fixed_size", 0),
                vgpr_spills=fields.get("vgpr_spill_count", 0),
                sgpr_spills=fields.get("sgpr_spill_count", 0),
                wave_size=fields.get("wavefront_size", 64),
                max_threads=fields.get("max_flat_workgroup_size", 0),
            )
        )
    return out


def _align(value: int, granule: int) -> int:
    return -(-value // granule) * granule


def occupancy(res: KernelResources, arch: ArchProfile, threads: int | None = None) -> int:
    """Waves per SIMD that can be resident (see the module docstring for the arithmetic).

    Args:
        res: The kernel's resources.
        arch: The target (AMD; registers and LDS come from its profile).
        threads: Threads per workgroup (defaults to the kernel's ``max_flat_workgroup_size``).
    """
    cap = arch.max_waves_per_simd
    regs = _align(res.vgpr, 4) + res.agpr if res.agpr else res.vgpr
    by_vgpr = arch.vgprs_per_simd_lane // max(_align(max(regs, 1), 8), 8)
    by_sgpr = _SGPRS_PER_SIMD // max(_align(max(res.sgpr, 1), 16), 16)
    by_lds = cap
    threads = threads or res.max_threads or arch.wave_size
    if res.lds_bytes > 0:
        groups = arch.lds_bytes // res.lds_bytes
        waves_per_group = math.ceil(threads / arch.wave_size)
        # A workgroup runs on one CU; fewer waves than SIMDs still occupy one slot of each used SIMD.
        by_lds = max(1, (groups * waves_per_group) // arch.simds_per_cu) if groups else 0
    return max(0, min(cap, by_vgpr, by_sgpr, by_lds))


def resource_reject_reason(resources: list[KernelResources], arch: ArchProfile) -> str | None:
    """Why a compiled config must not be timed: ``"spills"``, ``"lds_over_limit"``, or ``None``."""
    for res in resources:
        if res.spills > 0:
            return "spills"
        if res.lds_bytes > arch.lds_bytes:
            return "lds_over_limit"
    return None
