"""Search spaces: parameters with finite domains, named analytic constraints, canonical config keys.

A :class:`Space` is declared once per kernel family. Enumerating it for a shape and an arch applies
the constraints *before* anything is compiled and counts, by constraint name, what each removed::

    >>> from flysearch.space import Space, Param, Constraint
    >>> space = Space("toy", [Param("BLOCK", (16, 32, 64)), Param("SPLIT", (1, 2))],
    ...               [Constraint("block_le_32", lambda c, shape, arch: c["BLOCK"] <= 32)])
    >>> space.enumerate().summary()
    '6 -> 4: block_le_32 -2'
    >>> space.enumerate().feasible[0].key
    'BLOCK=16,SPLIT=1'
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from flysearch.errors import EmptySpaceError, InputFormatError
from flysearch.space._fingerprint import BYTECODE, code_fingerprint

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution

    from flysearch.space._arch import ArchProfile
    from flysearch.space._shapes import Shape

__all__ = [
    "ENCODINGS",
    "Config",
    "Constraint",
    "Encoding",
    "Enumeration",
    "Param",
    "Space",
    "Value",
    "keep_recent",
]

Value = int | float | bool | str
Encoding = Literal["ordinal", "categorical"]
ENCODINGS: tuple[str, ...] = ("ordinal", "categorical")


K = TypeVar("K")
V = TypeVar("V")


def keep_recent(kept: dict[K, V], key: K, make: Callable[[], V], size: int = 4) -> V:
    """``kept[key]``, made by *make* when absent; *kept* holds the *size* most recently used
    entries (a dict in use order, most recent last).

    Example:
        >>> kept = {}
        >>> [keep_recent(kept, k, lambda: k * 10, size=2) for k in (1, 2, 1, 3)]
        [10, 20, 10, 30]
        >>> list(kept)
        [1, 3]
    """
    value = kept.pop(key) if key in kept else make()
    kept[key] = value
    while len(kept) > size:
        del kept[next(iter(kept))]
    return value


# A value's text in a config key: ``str`` (a builtin, so that building the keys of thousands of
# configs costs no Python call per value).
_format_value = str


@dataclass(frozen=True)
class Config:
    """One assignment of a space's parameters: a frozen value with one canonical key.

    The key, ``name=value`` pairs sorted by name and joined by commas, is the SQLite primary key,
    the dedup key and the cache key everywhere in flysearch.
    """

    items: tuple[tuple[str, Value], ...]

    @classmethod
    def from_dict(cls, params: Mapping[str, Value]) -> Config:
        return cls(tuple(sorted(params.items())))

    @functools.cached_property
    def key(self) -> str:
        """Built on first use and kept (a study looks each config's key up many times)."""
        return ",".join([f"{name}={_format_value(value)}" for name, value in self.items])

    def as_dict(self) -> dict[str, Value]:
        return dict(self.items)

    def __getitem__(self, name: str) -> Value:
        for item_name, value in self.items:
            if item_name == name:
                return value
        raise KeyError(name)

    def get(self, name: str, default: Value | None = None) -> Value | None:
        try:
            return self[name]
        except KeyError:
            return default

    def __str__(self) -> str:
        return self.key


@dataclass(frozen=True)
class Param:
    """A parameter with a finite domain: ints, floats, bools or strings (all of one type).

    Numbers are kept sorted, so the ordinal encoding of a power-of-two tile size is its log2 ordinal.
    """

    name: str
    values: tuple[Value, ...]

    def __post_init__(self) -> None:
        if not self.values:
            raise ValueError(f"Parameter {self.name!r} has an empty domain.")
        types = {type(v) for v in self.values}
        if len(types) != 1 or types.pop() not in (int, float, bool, str):
            raise ValueError(
                f"Parameter {self.name!r} must hold values of one type (int, float, bool, str), "
                f"got {self.values!r}."
            )
        if len(set(self.values)) != len(self.values):
            raise ValueError(f"Parameter {self.name!r} repeats a value: {self.values!r}.")
        for value in self.values:
            text = _format_value(value)
            if "," in text or "=" in text:
                raise ValueError(f"Parameter {self.name!r} value {value!r} may not contain ',' or '='.")
        if self.numeric:
            object.__setattr__(self, "values", tuple(sorted(self.values)))  # type: ignore[type-var]

    @property
    def kind(self) -> str:
        """``"int"``, ``"float"``, ``"bool"`` or ``"categorical"`` (strings)."""
        first = self.values[0]
        if isinstance(first, bool):
            return "bool"
        if isinstance(first, int):
            return "int"
        return "float" if isinstance(first, float) else "categorical"

    @property
    def numeric(self) -> bool:
        """Ints and floats: ordered values that the ordinal encoding maps to their rank."""
        return self.kind in ("int", "float")

    def parse(self, text: str) -> Value:
        """Return the domain value whose text form is *text*."""
        for value in self.values:
            if _format_value(value) == text:
                return value
        raise InputFormatError(f"{text!r} is not a value of parameter {self.name!r} ({self.values}).")

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "values": list(self.values)}


