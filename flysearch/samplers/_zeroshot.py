"""Zero-shot transfer baselines: configs chosen before anything is compiled, then the cold start.

Each of these samplers proposes a short ranked list of configs first (the feasible ones, in order,
skipping any the study has evaluated), then hands every later suggestion to ``auto``, the default
cold start (:class:`ListFirstSampler`). The lists are the cheap transfer baselines a reviewer asks
``costmodel`` to beat; like its prior, three of them are learnt from the tables of *other* shapes
(:class:`TransferTables`, built from the training tables by :func:`transfer_tables`; a comparison
trains them leave-one-table-out, exactly as it trains ``costmodel``'s prior):

* ``fixed-list``: what a ``triton.autotune`` user ships. Each config that ran on some training table
  gets, per table, its normalized rank there (0 for the table's fastest config, 1 for its slowest;
  1 where it failed or was not raced); the list is the 8 configs of lowest mean normalized rank
  over the tables (ties by key), the same for every shape (:func:`fixed_list`).
* ``decision-tree``: a shape heuristic in the style of Helion's ahead-of-time heuristics, at most
  10 configs. From the training tables' winners, up to 10 are chosen greedily, each time the one
  that most lowers the summed log slowdown of the tables' best chosen config (a config a table
  lacks counts as that table's slowest); each table is labelled with its best chosen config and a
  scikit-learn ``DecisionTreeClassifier`` (at most 10 leaves, ``random_state=0``) learns the label
  from the shape (:func:`shape_features`). The list is the tree's prediction for the scored shape,
  then the other chosen configs in the order they were chosen (:func:`tree_list`).
* ``winners-first``: other shapes' winners, nearest shape first: each training table's fastest
  config, ordered by the distance of its table's shape to the scored shape (ties by key, each
  config once; :func:`winners_first`).

``nvmmh`` learns nothing from tables: its list is NVIDIA's nvMatmulHeuristics top 8 for the shape
and GPU, mapped onto the family's parameters (:mod:`flysearch.samplers._nvmmh`).

A shape is its numeric problem sizes (a GEMM's M, N, K); its features are their base-2 logs, and a
distance is Euclidean over them, over the sizes both problems have.

Example:
    >>> t = TransferTables((TransferTable("a", (("M", 16.0),), (("x", 1.0), ("y", 2.0))),
    ...                     TransferTable("b", (("M", 4096.0),), (("x", 3.0), ("y", 1.0)))))
    >>> fixed_list(t, k=2), winners_first(t, {"M": 8})
    (['x', 'y'], ['x', 'y'])
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from flysearch.samplers._history import CandidateHistory, CandidateSampler, candidate_ordinals

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.samplers import BaseSampler
    from optuna.study import Study
    from optuna.trial import FrozenTrial

    from flysearch.samplers._context import SearchContext
    from flysearch.tables import GroundTruth

__all__ = [
    "FIXED_LIST_SIZE",
    "MAX_TREE_CONFIGS",
    "TRAINED",
    "ZERO_SHOT",
    "ListFirstSampler",
    "TransferTable",
    "TransferTables",
    "fixed_list",
    "key_values",
    "nearest_feasible",
    "shape_features",
    "transfer_tables",
    "tree_list",
    "winners_first",
    "zero_shot_order",
]

FIXED_LIST_SIZE = 8
"""Configs in the ``fixed-list`` sampler's list."""
MAX_TREE_CONFIGS = 10
"""Configs (and leaves) the ``decision-tree`` sampler's tree may use at most."""
TRAINED: tuple[str, ...] = ("fixed-list", "decision-tree", "winners-first")
"""The zero-shot samplers learnt from the training tables (they need :class:`TransferTables`)."""
ZERO_SHOT: tuple[str, ...] = (*TRAINED, "nvmmh")
"""Every zero-shot sampler."""


@dataclass(frozen=True)
class TransferTable:
    """One training table as the zero-shot baselines read it.

    Attributes:
        name: The table's name.
        problem: Its numeric problem sizes, as sorted ``(name, value)`` pairs.
        times: Each successful config's time in ms, as ``(key, time_ms)`` pairs.
    """

    name: str
    problem: tuple[tuple[str, float], ...]
    times: tuple[tuple[str, float], ...]

    @property
    def winner(self) -> str:
        """The fastest config's key (ties by key)."""
        return min(self.times, key=lambda kv: (kv[1], kv[0]))[0]


