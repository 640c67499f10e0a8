"""Resources of a compiled AMD kernel, read from a FlyDSL or a Triton compile, and occupancy.

A FlyDSL compile leaves, per kernel, a metadata dictionary in the compiled module's IR::

    #gpu.kernel_metadata<"gemm_0", ..., metadata = {agpr_count = 0 : i64,
        group_segment_fixed_size = 16384 : i64, private_segment_fixed_size = 0 : i64,
        sgpr_count = 29 : i64, sgpr_spill_count = 0 : i64, vgpr_count = 15 : i64,
        vgpr_spill_count = 0 : i64, wavefront_size = 64 : i64, max_flat_workgroup_size = 256 ...}>

A Triton compile for AMD (``CompiledKernel.asm["amdgcn"]``) carries the same fields as the code
object's YAML notes, between ``.amdgpu_metadata`` and ``.end_amdgpu_metadata``::

    amdhsa.kernels:
      - .agpr_count:     0
        .group_segment_fixed_size: 0
        .max_flat_workgroup_size: 256
        .private_segment_fixed_size: 580
        .sgpr_count:     42
        .vgpr_count:     256
        .vgpr_spill_count: 144 ...

where ``.vgpr_count`` is the unified total ``align(vgpr, 4) + agpr`` once AGPRs are used, so the
architected VGPRs come from the assembler's ``.set <kernel>.num_vgpr, N``, and a Triton kernel's
LDS is dynamic (``group_segment_fixed_size`` stays 0): its bytes are ``CompiledKernel.metadata.shared``.
LLVM's own estimate is left as a comment, ``; Occupancy: 2`` (:func:`reported_occupancy`).

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

__all__ = ["KernelResources", "amd_verdict", "occupancy", "parse_amdgcn_metadata", "parse_kernel_metadata",
           "reported_occupancy", "resource_extra", "resource_reject_reason"]

_SGPRS_PER_SIMD = 800
_METADATA = re.compile(r'kernel_metadata<"(?P<name>[^"]+)".*?metadata = \{(?P<body>[^}]*)\}', re.S)
_FIELD = re.compile(r"(\w+) = (-?\d+) : i\d+")
_NOTES = re.compile(r"^\s*\.amdgpu_metadata\s*$(?P<body>.*?)^\s*\.end_amdgpu_metadata", re.S | re.M)
_NOTE_KEY = re.compile(r"^(?P<indent> *)(?P<item>- )?\.(?P<key>[\w.]+):[ \t]*(?P<value>\S*)")
_NUM_VGPR = re.compile(r"^\s*\.set\s+(?P<name>\S+)\.num_vgpr,\s*(?P<value>\d+)\s*$", re.M)
_OCCUPANCY = re.compile(r"^\s*;\s*Occupancy:\s*(\d+)\s*$", re.M)


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


def _kernel_notes(asm: str) -> list[dict[str, str]]:
    """The scalar fields of each entry of ``amdhsa.kernels`` in *asm*'s YAML notes (nested lists
    such as ``.args`` are skipped)."""
    match = _NOTES.search(asm)
    if match is None:
        return []
    kernels: list[dict[str, str]] = []
    in_kernels, column = False, -1  # column: where a kernel's own keys start
    for line in match.group("body").splitlines():
        if not line.startswith(" "):  # a top-level key: amdhsa.kernels, amdhsa.target, ...
            in_kernels, column = line.startswith("amdhsa.kernels:"), -1
            continue
        found = _NOTE_KEY.match(line)
        if not in_kernels or found is None:
            continue
        key_column = len(found.group("indent")) + (2 if found.group("item") else 0)
        column = key_column if column < 0 else column
        if found.group("item") and key_column == column:
            kernels.append({})
        if key_column == column and kernels and found.group("value"):
            kernels[-1][found.group("key")] = found.group("value")
    return kernels


def _note_int(note: dict[str, str], key: str, default: int = 0) -> int:
    value = note.get(key, "")
    return int(value) if value.lstrip("-").isdigit() else default


def parse_amdgcn_metadata(asm: str, dynamic_lds_bytes: int = 0) -> list[KernelResources]:
    """Every kernel's resources in AMDGPU assembly *asm* (Triton's ``asm["amdgcn"]``), read from
    its YAML notes (see the module docstring); *dynamic_lds_bytes* (Triton's
    ``metadata.shared``) is added to the static LDS. Empty when *asm* has no notes."""
    arch_vgprs = {m.group("name"): int(m.group("value")) for m in _NUM_VGPR.finditer(asm)}
    out = []
    for note in _kernel_notes(asm):
        name, agpr = note.get("name", ""), _note_int(note, "agpr_count")
        out.append(KernelResources(
            kernel=name,
            vgpr=arch_vgprs.get(name, _note_int(note, "vgpr_count") - agpr),
            agpr=agpr,
            sgpr=_note_int(note, "sgpr_count"),
            lds_bytes=_note_int(note, "group_segment_fixed_size") + dynamic_lds_bytes,
            scratch_bytes=_note_int(note, "private_segment_fixed_size"),
            vgpr_spills=_note_int(note, "vgpr_spill_count"),
            sgpr_spills=_note_int(note, "sgpr_spill_count"),
            wave_size=_note_int(note, "wavefront_size", 64),
            max_threads=_note_int(note, "max_flat_workgroup_size"),
        ))
    return out


def reported_occupancy(asm: str) -> int | None:
    """LLVM's own occupancy estimate (waves per SIMD) from *asm*'s ``; Occupancy:`` comment, or
    ``None``; it knows registers and static LDS but not the dynamic LDS that Triton launches with."""
    match = _OCCUPANCY.search(asm)
    return int(match.group(1)) if match else None


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


def amd_verdict(resources: list[KernelResources], arch: ArchProfile) -> str | None:
    """Why a config compiled for an AMD *arch* must never be timed or chosen: ``"spills"``,
    ``"lds_over_limit"``, ``"occupancy_zero"`` (no wave fits on a SIMD), or ``None``."""
    reason = resource_reject_reason(resources, arch)
    if reason is None and any(occupancy(r, arch) == 0 for r in resources):
        reason = "occupancy_zero"
    return reason


def resource_extra(res: KernelResources, arch: ArchProfile) -> dict[str, Any]:
    """A kernel's resources as a table row's ``extra``: :class:`KernelResources`' fields, the total
    ``spills`` and the :func:`occupancy` estimate on *arch*."""
    return {**res.as_dict(), "spills": res.spills, "occupancy": occupancy(res, arch)}