Predicate = Callable[[Config, "Shape | None", "ArchProfile | None"], bool]


@dataclass(frozen=True)
class Constraint:
    """A named analytic predicate over (config, shape, arch); ``True`` keeps the config."""

    name: str
    predicate: Predicate = field(repr=False)
    doc: str = ""

    def __call__(self, config: Config, shape: Shape | None, arch: ArchProfile | None) -> bool:
        return bool(self.predicate(config, shape, arch))

    @functools.cached_property
    def fingerprint(self) -> str:
        """A digest of what the predicate computes: it changes when its code does (its bytecode,
        closure, defaults, and the helpers and constants of its module it reads)."""
        return code_fingerprint(self.predicate)


@dataclass
class Enumeration:
    """The result of pruning a space for one (shape, arch).

    Attributes:
        total: Size of the cartesian product.
        feasible: The configs every constraint keeps, in enumeration order.
        removed: Per constraint, how many configs it was the first to reject.
    """

    space: Space
    total: int
    feasible: list[Config]
    removed: dict[str, int]

    def summary(self) -> str:
        """``"4200 -> 1870: lds_fits -1300, tile_fits_shape -1030"``."""
        cuts = ", ".join(f"{name} -{n}" for name, n in self.removed.items() if n)
        return f"{self.total} -> {len(self.feasible)}" + (f": {cuts}" if cuts else "")

    def shuffled(self, seed: int | None) -> list[Config]:
        """The feasible configs in an order fixed by *seed* (enumeration order for ``None``)."""
        order = list(self.feasible)
        if seed is not None:
            random.Random(seed).shuffle(order)
        return order


