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


def _radau(
    alphas: list[float], betas: list[float], beta: float, node: float
) -> tuple[np.ndarray, np.ndarray, int | None]:
    """Nodes, weights and fixed-node index of the Gauss-Radau rule with a node at ``node``.

    T_m is extended by one row: coupling beta_m and diagonal entry node + delta_m, with
    delta the solution of (T_m - node I) delta = beta_m^2 e_m, which makes ``node`` an
    eigenvalue of T_{m+1} (Golub & Meurant, Matrices, Moments and Quadrature, 2010, ch. 6).
    The weights are the squared first components of T_{m+1}'s eigenvectors.  Without a
    residual (beta_m = 0: the Krylov space is invariant) plain Gauss quadrature is exact and
    no node is fixed (index None).
    """
    m = len(alphas)
    if beta == 0.0:
        theta, s = _tridiagonal_eigh(alphas, betas)
        return theta, s[0] ** 2, None
    off = np.asarray(betas[: m - 1], dtype=np.float64)
    banded = np.zeros((3, m))
    banded[0, 1:], banded[1], banded[2, :-1] = off, np.asarray(alphas) - node, off
    rhs = np.zeros(m)
    rhs[-1] = beta**2
    import scipy.linalg

    try:
        delta = scipy.linalg.solve_banded((1, 1), banded, rhs)
        theta, s = _tridiagonal_eigh([*alphas, node + float(delta[-1])], [*betas[: m - 1], beta])
    except np.linalg.LinAlgError:  # a Gauss node already sits at ``node``
        theta, s = _tridiagonal_eigh(alphas, betas)
    return theta, s[0] ** 2, int(np.argmin(np.abs(theta - node)))


def _negative_part(
    alphas: list[float], betas: list[float], beta: float, zero: float
) -> tuple[float, float, float]:
    """One probe's (resolved negative weight, unresolved weight, resolved negative mass).

    Gauss-Radau rule with its node fixed at -zero: weight on nodes < -zero is resolved,
    the fixed node's weight is what the moments cannot sign (see ``slq_negative``).
    """
    theta, weight, fixed = _radau(alphas, betas, beta, -zero)
    negative = theta < -zero
    unresolved = 0.0
    if fixed is not None:
        negative[fixed] = False
        unresolved = float(weight[fixed])
    return (float(weight[negative].sum()), unresolved,
            float((weight[negative] * -theta[negative]).sum()))


@dataclass
class NegativeEstimate:
    """``slq_negative``'s estimate: resolved count and mass, and the unresolved count."""

    count: float
    mass: float
    unresolved: float


def slq_negative(
    matvec: Matvec,
    size: int,
    zero: float,
    probes: int = 4,
    steps: int = 400,
    seed: int = 0,
    dtype: torch.dtype = torch.float64,
    device: torch.device | str | None = None,
    tol: float = 0.02,
) -> NegativeEstimate:
    """Number and mass of eigenvalues < -``zero`` by stochastic Lanczos quadrature (SLQ).

    Formula (Ubaru, Chen & Saad 2017): for a Rademacher probe v, |v|^2 = size,
    E_v[v^T 1[A < -zero] v] = #{lambda_i < -zero}; and v^T f(A) v = size int f dmu_v for
    v's spectral measure mu_v = sum_i (u_i . v)^2 / size delta_{lambda_i}, whose moments up
    to degree 2m come from m Lanczos steps from v (tridiagonal T_m).  The quadrature rule
    is Gauss-Radau with one node fixed at -zero (``_radau``: T_m extended by one row), and
    by the Markov-Krein (Chebyshev-Markov-Stieltjes) inequalities every measure with those
    moments, mu_v included, has

        W_- <= mu_v((-inf, -zero)) <= W_- + w_0,

    W_- the rule's weight on nodes < -zero and w_0 the weight of the fixed node; no
    bracket from the same moments is tighter.  Returned, averaged over probes and scaled
    by size: ``count`` = size W_- (the resolved negatives), ``unresolved`` = size w_0
    (eigenvalues the moments cannot sign: exact zeros and everything within about the
    node spacing of 0) and ``mass`` = size sum_{theta_j < -zero} w_j |theta_j|.  Hence
    count <= #{lambda < -zero} <= count + unresolved, up to the probe noise (standard
    deviation about sqrt(2 p (1 - p) size / probes) for a fraction p of negatives).  A
    fixed node rather than plain Gauss: a null space (G is singular when the head narrows
    the dimension) would otherwise merge with its nearest eigenvalues into one node whose
    sign, hence size * (null fraction) in the count, flips from probe to probe.  The mass
    is robust (|x| 1[x < -zero] nearly vanishes where the rule cannot resolve).

    Resolution limit: near 0 the nodes lie about (width of the bulk of the spectrum around
    0) / m apart; a tight cluster costs only a few nodes, but a continuum of eigenvalues of
    both signs down to |lambda| << lambda_max / steps goes to the fixed node, not into
    ``count``.  Effective Hessians with train-mode BatchNorm heads or after training have
    such spectra (negative eigenvalues spread over 6-10 decades below lambda_max), and
    ``count`` then falls 10-90% short of the dense count (``unresolved`` bounds the gap).
    No method that only multiplies by A does much better for the same number of products:
    signing |lambda| = delta takes polynomial degree of order ||A|| / delta.

    Each probe runs until its bracket closes (size w_0 <= ``tol`` max(size W_-, 1), tested
    every 10 steps, every 10 floor(m / 100) steps beyond m = 200), until the Krylov space
    is invariant (the rule is then exact and w_0 = 0) or for ``steps`` steps.  Cost: at
    most ``probes * steps`` products plus O(size steps^2) reorthogonalisation per probe.
    Probes are drawn on the CPU from ``seed``: deterministic and device-independent.
    """
    device = torch.device("cpu") if device is None else torch.device(device)
    gen = torch.Generator().manual_seed(seed)
    steps = min(steps, size)

    def closed(alphas: list[float], betas: list[float], beta: float) -> bool:
        m = len(alphas)
        if m % (10 * max(1, m // 100)):  # every 10 steps, sparser beyond 200: O(m^2) each
            return False
        resolved, unresolved, _ = _negative_part(alphas, betas, beta, zero)
        return size * unresolved <= tol * max(size * resolved, 1.0)

    total = np.zeros(3)
    for _ in range(probes):
        v = (torch.randint(0, 2, (size,), generator=gen) * 2 - 1).to(device, dtype)
        total += _negative_part(*_run(matvec, v, steps, restart=None, converged=closed), zero)
    count, unresolved, mass = size * total / probes
    return NegativeEstimate(float(count), float(mass), float(unresolved))
