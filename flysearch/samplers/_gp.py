"""A fast Gaussian-process sampler over the feasible configs: exact GP regression in numpy.

:class:`FeasibleGPSampler` (``"fastgp"``) scores every feasible config the study has not evaluated
(nor is evaluating) and proposes the one with the highest expected improvement; it never proposes
an infeasible or already-evaluated config. It is built for discrete, pruned spaces of a few
thousand configs, where Optuna's ``GPSampler`` (torch, a continuous acquisition optimizer, and
duplicates answered from history) costs hundreds of ms per trial.

* **Inputs**: each numeric parameter as the rank of its value in sorted order (a power-of-two tile
  size is its log2 ordinal), scaled to [0, 1]; a non-numeric parameter one-hot.
* **Target**: log time, standardized; a config that failed gets the worst log time seen plus log 2
  (the cost-model sampler's rule), a rejected one is only excluded.
* **Model**: a Matern-5/2 kernel with one length scale per input (ARD), a signal variance and a
  noise variance, fitted by L-BFGS-B on the log marginal likelihood with its analytic gradient,
  warm-started from the last fit. Refits happen when the measurements have grown by half since the
  last one (10, 15, 22, 33, ...), so a 200-compile study refits about eight times.
* **Between refits** each new measurement extends the Cholesky factor by one row and the cached
  ``L^-1 K(X, candidates)`` by one row, so a suggestion costs ``O(n N)`` for n measurements and N
  candidates instead of ``O(n^2 N)``.

The first *n_startup* suggestions are uniform draws among the unevaluated configs (seeded).

Example:
    >>> from flysearch.samplers._gp import matern52
    >>> import numpy as np
    >>> float(matern52(np.zeros((1, 2)), np.zeros((1, 2)), np.ones(2))[0, 0])
    1.0
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.linalg import cho_solve, solve_triangular
from scipy.optimize import minimize
from scipy.special import ndtr

from flysearch.samplers._history import CandidateHistory, CandidateSampler

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution
    from optuna.study import Study
    from optuna.trial import FrozenTrial

    from flysearch.samplers._context import SearchContext

__all__ = ["FeasibleGPSampler", "matern52"]

_SQRT5 = math.sqrt(5.0)
# NOTE(flysearch): bounds of the log hyperparameters on inputs scaled to [0, 1] and a standardized
# target: length scales 0.03..30, signal variance 0.05..20, noise variance 1e-6..0.5 (replayed
# tables are deterministic, but a failure's penalty and a plateau of equal times act as noise).
_BOUNDS_LOG_LS = (math.log(0.03), math.log(30.0))
_BOUNDS_LOG_SIGNAL = (math.log(0.05), math.log(20.0))
_BOUNDS_LOG_NOISE = (math.log(1e-6), math.log(0.5))
_JITTER = 1e-9


def _scaled_sq_dist(a: np.ndarray, b: np.ndarray, ls: np.ndarray) -> np.ndarray:
    """Squared distances between the rows of *a* and *b*, each input divided by its length scale."""
    a, b = a / ls, b / ls
    d2 = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * a @ b.T
    return np.maximum(d2, 0.0)


def matern52(a: np.ndarray, b: np.ndarray, ls: np.ndarray, signal: float = 1.0) -> np.ndarray:
    """The Matern-5/2 ARD kernel matrix ``k(a_i, b_j)``."""
    r = np.sqrt(_scaled_sq_dist(a, b, ls))
    return signal * (1.0 + _SQRT5 * r + (5.0 / 3.0) * r * r) * np.exp(-_SQRT5 * r)


def _neg_lml(theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """Negative log marginal likelihood and its gradient in ``(log ls..., log signal, log noise)``."""
    d = X.shape[1]
    ls, signal, noise = np.exp(theta[:d]), math.exp(theta[d]), math.exp(theta[d + 1])
    diff2 = ((X[:, None, :] - X[None, :, :]) / ls) ** 2  # n x n x d
    r = np.sqrt(diff2.sum(-1))
    e = np.exp(-_SQRT5 * r)
    k0 = (1.0 + _SQRT5 * r + (5.0 / 3.0) * r * r) * e
    K = signal * k0 + (noise + _JITTER) * np.eye(len(y))
    try:
        L = np.linalg.cholesky(K)
    except np.linalg.LinAlgError:
        return 1e10, np.zeros_like(theta)
    alpha = cho_solve((L, True), y)
    nll = 0.5 * y @ alpha + np.log(np.diag(L)).sum() + 0.5 * len(y) * math.log(2 * math.pi)
    W = np.outer(alpha, alpha) - cho_solve((L, True), np.eye(len(y)))
    # dk/dlog(ls_j) = signal * 5/3 * (1 + sqrt5 r) exp(-sqrt5 r) * (dx_j / ls_j)^2
    dk_common = signal * (5.0 / 3.0) * (1.0 + _SQRT5 * r) * e
    grad = np.empty_like(theta)
    grad[:d] = -0.5 * np.einsum("ij,ijk->k", W * dk_common, diff2)
    grad[d] = -0.5 * np.sum(W * (signal * k0))
    grad[d + 1] = -0.5 * np.trace(W) * noise
    return float(nll), grad


def _inputs(context: SearchContext) -> np.ndarray:
    """Numeric parameters as ranks scaled to [0, 1], the others one-hot; constant ones dropped."""
    cols = []
    for p in context.space.free_params():
        if p.numeric:
            rank = {v: i for i, v in enumerate(p.values)}
            cols.append(np.array([rank[c[p.name]] for c in context.feasible], float) / (len(p.values) - 1))
        else:
            for v in p.values:
                cols.append(np.array([c[p.name] == v for c in context.feasible], float))
    if not cols:
        return np.zeros((len(context.feasible), 1))
    return np.column_stack(cols)


class FeasibleGPSampler(CandidateSampler):
    """Proposes the unevaluated feasible config of highest expected improvement under an exact GP.

    Args:
        context: The space, its feasible configs (the candidates) and the encoding of trial params.
        seed: Seed of the start-up draws.
        n_startup: Uniform random suggestions before the GP takes over.
        refit_growth: Refit the hyperparameters once the measurements grew by this factor.
        max_iter: L-BFGS-B iterations per refit.
        max_candidates: Spaces with more feasible configs are scored on a seeded subset this large.
    """

    def __init__(self, context: SearchContext, *, seed: int | None = None, n_startup: int = 10,
                 refit_growth: float = 1.5, max_iter: int = 50, max_candidates: int = 50_000) -> None:
        super().__init__(context, seed)
        self._n_startup = n_startup
        self._refit_growth = refit_growth
        self._max_iter = max_iter
        self._keys = context.keys
        self._Xall = _inputs(context)
        n = len(self._keys)
        if n > max_candidates:
            self._scored = np.sort(np.random.default_rng(seed).choice(n, max_candidates, replace=False))
        else:
            self._scored = np.arange(n)
        self._Xc = self._Xall[self._scored]
        self._history = CandidateHistory(context)
        self._observed = self._history.observed  # candidate index -> log time (nan: failed)
        self._seen = self._history.seen
        # The model: points in the Cholesky factor, in order, and its caches.
        self._theta: np.ndarray | None = None
        self._next_fit = n_startup
        self._pts: list[int] = []
        self._L = np.zeros((0, 0))
        self._V = np.zeros((0, len(self._scored)))  # rows of L^-1 K(X, candidates), grown by doubling
        self._vsq = np.zeros(len(self._scored))      # column sums of V**2

    # -- Optuna's sampler interface ---------------------------------------------------------------

    def sample_relative(self, study: Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        free_mask = self._history.free_mask(self._read_history(study))
        if len(self._observed) < max(self._n_startup, 2):
            pick = int(self._rng.choice(np.flatnonzero(free_mask)))
        else:
            pick = self._best_ei(free_mask)
        return self._context.space.encode(self._context.feasible[pick], self._context.encoding)

    # -- history ----------------------------------------------------------------------------------

    def _read_history(self, study: Study) -> set[int]:
        """Fold newly finished trials in; return the candidates that running trials hold."""
        return self._history.update(study)

    # -- the model --------------------------------------------------------------------------------

    def _targets(self) -> tuple[list[int], np.ndarray]:
        idx = list(self._observed)
        y = np.array([self._observed[i] for i in idx])
        finite = np.isfinite(y)
        penalty = (y[finite].max() + math.log(2.0)) if finite.any() else 0.0
        y = np.where(finite, y, penalty)
        std = y.std()
        return idx, (y - y.mean()) / (std if std > 0 else 1.0)

    def _fit(self, idx: list[int], y: np.ndarray) -> None:
        """Fit the hyperparameters and rebuild the factor and the candidate cache from scratch."""
        X = self._Xall[idx]
        d = X.shape[1]
        bounds = [_BOUNDS_LOG_LS] * d + [_BOUNDS_LOG_SIGNAL, _BOUNDS_LOG_NOISE]
        default = np.array([math.log(0.5)] * d + [0.0, math.log(1e-3)])
        starts = [default] if self._theta is None else [self._theta, default]
        best = None
        for x0 in starts:
            res = minimize(_neg_lml, x0, args=(X, y), jac=True, method="L-BFGS-B", bounds=bounds,
                           options={"maxiter": self._max_iter})
            if best is None or res.fun < best.fun:
                best = res
        assert best is not None
        self._theta = best.x
        self._pts = []
        self._L = np.zeros((0, 0))
        self._vsq = np.zeros(len(self._scored))
        self._extend(idx)
        self._next_fit = max(len(idx) + 1, math.ceil(len(idx) * self._refit_growth))

    def _hyper(self) -> tuple[np.ndarray, float, float]:
        assert self._theta is not None
        d = self._Xall.shape[1]
        return np.exp(self._theta[:d]), math.exp(self._theta[d]), math.exp(self._theta[d + 1])

    def _extend(self, new: list[int]) -> None:
        """Add measured points to the Cholesky factor and the candidate cache (hyperparameters fixed)."""
        if not new:
            return
        ls, signal, noise = self._hyper()
        Xn, Xo = self._Xall[new], self._Xall[self._pts]
        m, n = len(new), len(self._pts)
        K_on = matern52(Xo, Xn, ls, signal)                          # n x m
        K_nn = matern52(Xn, Xn, ls, signal) + (noise + _JITTER) * np.eye(m)
        B = solve_triangular(self._L, K_on, lower=True) if n else np.zeros((0, m))
        S = K_nn - B.T @ B
        try:
            C = np.linalg.cholesky(S)
        except np.linalg.LinAlgError:
            C = np.linalg.cholesky(S + 1e-6 * signal * np.eye(m))
        L = np.zeros((n + m, n + m))
        L[:n, :n], L[n:, :n], L[n:, n:] = self._L, B.T, C
        K_nc = matern52(Xn, self._Xc, ls, signal)                     # m x N
        V_new = solve_triangular(C, K_nc - B.T @ self._V[:n], lower=True)
        if self._V.shape[0] < n + m:
            grown = np.empty((max(2 * self._V.shape[0], n + m, 64), len(self._scored)))
            grown[:n] = self._V[:n]
            self._V = grown
        self._V[n:n + m] = V_new
        self._L = L
        self._vsq += (V_new * V_new).sum(0)
        self._pts += list(new)

    def _best_ei(self, free_mask: np.ndarray) -> int:
        idx, y = self._targets()
        if self._theta is None or len(idx) >= self._next_fit:
            self._fit(idx, y)
        else:
            in_model = set(self._pts)
            self._extend([i for i in idx if i not in in_model])
        pos = {i: j for j, i in enumerate(idx)}
        y_model = y[[pos[i] for i in self._pts]]
        beta = solve_triangular(self._L, y_model, lower=True)
        _ls, signal, _noise = self._hyper()
        mean = beta @ self._V[: len(self._pts)]
        sd = np.sqrt(np.maximum(signal - self._vsq, 1e-12))
        best = float(y_model.min())
        z = (best - mean) / sd
        ei = (best - mean) * ndtr(z) + sd * np.exp(-0.5 * z * z) / math.sqrt(2 * math.pi)
        free = free_mask[self._scored]
        if not free.any():
            return int(self._rng.choice(np.flatnonzero(free_mask)))
        # Highest EI; ties (EI underflows to 0 far from the data) go to the lowest mean, then order.
        ei = np.where(free, ei, -np.inf)
        ties = np.flatnonzero(ei == ei.max())
        return int(self._scored[ties[np.argmin(mean[ties])]])
