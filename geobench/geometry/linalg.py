"""Matrix-free symmetric eigenvalue tools: a linear operator, Lanczos, stochastic quadrature.

Everything here works on flat vectors through a matrix-vector product, so a Hessian never
has to be formed.  The Lanczos solver is written in torch rather than wrapping
``scipy.sparse.linalg.eigsh`` so that the Krylov basis stays on the operator's device
(CUDA included) with no host round trip per product, and so that the convergence test is the
one stated below rather than ARPACK's implicit-restart criterion.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import scipy.linalg
import torch
from torch import Tensor

Which = Literal["smallest", "largest", "both"]
Matvec = Callable[[Tensor], Tensor]


class LinearOperator:
    """A symmetric linear map on flat vectors of length ``size``, given by its product.

    ``matvec(v)`` casts ``v`` to the operator's dtype / device, applies the product and
    counts it in ``matvecs`` (reset it by assigning 0).  ``dense()`` builds the matrix from
    products with the identity's columns (for small sizes only), in blocks of ``chunk``
    columns through ``matmat`` (rows of a (n, size) block -> their products) when given.
    """

    def __init__(
        self,
        matvec: Matvec,
        size: int,
        dtype: torch.dtype,
        device: torch.device | str,
        matmat: Matvec | None = None,
    ) -> None:
        self._matvec = matvec
        self._matmat = matmat
        self.size = int(size)
        self.dtype = dtype
        self.device = torch.device(device)
        self.matvecs = 0

    def matvec(self, v: Tensor) -> Tensor:
        """A v for a flat vector v (returned in the operator's dtype)."""
        self.matvecs += 1
        return self._matvec(v.to(self.device, self.dtype).reshape(self.size)).reshape(self.size)

    __call__ = matvec

    def dense(self, chunk: int = 64) -> Tensor:
        """The (size, size) matrix whose column j is A e_j (``size`` products)."""
        eye = torch.eye(self.size, dtype=self.dtype, device=self.device)
        if self._matmat is None:
            return torch.stack([self.matvec(eye[j]) for j in range(self.size)], dim=1)
        self.matvecs += self.size
        blocks = [self._matmat(eye[j : j + chunk]) for j in range(0, self.size, chunk)]
        return torch.cat(blocks).reshape(self.size, self.size).T

    def eigs(
        self,
        k: int = 1,
        which: Which = "smallest",
        tol: float = 1e-6,
        max_iter: int | None = None,
        seed: int = 0,
    ) -> Tensor:
        """The k extreme eigenvalues at the chosen end(s), ascending, by ``lanczos_eigs``.

        Residuals below ``100 * eps(operator dtype) * max|theta|`` also count as converged,
        the accuracy floor of a float32 product.
        """
        return lanczos_eigs(
            self.matvec, self.size, k, which, tol, max_iter, seed,
            device=self.device, floor_rtol=_floor_rtol(self.dtype),
        )


def _floor_rtol(dtype: torch.dtype) -> float:
    return 100 * max(torch.finfo(dtype).eps, torch.finfo(torch.float64).eps)


@dataclass
class LanczosResult:
    """Outcome of ``lanczos``: the wanted eigenvalues plus the whole final Ritz spectrum."""

    eigenvalues: Tensor
    ritz_values: Tensor
    residuals: Tensor
    iterations: int
    converged: bool


def _tridiagonal_eigh(alphas: list[float], betas: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """Eigenvalues (ascending) and eigenvectors of the Lanczos tridiagonal matrix T_m."""
    d = np.asarray(alphas, dtype=np.float64)
    if d.size == 1:
        return d.copy(), np.ones((1, 1))
    return scipy.linalg.eigh_tridiagonal(d, np.asarray(betas[: d.size - 1], dtype=np.float64))


def _wanted(m: int, k: int, which: Which) -> np.ndarray:
    """Indices (into ascending Ritz values) of the k smallest / largest / both."""
    low = np.arange(min(k, m))
    high = np.arange(max(m - k, 0), m)
    if which == "smallest":
        return low
    if which == "largest":
        return high
    return np.union1d(low, high)


def _run(
    matvec: Matvec,
    start: Tensor,
    steps: int,
    restart: torch.Generator | None,
    converged: Callable[[list[float], list[float], float], bool] | None = None,
) -> tuple[list[float], list[float], float]:
    """Lanczos with full reorthogonalisation (classical Gram-Schmidt, applied twice).

    Returns the diagonal ``alphas``, the off-diagonal ``betas`` of T_m and the norm of the
    last unnormalised residual vector ``beta_m``.  On breakdown (an invariant Krylov
    subspace) the run stops, or continues from a fresh random vector orthogonal to the basis
    when ``restart`` is a generator (a zero coupling is then recorded in T_m).
    """
    size, dtype, device = start.numel(), start.dtype, start.device
    eps = torch.finfo(dtype).eps
    basis = torch.empty(steps, size, dtype=dtype, device=device)
    q = start / start.norm()
    alphas: list[float] = []
    betas: list[float] = []
    anorm = 0.0
    beta = 0.0
    for j in range(steps):
        basis[j] = q
        w = matvec(q).to(dtype).reshape(size)
        alphas.append(float(torch.dot(q, w)))
        span = basis[: j + 1]
        for _ in range(2):
            w = w - span.T @ (span @ w)
        beta = float(w.norm())
        anorm = max(anorm, abs(alphas[-1]) + beta + (betas[-1] if betas else 0.0))
        broke = beta <= 100 * eps * anorm
        if broke:
            beta = 0.0
        if (converged is not None and converged(alphas, betas, beta)) or j + 1 == size:
            break
        if not broke:
            betas.append(beta)
            q = w / beta
            continue
        if restart is None:
            break
        w = torch.randn(size, generator=restart, dtype=torch.float64).to(device, dtype)
        for _ in range(2):
            w = w - span.T @ (span @ w)
        betas.append(0.0)
        q = w / w.norm()
    return alphas, betas, beta


def _start_vector(size: int, seed: int, dtype: torch.dtype, device: torch.device) -> Tensor:
    """Deterministic Gaussian start vector: drawn on the CPU from ``seed``, then moved."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randn(size, generator=gen, dtype=torch.float64).to(device, dtype)


def lanczos(
    matvec: Matvec,
    size: int,
    k: int = 1,
    which: Which = "smallest",
    tol: float = 1e-6,
    max_iter: int | None = None,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
    floor_rtol: float | None = None,
) -> LanczosResult:
    """Extreme eigenvalues of a symmetric operator by Lanczos, with convergence information.

    Krylov vectors are kept in ``dtype`` (float64 by default) and fully reorthogonalised, so
    no spurious copies of converged Ritz values appear.  The Ritz pair (theta_i, y_i = V s_i)
    of T_m has residual ||A y_i - theta_i y_i|| = |beta_m s_{m,i}|; the run stops once every
    wanted Ritz value satisfies |beta_m s_{m,i}| <= max(tol |theta_i|, floor_rtol max|theta|)
    (``floor_rtol`` default 100 eps(dtype): the reachable accuracy, which also lets a zero
    operator converge), after ``max_iter`` steps (default min(size, 300)), or when the Krylov
    space reaches the full dimension (then the values are exact).  On breakdown the process
    restarts from a random vector orthogonal to the basis.  The start vector is a Gaussian
    drawn on the CPU from ``seed``, so results do not depend on the device.  Caveat of any
    single-vector Krylov method: an eigenvalue's multiplicity is not resolved, so with k > 1
    the k values are the k extreme distinct eigenvalues.
    """
    if which not in ("smallest", "largest", "both"):
        raise ValueError(f"which must be 'smallest', 'largest' or 'both', not {which!r}")
    device = torch.device("cpu") if device is None else torch.device(device)
    steps = min(size, 300) if max_iter is None else min(size, max_iter)
    floor = _floor_rtol(dtype) if floor_rtol is None else floor_rtol
    need = min(size, k if which != "both" else 2 * k)

    def residuals(alphas: list[float], betas: list[float], beta: float):
        theta, s = _tridiagonal_eigh(alphas, betas)
        idx = _wanted(theta.size, k, which)
        res = np.abs(beta * s[-1, idx])
        bound = np.maximum(tol * np.abs(theta[idx]), floor * np.abs(theta).max())
        return theta, idx, res, bool(np.all(res <= bound))

    def converged(alphas: list[float], betas: list[float], beta: float) -> bool:
        return len(alphas) >= need and residuals(alphas, betas, beta)[3]

    start = _start_vector(size, seed, dtype, device)
    restart = torch.Generator().manual_seed(seed + 1)
    alphas, betas, beta = _run(matvec, start, steps, restart, converged)
    theta, idx, res, ok = residuals(alphas, betas, beta)
    ok = ok or len(alphas) == size
    as_tensor = lambda a: torch.as_tensor(a, dtype=dtype, device=device)  # noqa: E731
    return LanczosResult(as_tensor(theta[idx]), as_tensor(theta), as_tensor(res), len(alphas), ok)


def lanczos_eigs(
    matvec: Matvec,
    size: int,
    k: int = 1,
    which: Which = "smallest",
    tol: float = 1e-6,
    max_iter: int | None = None,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
    floor_rtol: float | None = None,
) -> Tensor:
    """The k smallest / largest / both-end eigenvalues (ascending) by ``lanczos``.

    Warns (``RuntimeWarning``) when ``max_iter`` was reached before convergence; the values
    returned are then the current Ritz values.
    """
    result = lanczos(matvec, size, k, which, tol, max_iter, seed, dtype, device, floor_rtol)
    if not result.converged:
        warnings.warn(
            f"Lanczos did not converge in {result.iterations} iterations "
            f"(largest wanted residual {float(result.residuals.max()):.3g})",
            RuntimeWarning,
            stacklevel=2,
        )
    return result.eigenvalues


def slq_negative(
    matvec: Matvec,
    size: int,
    zero: float,
    probes: int = 16,
    steps: int = 40,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> tuple[float, float]:
    """Stochastic Lanczos quadrature estimate of the number and mass of negative eigenvalues.

    Ubaru, Chen & Saad (2017): for a unit Rademacher probe v, m Lanczos steps from v give
    T_m = S diag(theta) S^T, and v^T f(A) v ~ sum_j tau_j^2 f(theta_j) with tau_j = S_{1j}
    (Gauss quadrature of v's spectral measure).  Averaging over probes,
    tr f(A) ~ (size / probes) sum_l sum_j tau_{lj}^2 f(theta_{lj}).  Here
    f(x) = 1[x < -zero] gives the negative count and f(x) = |x| 1[x < -zero] the negative
    mass; ``zero`` is the absolute threshold below which |lambda| counts as 0.  The
    estimate is unbiased up to the quadrature error, which for a step function is set by
    how finely m nodes resolve the spectrum near 0; its spread shrinks as 1/sqrt(probes).
    """
    device = torch.device("cpu") if device is None else torch.device(device)
    gen = torch.Generator().manual_seed(seed)
    count = mass = 0.0
    for _ in range(probes):
        v = (torch.randint(0, 2, (size,), generator=gen) * 2 - 1).to(device, dtype)
        alphas, betas, _ = _run(matvec, v, min(steps, size), restart=None)
        theta, s = _tridiagonal_eigh(alphas, betas)
        weight = s[0] ** 2 * (theta < -zero)
        count += size * float(weight.sum())
        mass += size * float((weight * np.abs(theta)).sum())
    return count / probes, mass / probes


def _ends_summary(lo: float, hi: float, zero: float) -> dict[str, float]:
    """Condition numbers from the spectrum's ends (see ``spectrum_summary``)."""
    small, large = sorted((abs(lo), abs(hi)))
    if large <= zero:
        cond_abs = math.nan
    else:
        cond_abs = math.inf if small <= zero else large / small
    return {"lambda_min": lo, "lambda_max": hi, "cond_abs": cond_abs}


def spectrum_summary(
    source: LinearOperator | Tensor,
    k: int = 1,
    dense_threshold: int = 2048,
    tol: float = 1e-6,
    max_iter: int | None = None,
    seed: int = 0,
    probes: int = 16,
    steps: int = 40,
    rtol: float | None = None,
) -> dict[str, float]:
    """Extremes, condition numbers and negative part of a symmetric spectrum.

    ``source`` is a vector of eigenvalues, a symmetric matrix, or a ``LinearOperator``.
    An eigenvalue counts as zero when |lambda| <= rtol * max|lambda| (default
    rtol = size * eps(dtype), numpy's ``matrix_rank`` rule).  Fields:

    - ``lambda_min``, ``lambda_max``: the spectrum's ends.
    - ``cond_abs``: max(|lambda_min|, |lambda_max|) / min(|lambda_min|, |lambda_max|), the
      ratio of the ends' magnitudes (for a definite spectrum, the condition number); inf
      when the smaller end is zero, NaN for the zero operator.
    - ``cond_pos``: lambda_max / (smallest positive eigenvalue); NaN if none is positive.
    - ``neg_count``, ``neg_mass``: number of eigenvalues < 0 and sum of their |lambda|.
    - ``exact``: 1.0 when computed from all eigenvalues, 0.0 for the estimates below;
      ``converged``: whether Lanczos met its tolerance; ``matvecs``: products used.

    An operator of size <= ``dense_threshold`` is formed densely (``dense()``),
    symmetrised and solved with ``torch.linalg.eigvalsh`` in float64.  Larger ones get
    ``lanczos`` for the k extreme eigenvalues at both ends.  Then cond_pos is exact when
    lambda_min > 0 and NaN otherwise (the smallest positive eigenvalue of a singular or
    indefinite spectrum is interior, beyond an extreme-eigenvalue solver); the negative
    count and mass are exactly 0 when lambda_min >= 0 (within the zero threshold),
    otherwise ``slq_negative`` estimates them (``probes`` Rademacher probes, ``steps``
    Lanczos steps each).
    """
    if isinstance(source, LinearOperator):
        before = source.matvecs
        if source.size > dense_threshold:
            out = _lanczos_summary(source, k, tol, max_iter, seed, probes, steps, rtol)
            return {**out, "matvecs": float(source.matvecs - before)}
        matrix = source.dense().to(torch.float64)
        out = _exact_summary(torch.linalg.eigvalsh((matrix + matrix.T) / 2), rtol, source.dtype)
        return {**out, "matvecs": float(source.matvecs - before)}
    if source.dim() == 2:
        matrix = source.to(torch.float64)
        eigenvalues = torch.linalg.eigvalsh((matrix + matrix.T) / 2)
    else:
        eigenvalues = source.to(torch.float64)
    return {**_exact_summary(eigenvalues, rtol, source.dtype), "matvecs": 0.0}


def _exact_summary(ev: Tensor, rtol: float | None, dtype: torch.dtype) -> dict[str, float]:
    ev = ev.detach().flatten().sort().values.cpu()
    rtol = ev.numel() * torch.finfo(dtype).eps if rtol is None else rtol
    zero = rtol * float(ev.abs().max())
    lo, hi = float(ev[0]), float(ev[-1])
    positive = ev[ev > zero]
    negative = ev[ev < -zero]
    return {
        **_ends_summary(lo, hi, zero),
        "cond_pos": hi / float(positive[0]) if positive.numel() else math.nan,
        "neg_count": float(negative.numel()),
        "neg_mass": float(negative.abs().sum()),
        "exact": 1.0,
        "converged": 1.0,
    }


def _lanczos_summary(
    op: LinearOperator,
    k: int,
    tol: float,
    max_iter: int | None,
    seed: int,
    probes: int,
    steps: int,
    rtol: float | None,
) -> dict[str, float]:
    result = lanczos(
        op.matvec, op.size, k, "both", tol, max_iter, seed,
        device=op.device, floor_rtol=_floor_rtol(op.dtype),
    )
    lo, hi = float(result.eigenvalues[0]), float(result.eigenvalues[-1])
    rtol = op.size * torch.finfo(op.dtype).eps if rtol is None else rtol
    zero = rtol * max(abs(lo), abs(hi))
    if lo >= -zero:
        cond_pos = hi / lo if lo > zero else math.nan
        neg_count = neg_mass = 0.0
    else:
        cond_pos = math.nan
        neg_count, neg_mass = slq_negative(
            op.matvec, op.size, zero, probes, steps, seed, device=op.device
        )
    return {
        **_ends_summary(lo, hi, zero),
        "cond_pos": cond_pos,
        "neg_count": neg_count,
        "neg_mass": neg_mass,
        "exact": 0.0,
        "converged": float(result.converged),
    }