@dataclass(frozen=True)
class TransferTables:
    """The training tables of the zero-shot baselines (what ``costmodel``'s prior is to it)."""

    tables: tuple[TransferTable, ...]


def transfer_tables(tables: Sequence[GroundTruth]) -> TransferTables:
    """*tables* reduced to what the zero-shot baselines learn from: shapes and successful times."""
    out = []
    for t in tables:
        times = tuple(sorted((r.key, float(r.time_ms)) for r in t.ok_rows() if r.time_ms is not None))
        if times:
            out.append(TransferTable(t.name, _numeric(t.meta.problem), times))
    return TransferTables(tuple(out))


def _numeric(problem: Mapping[str, Any] | None) -> tuple[tuple[str, float], ...]:
    return tuple(sorted((k, float(v)) for k, v in (problem or {}).items()
                        if isinstance(v, int | float) and not isinstance(v, bool)))


def shape_features(problem: Mapping[str, Any] | Sequence[tuple[str, float]],
                   names: Sequence[str]) -> np.ndarray:
    """The base-2 logs of *problem*'s sizes *names* (a size below 1 counts as 1)."""
    sizes = dict(problem)
    return np.array([math.log2(max(float(sizes[n]), 1.0)) for n in names])


def _shared_sizes(training: TransferTables, problem: Mapping[str, Any]) -> list[str]:
    """The numeric sizes the scored *problem* and every training table have."""
    names = {k for k, _v in _numeric(problem)}
    for t in training.tables:
        names &= {k for k, _v in t.problem}
    return sorted(names)


def fixed_list(training: TransferTables, k: int = FIXED_LIST_SIZE) -> list[str]:
    """The *k* configs of lowest mean normalized rank over the training tables (ties by key)."""
    if not training.tables:
        return []
    ranks: dict[str, float] = {}
    for t in training.tables:
        ordered = sorted(t.times, key=lambda kv: (kv[1], kv[0]))
        scale = max(len(ordered) - 1, 1)
        for i, (key, _ms) in enumerate(ordered):
            ranks[key] = ranks.get(key, 0.0) + i / scale - 1.0  # 1 (absent) is the default below
    n = len(training.tables)
    mean = {key: (n + total) / n for key, total in ranks.items()}
    return sorted(mean, key=lambda key: (mean[key], key))[:k]


def winners_first(training: TransferTables, problem: Mapping[str, Any]) -> list[str]:
    """The training tables' winners, the winner of the table of nearest shape first (ties by key)."""
    names = _shared_sizes(training, problem)
    here = shape_features(_numeric(problem), names)
    ranked = sorted((float(np.linalg.norm(shape_features(t.problem, names) - here)), t.winner)
                     for t in training.tables)
    return list(dict.fromkeys(key for _d, key in ranked))


def _greedy_configs(training: TransferTables, most: int) -> list[str]:
    """Up to *most* of the tables' winners, each the one that most lowers the summed log slowdown of
    every table's best chosen config (a config a table lacks counts as its slowest; ties by key)."""
    candidates = sorted({t.winner for t in training.tables})
    slow = []  # per table: log slowdown of each candidate there
    for t in training.tables:
        times = dict(t.times)
        best, worst = min(times.values()), max(times.values())
        slow.append(np.array([math.log(times.get(c, worst) / best) for c in candidates]))
    loss = np.array([math.log(max(dict(t.times).values()) / min(dict(t.times).values()))
                     for t in training.tables])
    chosen: list[int] = []
    while len(chosen) < min(most, len(candidates)):
        totals = [np.minimum(loss, [s[c] for s in slow]).sum() if c not in chosen else math.inf
                  for c in range(len(candidates))]
        pick = int(np.argmin(totals))  # the first of equal totals: candidates are sorted by key
        chosen.append(pick)
        loss = np.minimum(loss, [s[pick] for s in slow])
    return [candidates[c] for c in chosen]


