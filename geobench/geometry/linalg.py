"""Matrix-free symmetric eigenvalue tools: a linear operator, Lanczos, stochastic quadrature.

Everything here works on flat vectors through a matrix-vector product, so a Hessian never
has to be formed.  The Lanczos solver is written in torch rather than wrapping
``scipy.sparse.linalg.eigsh`` so that the Krylov basis stays on the operator's device
(CUDA included) with no host round trip per product, and so that the convergence test is the
one stated below rather than ARPACK's implicit-restart criterion.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

import numpy as np
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
            device=self.device, floor_rtol=residual_floor(self.dtype),
        )


def residual_floor(dtype: torch.dtype) -> float:
    """Relative Ritz residual reachable with products in ``dtype``: 100 eps (>= float64's)."""
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
    import scipy.linalg

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
    floor = residual_floor(dtype) if floor_rtol is None else floor_rtol
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

    ``matvec`` receives flat vectors of ``dtype`` on ``device`` (``LinearOperator.matvec``
    casts them to the operator's own dtype).

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


def _radau_at_zero(alphas: list[float], betas: list[float], beta: float):
    """Nodes and eigenvectors of the Gauss-Radau rule with one node fixed at 0.

    T_m is extended by one row: coupling beta_m and diagonal entry delta_m, the last entry
    of the solution of T_m delta = beta_m^2 e_m, which makes 0 an eigenvalue of T_{m+1}
    (Golub & Meurant, Matrices, Moments and Quadrature, 2010, ch. 6).  Without a residual
    (beta_m = 0: the Krylov space is invariant) plain Gauss quadrature is already exact.
    """
    m = len(alphas)
    if beta == 0.0:
        return _tridiagonal_eigh(alphas, betas)
    off = np.asarray(betas[: m - 1], dtype=np.float64)
    banded = np.zeros((3, m))
    banded[0, 1:], banded[1], banded[2, :-1] = off, alphas, off
    rhs = np.zeros(m)
    rhs[-1] = beta**2
    import scipy.linalg

    try:
        delta = scipy.linalg.solve_banded((1, 1), banded, rhs)
    except np.linalg.LinAlgError:  # a Gauss node already sits at 0
        return _tridiagonal_eigh(alphas, betas)
    return _tridiagonal_eigh([*alphas, float(delta[-1])], [*betas[: m - 1], beta])


def slq_negative(
    matvec: Matvec,
    size: int,
    zero: float,
    probes: int = 6,
    steps: int = 100,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
) -> tuple[float, float]:
    """Stochastic Lanczos quadrature estimate of the number and mass of negative eigenvalues.

    Ubaru, Chen & Saad (2017): for a unit Rademacher probe v, m Lanczos steps from v give a
    quadrature rule for v's spectral measure, v^T f(A) v ~ sum_j tau_j^2 f(theta_j), with
    nodes theta_j and weights tau_j^2 (squared first components of the eigenvectors of the
    tridiagonal matrix).  Averaging over probes, tr f(A) ~ (size / probes) sum tau^2 f(theta).
    f(x) = 1[x < -zero] gives the negative count, f(x) = |x| 1[x < -zero] the negative mass;
    ``zero`` is the absolute threshold below which |lambda| counts as 0.

    The rule used is Gauss-Radau with one node fixed at 0 (``_radau_at_zero``), not plain
    Gauss: the Hessians measured here often have a large null space (G is singular
    whenever the head narrows the dimension), and plain Gauss merges that atom with its
    nearest eigenvalues into one node whose sign, hence a count of size * (null
    fraction), flips from probe to probe.  The fixed node takes the atom.  What remains is
    a resolution limit: eigenvalues closer to 0 than the quadrature resolves (it sharpens
    with ``steps``) go to the node at 0 and are not counted, so with many tiny negative
    eigenvalues the count is low.  The mass is robust (|x| 1[x < 0] is continuous and
    vanishes at 0).  The probe spread shrinks as 1/sqrt(probes).
    """
    device = torch.device("cpu") if device is None else torch.device(device)
    gen = torch.Generator().manual_seed(seed)
    count = mass = 0.0
    for _ in range(probes):
        v = (torch.randint(0, 2, (size,), generator=gen) * 2 - 1).to(device, dtype)
        theta, s = _radau_at_zero(*_run(matvec, v, min(steps, size), restart=None))
        weight = s[0] ** 2 * (theta < -zero)
        count += size * float(weight.sum())
        mass += size * float((weight * np.abs(theta)).sum())
    return count / probes, mass / probes
