"""From flysearch configs to ``flydsl.Config``, and ports between Triton and FlyDSL configs.

The two frameworks look alike and differ where it hurts:

============== ========================================= ==========================================
field          Triton ``triton.Config``                  FlyDSL ``flydsl.Config`` (0.5)
============== ========================================= ==========================================
tile sizes     the ``kwargs`` dict (first argument)      ``**kwargs``
num_warps      keyword                                   keyword (injected into the kernel call)
waves_per_eu   only inside the ``kwargs`` dict (AMD);    keyword; a compiler option
               ``waves_per_eu=`` raises TypeError
num_stages     keyword                                   not a field: a kernel constexpr or nothing
maxnreg        keyword                                   raises TypeError: use waves_per_eu
============== ========================================= ==========================================

A search-and-replace port silently changes kernels; :func:`triton_to_flydsl` and
:func:`flydsl_to_triton` move each field where the other framework reads it, and refuse to drop one.

Example:
    >>> port = triton_to_flydsl(TritonConfigSpec({"BLOCK_M": 64, "waves_per_eu": 2}, num_warps=4))
    >>> port.kwargs, port.num_warps, port.waves_per_eu
    ({'BLOCK_M': 64}, 4, 2)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flysearch.errors import FlysearchError
from flysearch.space import Config

__all__ = [
    "ConfigMappingError",
    "FlydslConfigSpec",
    "TritonConfigSpec",
    "check_reaches_kernel",
    "flydsl_to_triton",
    "to_flydsl_config",
    "triton_to_flydsl",
]

class ConfigMappingError(FlysearchError, ValueError):
    """A config that cannot be expressed in the target framework as it stands."""


@dataclass(frozen=True)
class FlydslConfigSpec:
    """What a ``flydsl.Config`` holds, as plain data (constructible without flydsl installed)."""

    kwargs: dict[str, Any] = field(default_factory=dict)
    num_warps: int | None = None
    waves_per_eu: int | None = None

    def build(self) -> Any:
        """The real ``flydsl.Config``."""
        import flydsl

        return flydsl.Config(num_warps=self.num_warps, waves_per_eu=self.waves_per_eu, **self.kwargs)


@dataclass(frozen=True)
class TritonConfigSpec:
    """What a ``triton.Config`` holds, as plain data (constructible without triton installed)."""

    kwargs: dict[str, Any] = field(default_factory=dict)
    num_warps: int = 4
    num_stages: int = 3
    maxnreg: int | None = None

    def build(self) -> Any:
        """The real ``triton.Config``."""
        import triton

        return triton.Config(dict(self.kwargs), num_warps=self.num_warps, num_stages=self.num_stages,
                             maxnreg=self.maxnreg)


def _refuse_maxnreg(names: Any) -> None:
    if "maxnreg" in names:
        raise ConfigMappingError(
            "FlyDSL 0.5 has no maxnreg (flydsl.Config(maxnreg=...) raises TypeError: it never reached "
            "LLVM); put waves_per_eu in the space instead to target occupancy."
        )


def to_flydsl_config(config: Config | Mapping[str, Any]) -> FlydslConfigSpec:
    """Map a space's config onto FlyDSL: ``num_warps`` and ``waves_per_eu`` become keywords,
    every other parameter a kernel keyword (constexpr).

    Raises:
        ConfigMappingError: the config has ``maxnreg`` (use ``waves_per_eu``).
    """
    params = dict(config.as_dict() if isinstance(config, Config) else config)
    _refuse_maxnreg(params)
    num_warps = params.pop("num_warps", None)
    waves = params.pop("waves_per_eu", None)
    return FlydslConfigSpec(params, num_warps, waves)


def _jit_parameters(jit_fn: Any) -> set[str]:
    source: Callable[..., Any] = getattr(jit_fn, "func", jit_fn)
    return set(inspect.signature(source).parameters)


def check_reaches_kernel(flydsl_config: Any, jit_fn: Any, space_params: list[str]) -> None:
    """Check that every space parameter reaches the kernel or the compiler; raise if one does not.

    Args:
        flydsl_config: A real ``flydsl.Config`` (its ``all_kwargs()`` and ``compiler_opts()`` are read).
        jit_fn: The ``@flyc.jit`` launcher the config is injected into.
        space_params: The space's parameter names.

    Raises:
        ConfigMappingError: a parameter is in neither ``all_kwargs()`` (and the kernel's signature)
            nor ``compiler_opts()``.
    """
    injected = dict(flydsl_config.all_kwargs())
    compiler = dict(flydsl_config.compiler_opts())
    accepted = _jit_parameters(jit_fn)
    not_declared = sorted(k for k in injected if k not in accepted)
    lost = sorted(p for p in space_params if p not in injected and p not in compiler)
    if lost or not_declared:
        source = getattr(jit_fn, "func", jit_fn)
        name = getattr(source, "__name__", "the kernel")
        raise ConfigMappingError(
            f"Space parameters do not all reach {name}: {lost or 'none'} reach neither the kernel nor "
            f"the compiler, and {not_declared or 'none'} are injected but not declared by the kernel; "
            "rename them to the kernel's constexpr names or drop them from the space."
        )


def triton_to_flydsl(triton: TritonConfigSpec, *, stages_param: str | None = None) -> FlydslConfigSpec:
    """Port a Triton config to FlyDSL.

    Args:
        triton: The Triton config.
        stages_param: The FlyDSL kernel's constexpr that plays Triton's ``num_stages``; without
            one, a ``num_stages`` other than Triton's default 3 cannot be ported and raises.

    Raises:
        ConfigMappingError: ``maxnreg`` is set, or ``num_stages`` has nowhere to go.
    """
    if triton.maxnreg is not None:
        _refuse_maxnreg({"maxnreg"})
    kwargs = dict(triton.kwargs)
    _refuse_maxnreg(kwargs)
    waves = kwargs.pop("waves_per_eu", None)
    if stages_param is not None:
        kwargs[stages_param] = triton.num_stages
    elif triton.num_stages != 3:
        raise ConfigMappingError(
            f"Triton num_stages={triton.num_stages} has no FlyDSL Config field; pass stages_param= "
            "naming the kernel constexpr that takes the pipeline depth."
        )
    return FlydslConfigSpec(kwargs, triton.num_warps, waves)


def flydsl_to_triton(flydsl_config: FlydslConfigSpec, *, stages_param: str | None = None) -> TritonConfigSpec:
    """Port a FlyDSL config to Triton: ``waves_per_eu`` moves into the kwargs dict (where Triton's
    AMD backend reads it), and *stages_param* (if given) becomes ``num_stages``."""
    kwargs = dict(flydsl_config.kwargs)
    num_stages = 3
    if stages_param is not None:
        if stages_param not in kwargs:
            raise ConfigMappingError(f"The FlyDSL config has no {stages_param!r} to map onto num_stages.")
        num_stages = int(kwargs.pop(stages_param))
    if flydsl_config.waves_per_eu is not None:
        kwargs["waves_per_eu"] = flydsl_config.waves_per_eu
    num_warps = flydsl_config.num_warps if flydsl_config.num_warps is not None else 4
    return TritonConfigSpec(kwargs, num_warps, num_stages)
