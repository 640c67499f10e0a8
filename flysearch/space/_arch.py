"""Arch profiles: the one place where flysearch keeps each target's numbers.

An *arch* is an instruction-set target (``gfx942``, ``sm_90``); a *device* is a product built on it
(MI300X, H200) and carries the compute-unit count. Constraints and the cost model read these numbers;
nothing else in flysearch hard-codes them.

Example:
    >>> from flysearch.space import get_arch
    >>> get_arch("gfx942").lds_bytes
    65536
    >>> get_arch("gfx942").device("MI308X").compute_units
    80
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from flysearch.errors import UnknownArchError

__all__ = ["ARCHS", "ArchProfile", "Device", "arch_of_device", "device_label", "get_arch", "get_device",
           "table_profile"]


@dataclass(frozen=True)
class Device:
    """A product on an arch.

    Attributes:
        name: Marketing name as flysearch spells it (``"MI300X"``).
        compute_units: CUs (AMD) or SMs (NVIDIA) the device exposes to one process.
    """

    name: str
    compute_units: int


@dataclass(frozen=True)
class ArchProfile:
    """The numbers of one target that analytic constraints and features use.

    Attributes:
        name: Target name (``"gfx950"``, ``"sm_90"``).
        vendor: ``"amd"`` or ``"nvidia"``.
        wave_size: Threads in a wavefront (AMD) or warp (NVIDIA).
        lds_bytes: LDS (AMD) or shared memory (NVIDIA) of one CU/SM, in bytes.
        max_lds_per_block: The most one workgroup/block may allocate, in bytes.
        simds_per_cu: SIMDs (AMD) or SM sub-partitions (NVIDIA) per CU/SM.
        max_waves_per_simd: Resident waves/warps per SIMD at full occupancy.
        vgprs_per_simd_lane: Vector registers per lane of a SIMD (AMD), or 32-bit registers per
            thread slot of a sub-partition (NVIDIA: 65536 registers / 4 partitions / 32 lanes).
        devices: Products on this arch; the first is the default.
    """

    name: str
    vendor: str
    wave_size: int
    lds_bytes: int
    max_lds_per_block: int
    simds_per_cu: int
    max_waves_per_simd: int
    vgprs_per_simd_lane: int
    devices: tuple[Device, ...]

    @property
    def compute_units(self) -> int:
        """CU/SM count of the default (first) device."""
        return self.devices[0].compute_units

    def device(self, name: str | None = None) -> Device:
        """Return the device called *name* (the default device when ``None``)."""
        if name is None:
            return self.devices[0]
        for dev in self.devices:
            if dev.name.lower() == name.lower():
                return dev
        known = ", ".join(d.name for d in self.devices)
        raise UnknownArchError(f"Device {name!r} is not a {self.name} device; known: {known}.")

    def on_device(self, device_name: str) -> ArchProfile:
        """This profile with the device named in *device_name* first (matched inside longer names,
        as :func:`arch_of_device` does), so :attr:`compute_units` counts that device's CUs/SMs;
        the profile itself when none of its devices matches.

        >>> get_arch("sm_86").on_device("NVIDIA RTX A4000").compute_units
        48
        """
        wanted = device_name.upper()
        match = next((d for d in self.devices if d.name.upper() in wanted), None)
        if match is None or match is self.devices[0]:
            return self
        return replace(self, devices=(match, *(d for d in self.devices if d is not match)))


_KIB = 1024

# NOTE: CU/SM counts and LDS/shared-memory sizes are from the vendors' product pages and ISA
# guides (CDNA3/CDNA4 ISA: 64 KiB LDS on gfx942, 160 KiB on gfx950; Hopper tuning guide: 228 KiB
# shared memory per SM with at most 227 KiB per block; Ampere tuning guide: 164/163 KiB on sm_80,
# 100/99 KiB and 48 resident warps per SM on sm_86). The RDNA profiles (gfx1032, gfx1100) describe
# the workstation GPUs of the benchmark_hub tables: a CU has two SIMD32s, HIP builds wave32 there,
# a workgroup may use 64 KiB of LDS, and a SIMD's register file holds 1024 (RDNA2) or 1536 (RDNA3)
# registers per lane; their resident-wave counts are approximate (only the cost model's features
# use these two profiles).
ARCHS: dict[str, ArchProfile] = {
    "gfx942": ArchProfile(
        name="gfx942", vendor="amd", wave_size=64, lds_bytes=64 * _KIB,
        max_lds_per_block=64 * _KIB, simds_per_cu=4, max_waves_per_simd=8,
        vgprs_per_simd_lane=512,
        devices=(Device("MI300X", 304), Device("MI308X", 80), Device("MI325X", 304)),
    ),
    "gfx950": ArchProfile(
        name="gfx950", vendor="amd", wave_size=64, lds_bytes=160 * _KIB,
        max_lds_per_block=160 * _KIB, simds_per_cu=4, max_waves_per_simd=8,
        vgprs_per_simd_lane=512,
        devices=(Device("MI355X", 256), Device("MI350X", 256)),
    ),
    "gfx90a": ArchProfile(
        name="gfx90a", vendor="amd", wave_size=64, lds_bytes=64 * _KIB,
        max_lds_per_block=64 * _KIB, simds_per_cu=4, max_waves_per_simd=8,
        vgprs_per_simd_lane=512,
        devices=(Device("MI250X", 110), Device("MI210", 104)),
    ),
    "sm_90": ArchProfile(
        name="sm_90", vendor="nvidia", wave_size=32, lds_bytes=228 * _KIB,
        max_lds_per_block=227 * _KIB, simds_per_cu=4, max_waves_per_simd=16,
        vgprs_per_simd_lane=512,
        devices=(Device("H100", 132), Device("H200", 132)),
    ),
    "sm_86": ArchProfile(
        name="sm_86", vendor="nvidia", wave_size=32, lds_bytes=100 * _KIB,
        max_lds_per_block=99 * _KIB, simds_per_cu=4, max_waves_per_simd=12,
        vgprs_per_simd_lane=512,
        devices=(Device("A6000", 84), Device("A4000", 48), Device("RTX 3090", 82)),
    ),
    "gfx1032": ArchProfile(
        name="gfx1032", vendor="amd", wave_size=32, lds_bytes=64 * _KIB,
        max_lds_per_block=64 * _KIB, simds_per_cu=2, max_waves_per_simd=20,
        vgprs_per_simd_lane=1024,
        devices=(Device("W6600", 28),),
    ),
    "gfx1100": ArchProfile(
        name="gfx1100", vendor="amd", wave_size=32, lds_bytes=64 * _KIB,
        max_lds_per_block=64 * _KIB, simds_per_cu=2, max_waves_per_simd=16,
        vgprs_per_simd_lane=1536,
        devices=(Device("W7800", 70), Device("W7900", 96), Device("RX 7900 XTX", 96)),
    ),
    "sm_80": ArchProfile(
        name="sm_80", vendor="nvidia", wave_size=32, lds_bytes=164 * _KIB,
        max_lds_per_block=163 * _KIB, simds_per_cu=4, max_waves_per_simd=16,
        vgprs_per_simd_lane=512,
        devices=(Device("A100", 108),),
    ),
}


def get_arch(name: str) -> ArchProfile:
    """Return the profile of arch *name*, or raise :class:`UnknownArchError` listing the known ones."""
    try:
        return ARCHS[name.strip().lower()]
    except KeyError:
        known = ", ".join(sorted(ARCHS))
        raise UnknownArchError(f"Unknown arch {name!r}; known archs: {known}.") from None


def table_profile(arch_name: str, device_name: str = "") -> ArchProfile | None:
    """The profile a ground-truth table names: ``None`` without an arch, else the arch's profile
    with the table's device first when the profile knows it (see :meth:`ArchProfile.on_device`).

    >>> table_profile("sm_86", "NVIDIA RTX A4000").compute_units, table_profile("") is None
    (48, True)
    """
    if not arch_name:
        return None
    profile = get_arch(arch_name)
    return profile.on_device(device_name) if device_name else profile


def arch_of_device(device_name: str) -> ArchProfile:
    """Return the arch whose devices include *device_name* (matched inside longer names too), with
    that device first, so that its :attr:`~ArchProfile.compute_units` are the device's.

    ``"NVIDIA H200"`` and ``"AMD Instinct MI300X"`` resolve, as torch and rocm-smi print them.

    >>> arch_of_device("AMD Instinct MI308X").name, arch_of_device("AMD Instinct MI308X").compute_units
    ('gfx942', 80)
    """
    wanted = device_name.upper()
    for arch in ARCHS.values():
        for dev in arch.devices:
            if dev.name.upper() in wanted:
                return arch.on_device(device_name)
    known = ", ".join(d.name for a in ARCHS.values() for d in a.devices)
    raise UnknownArchError(f"No arch profile knows device {device_name!r}; known devices: {known}.")


def get_device(device_name: str) -> Device:
    """Return the :class:`Device` called *device_name* (see :func:`arch_of_device` for matching)."""
    arch = arch_of_device(device_name)
    wanted = device_name.upper()
    return next(d for d in arch.devices if d.name.upper() in wanted)


def device_label(device_name: str) -> str:
    """A short device name for table names: the profile's name (``"H200"``) when a profile knows
    the device, else the driver's name with spaces replaced."""
    try:
        return get_device(device_name).name
    except UnknownArchError:
        return str(device_name).replace(" ", "_")
