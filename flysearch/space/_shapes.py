"""GEMM shapes, the regime classifier and the shape corpus.

A GEMM computes ``C[M, N] = A[M, K] @ B[K, N]``; for a linear layer ``y = x W^T``, M is the number of
tokens, N the layer's output features and K its input features.

Regimes, tried in this order (the first rule that holds names the regime):

========== ====================================== ==============================================
regime     rule                                   why it is its own regime
========== ====================================== ==============================================
decode     ``M <= 16``                            one tile row; parallelism only from N and K
k_heavy    ``K >= 4 * max(M, N)``                 too few output tiles; split-K is the lever
small_m    ``M <= 256``                           few tile rows; tall-skinny tiles win
square     ``max(M, N, K) <= 2 * min(M, N, K)``   compute bound, large tiles win
prefill    everything else (``M > 256``)          many tokens against a rectangular weight
========== ====================================== ==============================================

Example:
    >>> from flysearch.space import Shape
    >>> Shape(1, 4096, 4096).regime
    'decode'
    >>> Shape(4096, 4096, 4096).regime
    'square'
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from flysearch._tomlfile import read_toml
from flysearch.errors import InputFormatError

__all__ = ["REGIMES", "CorpusEntry", "Shape", "classify", "load_corpus", "parse_shape"]

REGIMES: tuple[str, ...] = ("decode", "k_heavy", "small_m", "square", "prefill")

DTYPE_BYTES: dict[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}


@dataclass(frozen=True, order=True)
class Shape:
    """One GEMM problem: ``C[M, N] = A[M, K] @ B[K, N]`` in *dtype* (accumulated in fp32)."""

    M: int
    N: int
    K: int
    dtype: str = "bf16"

    def __post_init__(self) -> None:
        for dim in ("M", "N", "K"):
            value = getattr(self, dim)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"Shape {dim} must be a positive integer, got {value!r}.")
        if self.dtype not in DTYPE_BYTES:
            known = ", ".join(DTYPE_BYTES)
            raise ValueError(f"Unknown dtype {self.dtype!r}; known dtypes: {known}.")

    @property
    def regime(self) -> str:
        """The regime name (see the module docstring for the rules)."""
        return classify(self.M, self.N, self.K)

    @property
    def flops(self) -> int:
        """Floating-point operations of the GEMM (2 per multiply-add)."""
        return 2 * self.M * self.N * self.K

    @property
    def key(self) -> str:
        """Canonical text form, ``"M=1,N=4096,K=4096,dtype=bf16"``."""
        return f"M={self.M},N={self.N},K={self.K},dtype={self.dtype}"

    def as_dict(self) -> dict[str, int | str]:
        return {"M": self.M, "N": self.N, "K": self.K, "dtype": self.dtype}


def classify(M: int, N: int, K: int) -> str:
    """Return the regime of an ``M x N x K`` GEMM (rules in the module docstring)."""
    if M <= 16:
        return "decode"
    if K >= 4 * max(M, N):
        return "k_heavy"
    if M <= 256:
        return "small_m"
    if max(M, N, K) <= 2 * min(M, N, K):
        return "square"
    return "prefill"


def parse_shape(text: str) -> Shape:
    """Parse ``"MxNxK"`` or ``"MxNxK:dtype"`` (``"1x4096x4096:bf16"``) into a :class:`Shape`."""
    dims, _, dtype = text.strip().partition(":")
    parts = dims.lower().split("x")
    try:
        m, n, k = (int(p) for p in parts)
        return Shape(m, n, k, dtype or "bf16")
    except ValueError as exc:
        raise InputFormatError(
            f"Shape {text!r} is not of the form MxNxK[:dtype], e.g. 1x4096x4096:bf16 ({exc})."
        ) from None


@dataclass(frozen=True)
class CorpusEntry:
    """A shape of the corpus with the model layer it comes from."""

    name: str
    model: str
    layer: str
    shape: Shape

    @property
    def regime(self) -> str:
        return self.shape.regime


_ENTRY_KEYS = {"name", "model", "layer", "M", "N", "K", "dtype"}


def load_corpus(path: str | Path) -> list[CorpusEntry]:
    """Read a shape corpus (TOML, ``[[shape]]`` tables with name, model, layer, M, N, K, dtype)."""
    path = Path(path)
    doc = read_toml(path, "Shape corpus")
    entries = []
    listed = doc.get("shape", [])
    if not isinstance(listed, list) or not all(isinstance(raw, dict) for raw in listed):
        raise InputFormatError(f"{path}: 'shape' must be [[shape]] tables (name, M, N, K), got {listed!r}.")
    for i, raw in enumerate(listed):
        missing = [k for k in ("name", "M", "N", "K") if k not in raw]
        if missing:
            raise InputFormatError(f"{path}: shape #{i + 1} lacks {', '.join(missing)}.")
        unknown = set(raw) - _ENTRY_KEYS
        if unknown:
            raise InputFormatError(
                f"{path}: shape #{i + 1} has unknown keys {sorted(unknown)}; "
                f"allowed: {sorted(_ENTRY_KEYS)}."
            )
        try:
            shape = Shape(int(raw["M"]), int(raw["N"]), int(raw["K"]), raw.get("dtype", "bf16"))
            entries.append(CorpusEntry(raw["name"], raw.get("model", ""), raw.get("layer", ""), shape))
        except (KeyError, ValueError, TypeError) as exc:
            raise InputFormatError(f"{path}: shape #{i + 1} is malformed: {exc}.") from None
    if not entries:
        raise InputFormatError(f"{path}: no [[shape]] entries found.")
    return entries
