"""A scikit-learn cost model that ranks configs before they are compiled.

:class:`CostModel` is a regressor over the features of :mod:`flysearch.costmodel`. Its targets are
built per problem (per table, the ``groups`` argument of :meth:`CostModel.fit`) from raw times:

* ``objective="log_ratio"``: ``log(time / best time of the group)`` — how far from the group's
  optimum, comparable across problems of very different scale;
* ``objective="rank"``: ``log1p(rank) / log1p(n)`` within the group — a pointwise ranking target
  that weighs the top of each problem most and ignores how slow the slow configs are.

With ``top_boost > 0`` each row weighs ``1 + top_boost * exp(-rank / top_scale)`` in the
boosters' loss, its rank (0: fastest) within its group: a search compiles the top of the order, so
errors there cost most (the emphasis LambdaMART gets from its pair weights, here as plain sample
weights). :func:`fit_prior` trains such a *sharp* model beside the plain one and
:meth:`Prior.at` scores with it on the (space, arch) pairs the prior was trained on: across shapes
on one GPU a shape's top transfers, across GPUs only the bulk of the order does.

Failed configs are given a time of twice their group's worst success before the targets are built,
so the model learns where kernels fail. :class:`Prior` bundles a fitted model with its feature
schema and provenance (tables, date, versions); :func:`fit_prior` trains one on ground-truth tables
and :func:`Prior.save` / :func:`load_prior` keep it on disk. When the tables (of one kernel) come
from several devices, the prior also holds one model per device (:attr:`Prior.sources`): a search on
another GPU can then learn which of those GPUs its own measurements resemble
(:class:`~flysearch.samplers._costmodel.CostModelSampler`).

Example:
    >>> import numpy as np
    >>> X = np.array([[0.0], [1.0], [2.0], [3.0]]); y = np.array([1.0, 2.0, 4.0, 8.0])
    >>> int(CostModel(max_iter=20).fit(X, y).predict(X).argmin())
    0
"""

from __future__ import annotations

import datetime as _dt
import functools
import importlib.metadata
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from numbers import Integral, Real
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.ensemble import HistGradientBoostingRegressor
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data
from threadpoolctl import ThreadpoolController

from flysearch.costmodel._features import (
    OCCUPANCY_WAVE_FEATURES,
    Columns,
    columns_matrix,
    feature_columns,
    gemm_roles,
)
from flysearch.errors import FlysearchError, InputFormatError
from flysearch.space import table_profile

if TYPE_CHECKING:
    from flysearch.space import ArchProfile
    from flysearch.tables import GroundTruth

__all__ = ["OBJECTIVES", "CostModel", "Prior", "check_prior_fits", "fit_prior",
           "load_prior", "occupancy_views", "table_arch", "table_target", "target_key", "training_data",
           "walks"]

OBJECTIVES = ("log_ratio", "rank")


def _group_ranks(y: np.ndarray) -> np.ndarray:
    """Each time's rank within its group (0: the fastest; ties in order of position)."""
    return np.argsort(np.argsort(y, kind="stable"), kind="stable")


def _group_targets(y: np.ndarray, objective: str) -> np.ndarray:
    if objective == "log_ratio":
        return np.log(y / y.min())
    return np.log1p(_group_ranks(y)) / np.log1p(max(len(y) - 1, 1))


