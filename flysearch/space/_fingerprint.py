"""Fingerprints of what a constraint computes, the same in every process that runs the same code.

A study stores the fingerprint of each constraint of its space, so that resuming it after the
constraint's code changed is refused (:meth:`flysearch.study.StudySpec.identity`). A predicate's
fingerprint covers its bytecode, its constants, the names it reads, the values its closure holds
(``tile_fits("BLOCK_N", "N", 32)`` differs from ``tile_fits("BLOCK_N", "N", 64)``), its defaults,
and the functions and constants (numbers, strings, containers of them) of its own module that it
reads by name (a helper it calls, a limit it compares with). Any other callable is known by its
qualified name.

Bytecode differs between Python versions: :data:`BYTECODE` names the one a fingerprint was taken
under, and fingerprints of different ones are not compared.

Example:
    >>> from flysearch.space._fingerprint import code_fingerprint
    >>> def at_most(limit):
    ...     return lambda c, shape, arch: c["BLOCK"] <= limit
    >>> code_fingerprint(at_most(32)) == code_fingerprint(at_most(32))
    True
    >>> code_fingerprint(at_most(32)) == code_fingerprint(at_most(64))
    False
"""

from __future__ import annotations

import functools
import hashlib
import sys
import types
from typing import Any

__all__ = ["BYTECODE", "code_fingerprint"]

BYTECODE: str = sys.implementation.cache_tag or sys.implementation.name  # "cpython-311"

_PLAIN = (type(None), bool, int, float, complex, str, bytes)


def code_fingerprint(func: Any) -> str:
    """A short hex digest of what *func* computes (see the module docstring)."""
    digest = hashlib.sha256()
    _feed(digest, func, set())
    return digest.hexdigest()[:16]


def _digest_of(obj: Any, seen: set[int]) -> bytes:
    digest = hashlib.sha256()
    _feed(digest, obj, seen)
    return digest.digest()


def _feed(h: Any, obj: Any, seen: set[int]) -> None:
    """Add *obj* to the hash *h*; *seen* holds the functions already fed (recursion)."""
    if isinstance(obj, _PLAIN):
        h.update(f"{type(obj).__name__}:{obj!r};".encode())
    elif isinstance(obj, tuple | list):
        h.update(b"(")
        for item in obj:
            _feed(h, item, seen)
        h.update(b")")
    elif isinstance(obj, set | frozenset):  # in no particular order: string hashes differ by process
        if all(isinstance(item, _PLAIN) for item in obj):  # a table's keys: thousands of strings
            items = sorted(f"{type(item).__name__}:{item!r}" for item in obj)
            h.update(("{" + "\0".join(items) + "}").encode())
        else:
            h.update(b"{" + b"".join(sorted(_digest_of(item, seen) for item in obj)) + b"}")
    elif isinstance(obj, dict):
        h.update(b"<dict>" + b"".join(sorted(_digest_of(item, seen) for item in obj.items())))
    elif isinstance(obj, types.CodeType):
        h.update(obj.co_code)
        _feed(h, obj.co_names, seen)
        _feed(h, obj.co_consts, seen)  # nested code (a lambda, a comprehension) is fed whole
    elif isinstance(obj, types.FunctionType):
        _feed_function(h, obj, seen)
    elif isinstance(obj, types.MethodType):
        _feed(h, _qualname(obj.__self__), seen)
        _feed(h, obj.__func__, seen)
    elif isinstance(obj, functools.partial):
        _feed(h, (obj.func, obj.args, obj.keywords), seen)
    else:
        _feed(h, _qualname(obj), seen)


def _feed_function(h: Any, func: types.FunctionType, seen: set[int]) -> None:
    if id(func) in seen:
        h.update(f"<again {func.__qualname__}>".encode())
        return
    seen.add(id(func))
    _feed(h, func.__code__, seen)
    _feed(h, (func.__defaults__, func.__kwdefaults__), seen)
    for cell in func.__closure__ or ():
        try:
            _feed(h, cell.cell_contents, seen)
        except ValueError:  # a cell not filled yet
            h.update(b"<empty cell>")
    for name in sorted(_names_read(func.__code__)):
        value = func.__globals__.get(name)
        if isinstance(value, types.FunctionType) and value.__module__ == func.__module__:
            h.update(f"<global {name}>".encode())
            _feed(h, value, seen)
        elif value is not None and _plain_data(value):
            h.update(f"<global {name}>".encode())
            _feed(h, value, seen)


def _plain_data(value: Any) -> bool:
    """Whether *value* is a number, a string, or a container of only such values (a constant)."""
    if isinstance(value, _PLAIN):
        return True
    if isinstance(value, tuple | list | set | frozenset):
        return all(_plain_data(item) for item in value)
    if isinstance(value, dict):
        return all(_plain_data(k) and _plain_data(v) for k, v in value.items())
    return False


def _names_read(code: types.CodeType) -> set[str]:
    """The global and attribute names *code* and the code nested in it read."""
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _names_read(const)
    return names


def _qualname(obj: Any) -> str:
    """``module.qualname`` of a class, a builtin or another named callable; else of its type."""
    named = obj if hasattr(obj, "__qualname__") else type(obj)
    return f"{getattr(named, '__module__', '')}.{named.__qualname__}"
