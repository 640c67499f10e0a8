"""What a kernel is and which problem a call poses: its identity, its arguments, its key values.

A tuned config is stored under the kernel's **identity** (its name, a hash of its source, a hash of
the space searched, the device and the compiler's version: change any and the kernel is tuned
anew) and the call's **key values**: the values of the arguments named in ``key``, as
``triton.autotune`` reads them. A tensor's key value is its shape and dtype (``"4096x8192:float16"``),
since a shape is what a tuned config depends on; numbers, strings and bools are taken as they are.

Example:
    >>> kv = KeyValues.of({"n_rows": 8, "n_cols": 4096})
    >>> kv.key, kv["n_cols"], kv.problem()
    ('n_cols=4096,n_rows=8', 4096, {'n_cols': 4096, 'n_rows': 8})
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from flysearch.errors import AutotuneError

__all__ = ["LAUNCH_OPTIONS", "KernelArgs", "KeyValues", "callable_names", "key_value", "python_function",
           "source_hash"]

LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
"""Space parameters that are Triton launch options, not arguments of the kernel."""


def key_value(value: Any) -> int | float | str | bool:
    """The key value of one argument: a tensor's ``"<d0>x<d1>...:<dtype>"``, a number, a string."""
    if isinstance(value, bool | int | float | str):
        return value
    shape = getattr(value, "shape", None)
    if shape is not None:
        dtype = str(getattr(value, "dtype", "")).removeprefix("torch.")
        return "x".join(str(int(d)) for d in shape) + (f":{dtype}" if dtype else "")
    raise AutotuneError(
        f"A key argument must be a number, a string, a bool or an array, not {type(value).__name__}; "
        "name another argument in key."
    )


@dataclass(frozen=True)
class KeyValues(Mapping[str, Any]):
    """The key values of one call, in the order of the decorator's ``key``: hashable, with one
    canonical text (:attr:`key`), readable as a mapping by a constraint's predicate."""

    items_: tuple[tuple[str, Any], ...]

    @classmethod
    def of(cls, values: Mapping[str, Any]) -> KeyValues:
        return cls(tuple((name, key_value(v)) for name, v in values.items()))

    @property
    def key(self) -> str:
        return ",".join(f"{name}={value}" for name, value in sorted(self.items_))

    def __getitem__(self, name: str) -> Any:
        for item, value in self.items_:
            if item == name:
                return value
        raise KeyError(name)

    def __iter__(self) -> Iterator[str]:
        return (name for name, _ in self.items_)

    def __len__(self) -> int:
        return len(self.items_)

    def problem(self) -> dict[str, float | int]:
        """The sizes a cost model sees: every number, and every dimension of a tensor's shape
        (``x_0``, ``x_1``, ...)."""
        out: dict[str, float | int] = {}
        for name, value in sorted(self.items_):
            if isinstance(value, bool):
                out[name] = int(value)
            elif isinstance(value, int | float):
                out[name] = value
            elif isinstance(value, str) and value[:1].isdigit():
                dims = value.split(":", 1)[0].split("x")
                if all(d.isdigit() for d in dims):
                    out.update({f"{name}_{i}": int(d) for i, d in enumerate(dims)})
        return out

    def as_json(self) -> str:
        return json.dumps(dict(self.items_), sort_keys=True)


def python_function(fn: Any) -> Any:
    """The Python function under a JIT's wrapper (Triton's ``JITFunction.fn``, FlyDSL's
    ``JitFunction.func``), whose name, signature and source are the kernel's; *fn* itself otherwise."""
    if isinstance(fn, functools.partial):
        return fn
    for attr in ("fn", "func"):
        inner = getattr(fn, attr, None)
        if inspect.isfunction(inner):
            return inner
    return fn


def source_hash(fn: Any) -> str:
    """A hash of a kernel's source: Triton's own cache key for a ``@triton.jit`` function (its
    source and those of the functions it calls), else the source text (or the qualified name of
    a function whose source Python cannot read)."""
    text = getattr(fn, "cache_key", None)
    if not isinstance(text, str):
        inner = python_function(fn)
        try:
            text = inspect.getsource(inner)
        except (OSError, TypeError):
            text = f"{getattr(inner, '__module__', '')}.{getattr(inner, '__qualname__', repr(inner))}"
    return hashlib.sha256(text.encode()).hexdigest()[:16]


class KernelArgs:
    """The argument names of a kernel, and a fast way to read a call's key values.

    Args:
        names: The kernel's argument names, in order.
        key: The arguments whose values key a tuned config.
        tunable: The space's parameter names.
        constexprs: The names the space may set (``None``: any argument); launch options are
            always allowed when *launch_options* is true.
        accepts_any: Whether the callable takes ``**kwargs`` (any space parameter name fits).

    Raises:
        AutotuneError: a key that is not an argument, or a parameter the kernel does not take.
    """

    def __init__(self, kernel: str, names: Sequence[str], key: Sequence[str], tunable: Sequence[str], *,
                 constexprs: Sequence[str] | None = None, launch_options: bool = False,
                 accepts_any: bool = False) -> None:
        self.kernel, self.names, self.key = kernel, tuple(names), tuple(key)
        if isinstance(key, str):
            raise AutotuneError(f"key must be a list of argument names, not the string {key!r}; "
                                f"write [{key!r}].")
        missing = [k for k in self.key if k not in self.names]
        if missing:
            raise AutotuneError(
                f"key names {', '.join(map(repr, missing))}, which {kernel} does not take as an argument; "
                f"its arguments are {', '.join(self.names)}."
            )
        allowed = set(self.names if constexprs is None else constexprs)
        if launch_options:
            allowed |= set(LAUNCH_OPTIONS)
        unknown = [p for p in tunable if p not in allowed and not accepts_any]
        if unknown:
            raise AutotuneError(
                f"The space sets {', '.join(map(repr, unknown))}, which {kernel} does not take"
                + (" as a tl.constexpr argument or launch option" if launch_options else "")
                + f"; its tunable arguments are {', '.join(sorted(allowed)) or 'none'}."
            )
        clash = [p for p in tunable if p in self.key]
        if clash:
            raise AutotuneError(f"{', '.join(map(repr, clash))} is both a key and a space parameter; "
                                "a key is read from the call, a parameter is tuned: choose one.")
        self._positions = [(self.names.index(k), k) for k in self.key]

    def values(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[Any, ...]:
        """The raw key values of a call (cheap: a tuple; tensors become their shape and dtype)."""
        out = []
        n = len(args)
        for position, name in self._positions:
            if position < n:
                value = args[position]
            elif name in kwargs:
                value = kwargs[name]
            else:
                raise AutotuneError(f"The call of {self.kernel} does not pass the key argument {name!r}; "
                                    "pass it.")
            if not isinstance(value, bool | int | float | str):
                value = key_value(value)
            out.append(value)
        return tuple(out)

    def named(self, values: tuple[Any, ...]) -> KeyValues:
        return KeyValues(tuple(zip(self.key, values, strict=True)))

    def bind(self, args: Sequence[Any], kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """The call's arguments by name (positional ones named)."""
        if len(args) > len(self.names):
            raise AutotuneError(f"{self.kernel} takes {len(self.names)} arguments, {len(args)} were given.")
        bound = dict(zip(self.names, args, strict=False))
        bound.update(kwargs)
        return bound


def callable_names(fn: Callable[..., Any]) -> tuple[list[str], bool]:
    """A plain callable's argument names, and whether it takes ``**kwargs``."""
    params = inspect.signature(python_function(fn)).parameters.values()
    names = [p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return names, any(p.kind is p.VAR_KEYWORD for p in params)