class CostModel(RegressorMixin, BaseEstimator):
    """Gradient-boosted regression of a config's distance from its problem's optimum.

    Parameters
    ----------
    objective : {"log_ratio", "rank"}, default="log_ratio"
        How raw times become targets within each group (see the module docstring).
    max_iter : int, default=300
        Boosting iterations.
    learning_rate : float, default=0.08
        Shrinkage.
    max_leaf_nodes : int, default=31
        Leaves per tree.
    l2_regularization : float, default=0.0
        L2 penalty on leaf values.
    top_boost : float, default=0.0
        Extra weight of each group's fastest row in the loss; a row of rank r (0: fastest) weighs
        ``1 + top_boost * exp(-r / top_scale)``. 0 weighs every row alike.
    top_scale : float, default=30.0
        Rank over which the extra weight decays by a factor e.
    feature_views : tuple of (tuple of int or None), or None, default=None
        Column indices each member of the ensemble sees (``None`` in the tuple: every column); one
        booster per view, predictions averaged. ``None``: one view
        of every column. :func:`fit_prior` averages a view without the occupancy-wave features
        and one with them.
    random_state : int, RandomState instance or None, default=0
        Seed of the booster.
    n_threads : int or None, default=1
        OpenMP threads for fit and predict (``None``: the library default). One thread is the
        default because the booster's threads spin against any other busy process on a small
        machine (seen here: a 3 s fit took minutes beside a second job on 2 cores).

    Attributes
    ----------
    boosters_ : list of HistGradientBoostingRegressor
        The fitted boosters, one per view (one with the defaults).
    views_ : list of (ndarray of int or None)
        The columns each booster of ``boosters_`` saw (``None``: all).
    n_iter_ : int
        Boosting iterations run by each booster.
    n_features_in_ : int
        Number of features seen in ``fit``.
    """

    _parameter_constraints: ClassVar[dict[str, list[Any]]] = {
        "objective": [StrOptions(set(OBJECTIVES))],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "max_leaf_nodes": [Interval(Integral, 2, None, closed="left")],
        "l2_regularization": [Interval(Real, 0, None, closed="left")],
        "top_boost": [Interval(Real, 0, None, closed="left")],
        "top_scale": [Interval(Real, 0, None, closed="neither")],
        "feature_views": [tuple, None],
        "random_state": ["random_state"],
        "n_threads": [Interval(Integral, 1, None, closed="left"), None],
    }

    def __init__(self, *, objective: str = "log_ratio", max_iter: int = 300, learning_rate: float = 0.08,
                 max_leaf_nodes: int = 31, l2_regularization: float = 0.0,
                 top_boost: float = 0.0, top_scale: float = 30.0,
                 feature_views: tuple[tuple[int, ...] | None, ...] | None = None, random_state: Any = 0,
                 n_threads: int | None = 1) -> None:
        self.objective = objective
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.max_leaf_nodes = max_leaf_nodes
        self.l2_regularization = l2_regularization
        self.top_boost = top_boost
        self.top_scale = top_scale
        self.feature_views = feature_views
        self.random_state = random_state
        self.n_threads = n_threads

    def __sklearn_tags__(self) -> Any:
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.target_tags.positive_only = True
        # predict() returns the per-group target (a log ratio or a rank), not the raw time, so
        # R^2 against raw times says nothing; rankings are what to judge it by.
        tags.regressor_tags.poor_score = True
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X: Any, y: Any, groups: Any = None) -> CostModel:
        """Fit on features *X* and positive times *y*, one group per problem (``None``: one group)."""
        X, y = validate_data(self, X, y, ensure_all_finite="allow-nan", y_numeric=True)
        y = np.asarray(y, dtype=float)
        if np.any(y <= 0):
            raise ValueError("CostModel needs positive times; give failed configs a penalty time first.")
        groups = np.zeros(len(y)) if groups is None else np.asarray(groups)
        if groups.shape != y.shape:
            raise ValueError(f"groups has shape {groups.shape}, y has {y.shape}.")
        target, weight = np.empty_like(y), np.empty_like(y)
        for g in np.unique(groups):
            mask = groups == g
            target[mask] = _group_targets(y[mask], self.objective)
            weight[mask] = 1.0 + self.top_boost * np.exp(-_group_ranks(y[mask]) / self.top_scale)
        views = self._views(X.shape[1])
        sample_weight = weight / weight.mean() if self.top_boost > 0 else None
        with _openmp_threads(self.n_threads):
            self.boosters_ = [HistGradientBoostingRegressor(
                max_iter=self.max_iter, learning_rate=self.learning_rate,
                max_leaf_nodes=self.max_leaf_nodes, l2_regularization=self.l2_regularization,
                random_state=self.random_state, early_stopping=False,
            ).fit(X if view is None else X[:, view], target, sample_weight=sample_weight) for view in views]
        self.views_ = views
        self.n_iter_ = self.boosters_[0].n_iter_
        return self

    def predict(self, X: Any) -> np.ndarray:
        """Predicted target (lower is faster) for each row of *X*."""
        check_is_fitted(self)
        X = validate_data(self, X, ensure_all_finite="allow-nan", reset=False)
        with _openmp_threads(self.n_threads):
            # A prior saved before the model kept a list of boosters holds its one as ``model_``.
            boosters = getattr(self, "boosters_", None) or [self.model_]
            views = getattr(self, "views_", None) or [None] * len(boosters)  # saved before views
            return np.mean([booster.predict(X if view is None else X[:, view])
                            for booster, view in zip(boosters, views, strict=True)], axis=0)

    def _views(self, n_features: int) -> list[np.ndarray | None]:
        if self.feature_views is None:
            return [None]
        views = [None if v is None else np.asarray(v, dtype=int) for v in self.feature_views]
        bad = [v for v in views if v is not None and (
            v.ndim != 1 or not v.size or v.min() < 0 or v.max() >= n_features)]
        if not views or bad:
            raise ValueError(f"feature_views takes non-empty tuples of column indices below {n_features}.")
        return views


