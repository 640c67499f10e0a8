"""The registry of kernel families' spaces, by name, and of the Triton families a race compiles.

A kernel family registers a factory for its :class:`~flysearch.space.Space` under the space's name;
tables and studies store that name, so the analytic constraints come back with the space. A Triton
family that ``flysearch race`` and the live evaluator can compile and launch also registers its
:class:`TritonFamily` under its space's name (the race's ``family``): how to compile a config
without a GPU, which binary a shape needs, and, for a family whose kernel takes more than pointers,
how to launch the binary on torch tensors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flysearch.errors import FlysearchError
from flysearch.space import Space

if TYPE_CHECKING:
    from flysearch.space import ArchProfile, Shape

__all__ = [
    "TritonFamily",
    "get_space",
    "register_space",
    "register_triton_family",
    "space_names",
    "table_kernel",
    "triton_compiler",
    "triton_families",
    "triton_family",
]

_FACTORIES: dict[str, Callable[[], Space]] = {}
_TABLE_KERNELS: dict[str, str] = {}
_TRITON_FAMILIES: dict[str, TritonFamily] = {}


@dataclass(frozen=True)
class TritonFamily:
    """What ``flysearch race`` and the live evaluator need of a Triton GEMM family.

    Attributes:
        name: The family's space name (``triton_gemm_tma``).
        compile_config: ``compile_config(config, spec, arch)``: Triton's ``CompiledKernel`` of
            *config* for specialization *spec* on *arch* (``"sm_90"``), with no GPU, so that CPU
            worker processes fill the Triton cache the GPU timer then loads the binary from.
        spec_key: ``spec_key(shape, sms)``: which binary *shape* needs on a GPU with *sms* SMs
            (binaries are shared by every shape of one spec).
        bind: ``bind(kernel, a, w, c, config, spec)``: a zero-argument launch of the loaded binary
            *kernel* computing ``c = a @ w.T`` on torch tensors; the timer captures it in a CUDA
            graph per rotating input set and replays that. ``None``: the timer launches the binary
            itself with the split-K signature (``a, w, c, ws, ..., M, N, K, tiles``).
        reduces_in_launch: For a family without ``bind``: the kernel reduces its K splits inside
            its one launch (per-tile arrival counters after ``M, N, K``, a workspace that every
            launch leaves zero), so the timer zeroes the workspace once and launches it alone;
            ``False``: the split-K family's launch, with the workspace zeroed before and copied
            into ``C`` after each launch that splits K.
        min_sm: The least NVIDIA compute capability the kernel runs on (90 for TMA); 0: any GPU
            Triton targets.
        needs: What the kernel needs of the GPU, for the error when it lacks it (``"TMA"``).
    """

    name: str
    compile_config: Callable[..., Any]
    spec_key: Callable[[Shape, int], str]
    bind: Callable[..., Callable[[], None]] | None = None
    reduces_in_launch: bool = False
    min_sm: int = 0
    needs: str = ""

    def check_arch(self, arch: ArchProfile) -> None:
        """Raise :class:`FlysearchError` when the family's kernel cannot run on *arch*."""
        if not self.min_sm:
            return
        sm = int(arch.name.removeprefix("sm_")) if arch.name.startswith("sm_") else 0
        if sm < self.min_sm:
            raise FlysearchError(
                f"{self.name} needs {self.needs or 'a newer GPU'} (sm_{self.min_sm} or newer) and "
                f"{arch.name} has none; race it on an H100 or H200, or race triton_gemm_splitk here."
            )


def register_space(name: str, factory: Callable[[], Space], *, table_kernel: str | None = None) -> None:
    """Register *factory* as the builder of the space called *name*; *table_kernel* is the kernel
    name the family's tables carry (the first part of a raced table's name), *name* by default."""
    _FACTORIES[name] = factory
    _TABLE_KERNELS[name] = table_kernel or name


def table_kernel(name: str) -> str:
    """The kernel name the tables of registered space *name* carry (``triton_gemm`` for
    ``triton_gemm_splitk``)."""
    _load_builtin()
    return _TABLE_KERNELS.get(name, name)


def space_names() -> list[str]:
    _load_builtin()
    return sorted(_FACTORIES)


def get_space(name: str) -> Space:
    """Build the registered space *name*; an unknown name is a :class:`FlysearchError`."""
    _load_builtin()
    try:
        return _FACTORIES[name]()
    except KeyError:
        known = ", ".join(sorted(_FACTORIES)) or "none"
        raise FlysearchError(f"Unknown space {name!r}; registered spaces: {known}.") from None


def register_triton_family(family: TritonFamily) -> None:
    """Register Triton *family* under its space's name: ``flysearch race run --space NAME`` and the
    live evaluator then compile and launch it."""
    _TRITON_FAMILIES[family.name] = family


def triton_families() -> list[str]:
    """The Triton families ``flysearch race`` compiles and launches itself."""
    _load_builtin()
    return sorted(_TRITON_FAMILIES)


def triton_family(name: str) -> TritonFamily:
    """Triton family *name*; an unknown name is a :class:`FlysearchError`."""
    _load_builtin()
    try:
        return _TRITON_FAMILIES[name]
    except KeyError:
        known = ", ".join(sorted(_TRITON_FAMILIES))
        raise FlysearchError(
            f"{name!r} is no Triton family that flysearch races; those are: {known}."
        ) from None


def triton_compiler(name: str) -> Callable[..., Any]:
    """The compile function of Triton family *name*; an unknown name is a :class:`FlysearchError`."""
    return triton_family(name).compile_config


def _load_builtin() -> None:
    """Import the built-in kernel families so that they register their spaces."""
    import importlib

    for module in _BUILTIN:
        importlib.import_module(module)


_BUILTIN: tuple[str, ...] = (
    "flysearch.kernels._triton_gemm",
    "flysearch.kernels._aiter_hgemm",
    "flysearch.kernels._flydsl_gemm",
    "flysearch.kernels._aiter_triton",
    "flysearch.kernels._aiter_triton_cuda",
    "flysearch.kernels._triton_tma",
    "flysearch.kernels._triton_fused",
)