class Space:
    """Named parameters with finite domains plus named analytic constraints.

    Args:
        name: The kernel family's space name (stored with every table and study).
        params: The parameters, in the order they are enumerated.
        constraints: Predicates applied in order; the first that rejects a config is charged.
        kernel: The kernel factory a live or compile-only evaluator builds (``"module:function"``),
            when the space belongs to a kernel flysearch can compile.
    """

    def __init__(
        self, name: str, params: Sequence[Param], constraints: Sequence[Constraint] = (),
        *, kernel: str | None = None,
    ) -> None:
        names = [p.name for p in params]
        if len(set(names)) != len(names):
            raise ValueError(f"Space {name!r} declares a parameter twice: {names}.")
        self.name = name
        self.params: tuple[Param, ...] = tuple(params)
        self.constraints: tuple[Constraint, ...] = tuple(constraints)
        self.kernel = kernel
        self._by_name = {p.name: p for p in self.params}
        self._enumerations: dict[tuple[Any, Any], Enumeration] = {}

    def __repr__(self) -> str:
        return f"Space({self.name!r}, {len(self.params)} params, {len(self.constraints)} constraints)"

    @property
    def size(self) -> int:
        """Size of the cartesian product."""
        n = 1
        for p in self.params:
            n *= len(p.values)
        return n

    def param(self, name: str) -> Param:
        return self._by_name[name]

    def configs(self) -> Iterator[Config]:
        """Every config of the cartesian product, unpruned."""
        names = [p.name for p in self.params]
        # Config items are sorted by name: permute each product tuple once, without sorting it.
        order = sorted(range(len(names)), key=names.__getitem__)
        sorted_names = [names[i] for i in order]
        for values in itertools.product(*(p.values for p in self.params)):
            yield Config(tuple(zip(sorted_names, [values[i] for i in order], strict=True)))

    def reject_reason(
        self, config: Config, shape: Shape | None = None, arch: ArchProfile | None = None
    ) -> str | None:
        """The name of the first constraint that rejects *config*, or ``None`` if all keep it."""
        for constraint in self.constraints:
            if not constraint(config, shape, arch):
                return constraint.name
        return None

    def enumerate(
        self, shape: Shape | None = None, arch: ArchProfile | None = None, *, allow_empty: bool = False
    ) -> Enumeration:
        """Prune the space for (*shape*, *arch*); raise :class:`EmptySpaceError` if nothing is left.

        The space keeps its last few enumerations: a later call for the same (*shape*, *arch*)
        returns the same :class:`Enumeration` (read-only to callers), so a worker that runs many
        studies of one table prunes it once.
        """
        result = keep_recent(self._enumerations, (shape, arch), lambda: self._prune(shape, arch))
        if not result.feasible and not allow_empty:
            where = f" for shape {shape.key}" if shape is not None else ""
            where += f" on {arch.name}" if arch is not None else ""
            raise EmptySpaceError(
                f"Space {self.name!r} has no feasible config{where} ({result.summary()}); "
                "widen the parameter domains or relax the constraints."
            )
        return result

    def _prune(self, shape: Shape | None, arch: ArchProfile | None) -> Enumeration:
        removed = {c.name: 0 for c in self.constraints}
        checks = [(c.name, c.predicate) for c in self.constraints]  # reject_reason, inlined
        feasible = []
        total = 0
        for config in self.configs():
            total += 1
            for name, predicate in checks:
                if not predicate(config, shape, arch):
                    removed[name] += 1
                    break
            else:
                feasible.append(config)
        return Enumeration(self, total, feasible, removed)

    # -- keys -------------------------------------------------------------------------------------

    def config(self, **params: Value) -> Config:
        """Build a config, checking every parameter is declared and every value is in its domain."""
        return self.config_from_dict(params)

    def config_from_dict(self, params: Mapping[str, Value]) -> Config:
        missing = set(self._by_name) - set(params)
        unknown = set(params) - set(self._by_name)
        if missing or unknown:
            raise InputFormatError(
                f"Config {dict(params)} does not match space {self.name!r}: "
                f"missing {sorted(missing)}, unknown {sorted(unknown)}."
            )
        for name, value in params.items():
            if value not in self._by_name[name].values or type(value) is not type(
                self._by_name[name].values[0]
            ):
                raise InputFormatError(
                    f"Value {value!r} of {name!r} is outside its domain {self._by_name[name].values}."
                )
        return Config.from_dict(params)

    def config_from_key(self, key: str) -> Config:
        """Parse a canonical key back into a config of this space."""
        params: dict[str, Value] = {}
        for pair in key.split(","):
            name, sep, text = pair.partition("=")
            if not sep or name not in self._by_name:
                raise InputFormatError(f"Key {key!r} is not a config key of space {self.name!r}.")
            params[name] = self._by_name[name].parse(text)
        return self.config_from_dict(params)

    # -- Optuna -----------------------------------------------------------------------------------

    def free_params(self) -> tuple[Param, ...]:
        """Parameters with more than one value: the ones a sampler has to choose."""
        return tuple(p for p in self.params if len(p.values) > 1)

    def distributions(self, encoding: Encoding = "ordinal") -> dict[str, BaseDistribution]:
        """Optuna distributions of the free parameters.

        ``"ordinal"`` maps a numeric parameter to the index of its value in sorted order (a log2 ordinal
        for power-of-two tiles), so samplers see that 64 lies between 32 and 128; bools and strings
        stay categorical. ``"categorical"`` makes every parameter an unordered choice.
        """
        from optuna.distributions import CategoricalDistribution, IntDistribution

        if encoding not in ENCODINGS:
            raise ValueError(f"Unknown encoding {encoding!r}; choose one of {ENCODINGS}.")
        dists: dict[str, BaseDistribution] = {}
        for p in self.free_params():
            if encoding == "ordinal" and p.numeric:
                dists[p.name] = IntDistribution(0, len(p.values) - 1)
            else:
                dists[p.name] = CategoricalDistribution(p.values)
        return dists

    def decode(self, params: Mapping[str, Any], encoding: Encoding = "ordinal") -> Config:
        """Turn a trial's parameters (as :meth:`distributions` defines them) into a config."""
        values: dict[str, Value] = {}
        for p in self.params:
            if len(p.values) == 1:
                values[p.name] = p.values[0]
            elif encoding == "ordinal" and p.numeric:
                values[p.name] = p.values[int(params[p.name])]
            else:
                values[p.name] = params[p.name]
        return Config.from_dict(values)

    def encode(self, config: Config, encoding: Encoding = "ordinal") -> dict[str, Any]:
        """The inverse of :meth:`decode`: trial parameters that decode to *config*."""
        out: dict[str, Any] = {}
        for p in self.free_params():
            value = config[p.name]
            out[p.name] = p.values.index(value) if encoding == "ordinal" and p.numeric else value
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "params": [p.to_json() for p in self.params],
            "constraints": [c.name for c in self.constraints],
        }

    def fingerprint(self) -> dict[str, Any]:
        """What a study searching this space stores to know it again (plain JSON): the space's
        name, each parameter's values, each constraint's :attr:`Constraint.fingerprint`, and the
        bytecode those were taken under (``"cpython-311"``).

        Example:
            >>> space = Space("toy", [Param("BLOCK", (16, 32))], [Constraint("small", lambda c, s, a: True)])
            >>> fp = space.fingerprint()
            >>> fp["space"], fp["params"], list(fp["constraints"])
            ('toy', {'BLOCK': [16, 32]}, ['small'])
        """
        constraints: dict[str, str] = {}
        for c in self.constraints:  # a name given twice holds both fingerprints
            constraints[c.name] = "+".join(filter(None, (constraints.get(c.name), c.fingerprint)))
        return {
            "space": self.name,
            "params": {p.name: list(p.values) for p in self.params},
            "constraints": constraints,
            "bytecode": BYTECODE,
        }


def params_from_json(raw: Iterable[Mapping[str, Any]]) -> list[Param]:
    """Rebuild parameters from :meth:`Space.to_json` output."""
    try:
        return [Param(str(p["name"]), tuple(p["values"])) for p in raw]
    except (KeyError, TypeError, ValueError) as exc:
        raise InputFormatError(f"Malformed space description: {exc}.") from None