@functools.cache
def _controller() -> ThreadpoolController:
    """This process's thread pools, found once (looking them up takes 3-20 ms, each time)."""
    return ThreadpoolController()


def _openmp_threads(n: int | None) -> Any:
    """A context in which OpenMP uses *n* threads (``None``: unchanged)."""
    return _controller().limit(limits=n, user_api="openmp")


def table_arch(table: GroundTruth) -> ArchProfile | None:
    """The arch profile a table names (with its device's CU/SM count), or ``None``."""
    return table_profile(table.meta.arch, table.meta.device)


def _penalized_times(table: GroundTruth) -> tuple[list[Any], np.ndarray]:
    rows = list(table.rows.values())
    ok = [r.time_ms for r in rows if r.ok]
    if not ok:
        raise FlysearchError(f"Table {table.name!r} has no successful row to train on.")
    penalty = 2.0 * max(ok)
    return rows, np.array([r.time_ms if r.ok else penalty for r in rows], dtype=float)


def training_data(
    tables: Sequence[GroundTruth], *, resources: bool = False, exclude: Iterable[str] = ()
) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray]:
    """Feature schema, feature matrix, times (failures penalized) and group ids of every row of
    *tables* (the schema: every feature any row has, sorted, but those named in *exclude*; a row
    that lacks one has NaN).

    With *resources*, compile-time resources recorded in the rows become features too (useful
    for ranking compiled configs; a prior that ranks *before* compiling leaves them out).

    Raises:
        FlysearchError: *exclude* names a feature no row has.
    """
    parts: list[tuple[Columns, int]] = []
    times, groups = [], []
    for gid, table in enumerate(tables):
        rows, y = _penalized_times(table)
        parts.append((feature_columns([r.params for r in rows], table.meta.problem, table_arch(table),
                                      [r.extra for r in rows] if resources else None), len(rows)))
        times.append(y)
        groups.append(np.full(len(rows), gid))
    schema = sorted({name for columns, _n in parts for name in columns})
    excluded = set(exclude)
    unknown = sorted(excluded - set(schema))
    if unknown:
        raise FlysearchError(f"No table has the feature {', '.join(unknown)} to leave out; "
                             f"the features are {', '.join(schema)}.")
    schema = [name for name in schema if name not in excluded]
    matrix = np.vstack([columns_matrix(columns, schema, n) for columns, n in parts])
    return schema, matrix, np.concatenate(times), np.concatenate(groups)


