"""The L_p max-margin direction of a linearly separable set, by scipy, independently of any
training: the limit direction Theorems 4.7/4.8 predict for a linear (1-homogeneous)
classifier trained by mirror descent whose horizon function is the L_p norm (hypentropy:
p = 1, gradient descent: p = 2, the p-norm map: p).

    w_p = argmin ||w||_p  s.t.  y_i ⟨x_i, w⟩ ≥ 1 for every i,   y_i ∈ {−1, +1}

- p = 1: a linear program (w = u − v, u, v ≥ 0, minimise Σ u + v), ``scipy.optimize.linprog``
  with HiGHS.  Its solution need not be unique; HiGHS returns a vertex.
- p > 1: the dual of min ||w||_p^p / p s.t. A w ≥ 1 (rows a_i = y_i x_i), a bound-constrained
  smooth problem solved by L-BFGS-B:

      min_{μ ≥ 0} ||Aᵀμ||_q^q / q − Σ μ_i,   q = p / (p − 1),   w = sign(v)|v|^{q−1}, v = Aᵀμ

  (the primal is strictly convex: the direction is unique).

Either way the returned direction is checked to separate the samples.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linprog, minimize


def _rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if x.ndim != 2 or y.shape != (len(x),):
        raise ValueError(f"max_margin needs x of shape (n, d) and y of shape (n,); got "
                         f"{x.shape} and {y.shape}")
    if not np.all(np.abs(y) == 1):
        raise ValueError("max_margin needs labels y in {-1, +1}")
    return y[:, None] * x


def _l1(a: np.ndarray) -> np.ndarray:
    n, d = a.shape
    result = linprog(np.ones(2 * d), A_ub=-np.hstack([a, -a]), b_ub=-np.ones(n),
                     bounds=(0, None), method="highs")
    if result.status != 0:
        raise ValueError(f"max_margin p = 1: the data are not linearly separable through the "
                         f"origin ({result.message})")
    return result.x[:d] - result.x[d:]


def _lp_dual(a: np.ndarray, p: float) -> np.ndarray:
    q = p / (p - 1.0)

    def primal(mu: np.ndarray) -> np.ndarray:
        v = a.T @ mu
        return np.sign(v) * np.abs(v) ** (q - 1.0)

    def objective(mu: np.ndarray) -> tuple[float, np.ndarray]:
        v = a.T @ mu
        value = float(np.sum(np.abs(v) ** q) / q - mu.sum())
        return value, a @ primal(mu) - 1.0

    start = np.full(len(a), 1.0 / len(a))
    result = minimize(objective, start, jac=True, method="L-BFGS-B",
                      bounds=[(0.0, None)] * len(a),
                      options={"maxiter": 20000, "maxfun": 40000, "ftol": 1e-15,
                               "gtol": 1e-12})
    if not np.isfinite(result.fun) or result.fun < -1e12:
        raise ValueError(f"max_margin p = {p:g}: the data are not linearly separable "
                         "through the origin (the dual is unbounded)")
    return primal(result.x)


def max_margin(x: np.ndarray, y: np.ndarray, p: float) -> np.ndarray:
    """The L_p max-margin direction of the samples ``x`` (n, d) with labels ``y`` in
    {−1, +1}, as a unit (L2) vector; p ≥ 1.  A clear error when the set is not separable
    by a hyperplane through the origin."""
    if p < 1:
        raise ValueError(f"max_margin needs p >= 1, got {p}")
    a = _rows(x, y)
    w = _l1(a) if p == 1 else _lp_dual(a, p)
    low = float((a @ w).min())
    if not low > 0:
        raise ValueError(f"max_margin p = {p:g}: no direction separates the samples "
                         f"(smallest margin {low:.3g})")
    return w / np.linalg.norm(w)


def normalised_margin(x: np.ndarray, y: np.ndarray, w: np.ndarray, p: float) -> float:
    """min_i y_i ⟨x_i, w⟩ / ||w||_p: the quantity the L_p max-margin direction maximises."""
    return float((_rows(x, y) @ w).min() / np.linalg.norm(w, ord=p))