def tree_list(training: TransferTables, problem: Mapping[str, Any],
              most: int = MAX_TREE_CONFIGS) -> list[str]:
    """The decision tree's config for *problem*, then the tree's other configs in the order chosen."""
    from sklearn.tree import DecisionTreeClassifier

    if not training.tables:
        return []
    configs = _greedy_configs(training, most)
    labels = [min(configs, key=lambda c, times=dict(t.times): (times.get(c, math.inf), configs.index(c)))
              for t in training.tables]
    names = _shared_sizes(training, problem)
    if len(set(labels)) < 2 or not names:
        return list(dict.fromkeys([labels[0], *configs]))
    X = np.stack([shape_features(t.problem, names) for t in training.tables])
    tree = DecisionTreeClassifier(max_leaf_nodes=most, random_state=0).fit(X, labels)
    predicted = str(tree.predict(shape_features(_numeric(problem), names)[None, :])[0])
    return [predicted, *(c for c in configs if c != predicted)]


def zero_shot_order(rule: str, training: TransferTables, problem: Mapping[str, Any]) -> list[str]:
    """The ranked list of keys the zero-shot sampler *rule* (one of :data:`TRAINED`) tries first."""
    if rule == "fixed-list":
        return fixed_list(training)
    if rule == "decision-tree":
        return tree_list(training, problem)
    if rule == "winners-first":
        return winners_first(training, problem)
    raise ValueError(f"No zero-shot rule {rule!r}; the rules are {', '.join(TRAINED)}.")


def _snap(value: Any, domain: tuple[Any, ...]) -> int | None:
    """The index of *value* in *domain*; for a number outside it, of the nearest value on a log2
    scale (the first on a tie); ``None`` for any other value."""
    if value in domain:
        return domain.index(value)
    numbers = [v for v in domain if isinstance(v, int | float) and not isinstance(v, bool)]
    if len(numbers) != len(domain) or not isinstance(value, int | float):
        return None
    distance = [abs(math.log2(max(float(v), 1e-9)) - math.log2(max(float(value), 1e-9))) for v in domain]
    return int(np.argmin(distance))


def nearest_feasible(context: SearchContext, picks: Sequence[Mapping[str, Any]]) -> list[str]:
    """For each of *picks* (parameter values, some perhaps outside the domains or infeasible for the
    shape), the feasible config fewest value steps from it over the parameters it names (ties by
    key): itself when it is feasible. Each config once, in the order of *picks*."""
    params = context.space.free_params()
    ordinal = candidate_ordinals(context)
    by_key = np.argsort(np.array(context.keys, dtype=object), kind="stable")
    out = []
    for pick in picks:
        snapped = {j: _snap(pick[p.name], p.values) for j, p in enumerate(params) if p.name in pick}
        columns = [j for j, index in snapped.items() if index is not None]
        if not columns:
            continue
        steps = np.abs(ordinal[by_key][:, columns] - np.array([snapped[j] for j in columns])).sum(axis=1)
        out.append(context.keys[int(by_key[int(np.argmin(steps))])])
    return list(dict.fromkeys(out))


def key_values(key: str) -> dict[str, Any]:
    """A config key's values (``"BLOCK_M=64,num_warps=4"``; numbers as numbers)."""
    values: dict[str, Any] = {}
    for pair in key.split(","):
        name, _sep, text = pair.partition("=")
        try:
            values[name] = int(text)
        except ValueError:
            try:
                values[name] = float(text)
            except ValueError:
                values[name] = text
    return values


class ListFirstSampler(CandidateSampler):
    """Proposes the feasible configs of a ranked list first, then hands every suggestion to *then*.

    Args:
        context: The space and its feasible configs.
        keys: Config keys, best first; keys that are not feasible configs of *context* are skipped.
        then: The sampler of every suggestion once the list's configs are evaluated (or held by
            running trials); it reads the whole study, the list's measurements included, and
            samples every parameter jointly (as flysearch's candidate samplers do).

    A listed config that the study has evaluated already, or that a running trial holds, is
    skipped, so workers sharing a study spread over the list.
    """

    def __init__(self, context: SearchContext, keys: Sequence[str], then: BaseSampler) -> None:
        super().__init__(context, None)
        self._history = CandidateHistory(context)
        index = self._history.index
        self.order: list[int] = list(dict.fromkeys(index[k] for k in keys if k in index))
        self._then = then

    def sample_relative(self, study: Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        taken = self._history.seen | self._history.update(study)
        for i in self.order:
            if i not in taken:
                return self._context.space.encode(self._context.feasible[i], self._context.encoding)
        return self._then.sample_relative(study, trial, search_space)

    def sample_independent(self, study: Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        return self._then.sample_independent(study, trial, param_name, param_distribution)

    def reseed_rng(self) -> None:
        self._then.reseed_rng()