@dataclass
class Prior:
    """A fitted :class:`CostModel` with its feature schema and provenance.

    Attributes:
        sharp: The same features and objective fitted with the top of each table weighted
            (:class:`CostModel`'s ``top_boost``), or ``None``; :meth:`at` scores with it on the
            (space, arch) pairs of ``provenance["targets"]``.
        sources: When the training tables (of one kernel) come from several devices, one prior per
            device, trained on that device's tables alone, in the order of
            ``provenance["sources"]``; empty otherwise. Shapes measured on one device are learned
            jointly by one model: a source is a device, not a table.
    """

    model: CostModel
    schema: list[str]
    provenance: dict[str, Any] = field(default_factory=dict)
    sources: list[Prior] = field(default_factory=list)
    sharp: CostModel | None = None

    def at(self, target: str | None) -> Prior:
        """The prior that scores configs of *target* (a :func:`target_key`): on a (space, arch)
        it was trained on, its :attr:`sharp` model when it has one; anywhere else itself.

        Leave-one-shape-out on the 27 H200 tables, the sharp model put the first config within 1%
        of the optimum at rank <= 8 on all 27 (sum of the ranks 66), the plain one on 24 (sum
        114); leave-one-GPU-out on benchmark_hub, where a shape's top does not transfer, the sharp
        one needed more compiles on every table (``lab/benchmarks/results/top_weight.md``).
        """
        if self.sharp is None or target not in self.provenance.get("targets", ()):
            return self
        return Prior(self.sharp, self.schema, self.provenance, self.sources)

    def score(self, params: Sequence[Mapping[str, Any]], problem: Mapping[str, Any],
              arch: ArchProfile | None, resources: Sequence[Mapping[str, Any]] | None = None) -> np.ndarray:
        """Predicted targets (lower is faster) of configs *params* on (*problem*, *arch*)."""
        return self.score_columns(feature_columns(params, problem, arch, resources or None), len(params))

    def score_columns(self, columns: Columns, n: int) -> np.ndarray:
        """:meth:`score` of *n* configs whose features are computed already (as
        :func:`~flysearch.costmodel.feature_columns` gives them)."""
        return self.model.predict(columns_matrix(columns, self.schema, n))

    def save(self, path: str | Path) -> None:
        """Write the prior to *path* (joblib), whole or not at all: a file it replaces stays as it
        was until the new one is complete (:func:`~flysearch._atomicfile.atomic_write`), so a
        killed or failed ``model train`` never destroys the prior it was to replace."""
        import joblib

        from flysearch._atomicfile import atomic_write

        doc = {"format": "flysearch-prior/1", "model": self.model, "schema": self.schema,
               "provenance": self.provenance,
               "sources": [(src.model, src.schema, src.provenance) for src in self.sources],
               "sharp": self.sharp}
        with atomic_write(path, "wb") as fh:
            joblib.dump(doc, fh)


# Priors this process loaded with reuse=True: resolved path -> ((size, mtime), prior).
_LOADED: dict[str, tuple[tuple[int, int], Prior]] = {}


def load_prior(path: str | Path, *, reuse: bool = False) -> Prior:
    """Load a prior written by :meth:`Prior.save`.

    With *reuse*, a prior this process loaded (with *reuse*) from the same file is returned again
    while the file is unchanged (its size and modification time): a worker server's study process
    loads the priors it serves before a study asks (``flysearch serve --prior``). Nothing modifies
    a loaded prior, so the studies of one process can share it.
    """
    if not reuse:
        return _read_prior(path)
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError:
        raise InputFormatError(f"Model file {path} does not exist.") from None
    stamp = (st.st_size, st.st_mtime_ns)
    known = _LOADED.get(real)
    if known is not None and known[0] == stamp:
        return known[1]
    prior = _read_prior(real)
    _LOADED[real] = (stamp, prior)
    return prior


def _not_a_prior(path: str | Path, what: str) -> InputFormatError:
    return InputFormatError(
        f"Model file {path} is {what}; train one with 'flysearch model train --out {path}'."
    )


def _read_prior(path: str | Path) -> Prior:
    import joblib

    try:
        doc = joblib.load(path)
    except FileNotFoundError:
        raise InputFormatError(f"Model file {path} does not exist.") from None
    except Exception:  # random bytes, another pickle, a truncated file: joblib's errors say nothing
        raise _not_a_prior(path, "not a flysearch model file (joblib cannot read it)") from None
    if not isinstance(doc, dict) or doc.get("format") != "flysearch-prior/1":
        raise _not_a_prior(path, "not a flysearch model file (it holds no flysearch prior)")
    try:
        sources = [Prior(model, list(schema), dict(prov)) for model, schema, prov in doc.get("sources", [])]
        return Prior(doc["model"], list(doc["schema"]), dict(doc["provenance"]), sources,
                     doc.get("sharp"))
    except (KeyError, TypeError, ValueError) as exc:
        raise _not_a_prior(path, f"not a whole flysearch model file (it lacks {exc})") from None


