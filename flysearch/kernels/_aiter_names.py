"""Build and parse aiter FlyDSL HGEMM kernel names (the current format).

aiter names one FlyDSL HGEMM kernel by every knob of :mod:`flysearch.kernels`, the input,
weight and output dtypes and the target::

    flydsl_gemm{stages}_a{dtype}_w{dtype}_{out}_t{tile_m}x{tile_n}x{tile_k}_split_k{split_k}
    _block_m_warp{m}_block_n_warp{n}_block_k_warp{k}_async_copy{bool}_b_to_lds{bool}
    _b_preshuffle{bool}_c_to_lds{bool}_{gfx}

(one line, no breaks). This is the generic HGEMM family; the ``_small_m`` family's names are
refused, as are names whose input and weight dtypes differ (aiter's parser refuses those too).

Example:
    >>> from flysearch.kernels import build_kernel_name, parse_kernel_name
    >>> name = ("flydsl_gemm5_abf16_wbf16_bf16_t16x64x128_split_k2_block_m_warp1_block_n_warp2"
    ...         "_block_k_warp1_async_copyTrue_b_to_ldsTrue_b_preshuffleFalse_c_to_ldsFalse_gfx950")
    >>> parsed = parse_kernel_name(name, arch="gfx950")
    >>> parsed.arch, parsed.dtype, parsed.out_dtype, parsed.config["stages"]
    ('gfx950', 'bf16', 'bf16', 5)
    >>> build_kernel_name(parsed.config, "gfx950") == name
    True
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from flysearch.errors import InputFormatError
from flysearch.kernels._aiter_hgemm import aiter_hgemm_space
from flysearch.space import Config

__all__ = ["KERNEL_DTYPES", "ParsedKernelName", "build_kernel_name", "parse_kernel_name"]

KERNEL_DTYPES: tuple[str, ...] = ("bf16", "f16")
"""The dtype spellings aiter puts in FlyDSL names (``f16`` is fp16)."""

_NAME_RE = re.compile(
    r"flydsl_gemm(?P<stages>\d+)"
    r"_a(?P<a>[a-z0-9]+)_w(?P<w>[a-z0-9]+)_(?P<out>[a-z0-9]+)"
    r"_t(?P<tile_m>\d+)x(?P<tile_n>\d+)x(?P<tile_k>\d+)"
    r"_split_k(?P<split_k>\d+)"
    r"_block_m_warp(?P<block_m_warp>\d+)_block_n_warp(?P<block_n_warp>\d+)"
    r"_block_k_warp(?P<block_k_warp>\d+)"
    r"_async_copy(?P<async_copy>True|False)_b_to_lds(?P<b_to_lds>True|False)"
    r"_b_preshuffle(?P<b_preshuffle>True|False)_c_to_lds(?P<c_to_lds>True|False)"
    r"_(?P<gfx>gfx[0-9a-z]+)"
)
_INTS = ("stages", "tile_m", "tile_n", "tile_k", "split_k", "block_m_warp", "block_n_warp", "block_k_warp")
_BOOLS = ("async_copy", "b_to_lds", "b_preshuffle", "c_to_lds")
_space = functools.cache(aiter_hgemm_space)


@dataclass(frozen=True)
class ParsedKernelName:
    """A parsed FlyDSL HGEMM name.

    Attributes:
        arch: The target in the name's suffix (``"gfx950"``).
        dtype: Input and weight dtype as aiter spells it (``"bf16"``, ``"f16"``).
        out_dtype: Output dtype of the kernel itself (aiter casts afterwards when the GEMM's
            ``outdtype`` differs).
        config: The config of the ``aiter_flydsl_hgemm`` space.
    """

    arch: str
    dtype: str
    out_dtype: str
    config: Config


def parse_kernel_name(name: str, arch: str | None = None) -> ParsedKernelName:
    """Parse an aiter FlyDSL HGEMM kernel name into its arch, dtypes and config.

    Args:
        name: The ``kernelName`` of a FlyDSL row.
        arch: When given, the arch the name must be for (``"gfx942"``, ``"gfx950"``).

    Raises:
        InputFormatError: the name is not a generic FlyDSL HGEMM name, names another arch than
            *arch*, or holds a value outside the space's domains.
    """
    text = name.strip()
    match = _NAME_RE.fullmatch(text)
    if match is None:
        hint = " (the _small_m family is not part of this space)" if "_small_m" in text else ""
        raise InputFormatError(
            f"Kernel name {name!r} is not an aiter FlyDSL HGEMM name{hint}; expected e.g. "
            "'flydsl_gemm2_abf16_wbf16_bf16_t16x64x64_split_k1_block_m_warp1_block_n_warp1_"
            "block_k_warp1_async_copyTrue_b_to_ldsTrue_b_preshuffleFalse_c_to_ldsFalse_gfx950'."
        )
    fields = match.groupdict()
    gfx = fields["gfx"]
    if arch is not None and gfx != arch.strip().lower():
        raise InputFormatError(
            f"Kernel name {name!r} is for {gfx}, not {arch}; parse it with arch={gfx!r} or pick "
            f"a {arch} kernel."
        )
    if fields["a"] != fields["w"] or fields["a"] not in KERNEL_DTYPES:
        raise InputFormatError(
            f"Kernel name {name!r} has input dtype {fields['a']!r} and weight dtype "
            f"{fields['w']!r}; the FlyDSL HGEMM takes one 16-bit dtype, one of {KERNEL_DTYPES}."
        )
    if fields["out"] not in KERNEL_DTYPES:
        raise InputFormatError(
            f"Kernel name {name!r} has output dtype {fields['out']!r}; expected one of {KERNEL_DTYPES}."
        )
    params: dict[str, int | bool] = {k: int(fields[k]) for k in _INTS}
    params.update({k: fields[k] == "True" for k in _BOOLS})
    try:
        config = _space().config_from_dict(params)
    except InputFormatError as exc:
        raise InputFormatError(f"Kernel name {name!r} lies outside the aiter HGEMM space: {exc}") from None
    return ParsedKernelName(gfx, fields["a"], fields["out"], config)


def build_kernel_name(config: Config, arch: str, dtype: str = "bf16", out_dtype: str = "bf16") -> str:
    """Build aiter's kernel name for *config* on *arch* (the inverse of :func:`parse_kernel_name`).

    Raises:
        InputFormatError: *config* is not a config of the space, or a dtype is not one aiter names.
    """
    if not re.fullmatch(r"gfx[0-9a-z]+", arch):
        raise InputFormatError(f"Arch {arch!r} is not a gfx target name; pass e.g. 'gfx950'.")
    for label, value in (("dtype", dtype), ("out_dtype", out_dtype)):
        if value not in KERNEL_DTYPES:
            raise InputFormatError(f"{label} {value!r} is not one aiter names; use one of {KERNEL_DTYPES}.")
    c = _space().config_from_dict(config.as_dict())
    return (
        f"flydsl_gemm{c['stages']}_a{dtype}_w{dtype}_{out_dtype}"
        f"_t{c['tile_m']}x{c['tile_n']}x{c['tile_k']}_split_k{c['split_k']}"
        f"_block_m_warp{c['block_m_warp']}_block_n_warp{c['block_n_warp']}"
        f"_block_k_warp{c['block_k_warp']}_async_copy{c['async_copy']}_b_to_lds{c['b_to_lds']}"
        f"_b_preshuffle{c['b_preshuffle']}_c_to_lds{c['c_to_lds']}_{arch}"
    )