def fit_prior(tables: Sequence[GroundTruth], *, objective: str = "rank", sources: bool = True,
              top_boost: float = 15.0, top_scale: float = 30.0,
              exclude_features: Iterable[str] = (), **params: Any) -> Prior:
    """Train a prior on *tables* (all their rows, failures penalized).

    The default objective is ``"rank"``: left out one shape at a time, it ranks each H200 table's
    best configs nearer the top than ``"log_ratio"`` does, and its worst case is far better (the
    numbers: ``flysearch model eval --file 'lab/benchmarks/data/h200/*.table.json.gz' --sampler none
    --objective rank|log_ratio --top-boost 0``, the plain model a study on another arch scores
    with; :attr:`Prior.sharp` does better on its own arch).

    With *sources*, and tables of one kernel from two or more devices, one prior per device is
    trained too (:attr:`Prior.sources`). Tables of several kernels are pooled only: weighing a
    device means something only for the kernel it measured.

    The prior averages two boosters, one that sees the occupancy-wave features and one that does
    not (:func:`occupancy_views`; a ``feature_views`` in *params* replaces them); with *top_boost*
    > 0 a second, top-weighted model is fitted on the same rows (:attr:`Prior.sharp`; *top_boost*
    and *top_scale* as :class:`CostModel` takes them); *exclude_features* are features the prior
    never sees: e.g. ``g_split_fixed`` (split-K's fixed cost) for a prior trained on split-K tables
    to rank a family without split-K, which it ranks worse with that feature
    (``lab/benchmarks/results/cross_kernel_exclude.md``). *params* go to :class:`CostModel`.
    """
    exclude_features = tuple(exclude_features)
    if not tables:
        raise FlysearchError("A prior needs at least one table to train on.")
    by_device: dict[str, list[GroundTruth]] = {}
    for table in tables:
        by_device.setdefault(table.meta.device, []).append(table)
    per_device = []
    if sources and len(by_device) > 1 and len({t.meta.kernel for t in tables}) == 1:
        per_device = [fit_prior(group, objective=objective, sources=False, top_boost=0.0,
                                exclude_features=exclude_features, **params)
                      for group in by_device.values()]
    schema, features, times, groups = training_data(tables, exclude=exclude_features)
    params.setdefault("feature_views", occupancy_views(schema))
    model = CostModel(objective=objective, **params).fit(features, times, groups)
    sharp = CostModel(objective=objective, top_boost=top_boost, top_scale=top_scale, **params).fit(
        features, times, groups) if top_boost > 0 else None
    provenance = {
        "tables": [t.name for t in tables], "targets": sorted({table_target(t) for t in tables}),
        "target_params": {target: sorted({p["name"] for t in tables if table_target(t) == target
                                          for p in t.meta.space.get("params", [])})
                          for target in sorted({table_target(t) for t in tables})},
        "objective": objective,
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "versions": {pkg: _version(pkg) for pkg in ("flysearch", "scikit-learn", "numpy")},
        "rows": len(times),
    }
    if model.feature_views is not None:  # the features each booster left out
        provenance["feature_views"] = [[] if view is None else sorted(set(schema) - {schema[j] for j in view})
                                       for view in model.feature_views]
    if exclude_features:
        provenance["excluded_features"] = sorted(exclude_features)
    if per_device:
        provenance["sources"] = list(by_device)
    if sharp is not None:
        provenance["sharp"] = {"top_boost": top_boost, "top_scale": top_scale}
    return Prior(model, schema, provenance, per_device, sharp)


def occupancy_views(schema: Sequence[str]) -> tuple[tuple[int, ...] | None, ...] | None:
    """The feature views of a prior's boosters over *schema*, as :class:`CostModel` takes them.

    The occupancy-wave features (:data:`~flysearch.costmodel._features.OCCUPANCY_WAVE_FEATURES`) are
    seen by one of two boosters whose predictions are averaged. Leave-one-shape-out on the 27 H200
    tables the average ordered the configs better than either alone: a config within 1% of the
    optimum at rank <= 8 on 24 tables, against 21 without them and 23 with them in one booster
    (``lab/benchmarks/costmodel_eval.py --occupancy-waves``). A schema without them has one view.

    Example:
        >>> occupancy_views(["g_occ_waves", "g_tiles", "p_BLOCK_M"])
        ((1, 2), None)
    """
    without = tuple(j for j, name in enumerate(schema) if name not in OCCUPANCY_WAVE_FEATURES)
    return None if len(without) == len(schema) or not without else (without, None)


def check_prior_fits(prior: Prior, parameters: Iterable[str], what: str, *,
                     problem: Mapping[str, Any] | None = None, arch: ArchProfile | None = None) -> None:
    """Refuse a prior that was trained on none of *parameters* (those of *what*, a space or a
    table): its scores would not depend on the config at all. Given the *problem* (and *arch*) the
    prior is to score, refuse it too where it was trained on GEMM shapes (or on archs) and *what*
    gives none: every shape feature would be missing, and the prior would rank the same configs
    first on every shape; the message names the declaration to import the table with.

    Example:
        >>> prior = Prior(CostModel(), ["p_BLOCK_M", "p_dtype=bf16", "s_log2_M"])
        >>> check_prior_fits(prior, ["BLOCK_M", "num_warps"], "space triton_gemm")
        >>> check_prior_fits(prior, ["block_size_x"], "table conv/A100")
        Traceback (most recent call last):
        ...
        flysearch.errors.InputFormatError: The model was trained on none of the parameters of table \
conv/A100 (block_size_x); train one on tables of this kernel ('flysearch model train'), or name \
them as it does (tables import --rename).
    """
    names = list(parameters)
    trained = {f[2:].split("=", 1)[0] for f in prior.schema if f.startswith("p_")}
    if trained.isdisjoint(names):
        raise InputFormatError(
            f"The model was trained on none of the parameters of {what} ({', '.join(names)}); train one on "
            "tables of this kernel ('flysearch model train'), or name them as it does "
            "(tables import --rename)."
        )
    if problem is None:
        return
    gemm_only = "s_log2_M" in prior.schema and not any(f.startswith("s_log2_size") for f in prior.schema)
    if gemm_only and not all(k in problem for k in ("M", "N", "K")):
        raise InputFormatError(
            f"The model was trained on GEMM shapes, but {what} gives no M, N, K; import its table with "
            "--shape MxNxK (or --shape problem_size:MNK in problem_size's order)."
        )
    if gemm_only and not gemm_roles(dict.fromkeys(names, 1)):
        raise InputFormatError(
            f"The model was trained on GEMM tiles, but none of the parameters of {what} ({', '.join(names)}) "
            "names a tile; name them as it does with tables import --rename (e.g. BM=BLOCK_M)."
        )


def walks(prior: Prior, target: str | None, parameters: Iterable[str]) -> bool:
    """Whether *prior* was trained on the kernel family and arch of *target* (a :func:`target_key`)
    with these *parameters*: then its order transfers across shapes and a study may walk it. A
    table measured elsewhere qualifies once imported with the family's name and parameter names
    (``tables import --kernel ... --rename ...``)."""
    if target is None or target not in prior.provenance.get("targets", ()):
        return False
    trained = prior.provenance.get("target_params", {}).get(target)
    return trained is None or sorted(trained) == sorted(parameters)


def target_key(space: str, arch: str) -> str:
    """``space@arch``: what a prior's provenance ``targets`` lists for each (space, arch) it was
    trained on, and what a study looks its own up by."""
    return f"{space}@{arch}"


def table_target(table: GroundTruth) -> str:
    """The :func:`target_key` of the kernel family's space and the arch a table measured it on."""
    return target_key(table.meta.space.get("name", table.meta.kernel), table.meta.arch)


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
