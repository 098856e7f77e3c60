"""Representational similarity: linear CKA, RSA, cosine similarity matrices.

All quantities are accumulated in float64. ``X`` (n, p) and ``Y`` (n, q) hold the
representations of the same n inputs, one row per input.

Linear CKA (Kornblith et al. 2019) with centred features ``Xc = X - mean(X)``::

    CKA(X, Y) = ||Xc^T Yc||_F^2 / (||Xc^T Xc||_F ||Yc^T Yc||_F)

which equals the Gram form ``<HKH, HLH>_F / (||HKH||_F ||HLH||_F)`` with ``K = X X^T``,
``L = Y Y^T`` and ``H = I - 11^T/n``, but costs O(n (p+q)^2) time and O((p+q)^2) memory
instead of O(n^2 (p+q)) and O(n^2).  The debiased variant replaces the biased HSIC by the
unbiased U-statistic of Song et al. (2012)::

    HSIC_u(K, L) = [tr(K~ L~) + (1^T K~ 1)(1^T L~ 1)/((n-1)(n-2)) - 2/(n-2) 1^T K~ L~ 1] / (n(n-3))

(``K~`` is K with its diagonal zeroed), which for centred features reduces to
``||Xc^T Yc||^2 - n/(n-2) <diag K, diag L> + tr K tr L / ((n-1)(n-2))`` (times 1/(n(n-3))).
The biased estimator is inflated at small n (two independent Gaussian representations
score well above 0); the debiased one is ~0 there and can be negative, so its
normalisation is guarded: a non-positive self-HSIC gives NaN.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

_CHUNK = 8192


def _f64(x: Tensor) -> Tensor:
    x = torch.as_tensor(x)
    return x.reshape(x.shape[0], -1).to(torch.float64)


@dataclass(frozen=True)
class _Moments:
    """The sufficient statistics of linear (debiased) HSIC for centred X, Y."""

    n: int
    xty: float  # ||Xc^T Yc||_F^2
    xtx: float  # ||Xc^T Xc||_F^2
    yty: float  # ||Yc^T Yc||_F^2
    kl_diag: float  # sum_i ||x_i||^2 ||y_i||^2
    kk_diag: float  # sum_i ||x_i||^4
    ll_diag: float  # sum_i ||y_i||^4
    tr_k: float  # sum_i ||x_i||^2
    tr_l: float  # sum_i ||y_i||^2


def _moments(X: Tensor, Y: Tensor, chunk: int = _CHUNK) -> _Moments:
    """Centred cross/self covariances and row norms, accumulated over row chunks."""
    if X.shape[0] != Y.shape[0]:
        raise ValueError(f"X and Y must have the same rows: {X.shape[0]} != {Y.shape[0]}")
    n = X.shape[0]
    Xf, Yf = X.reshape(n, -1), Y.reshape(n, -1)
    mx = torch.zeros(Xf.shape[1], dtype=torch.float64, device=X.device)
    my = torch.zeros(Yf.shape[1], dtype=torch.float64, device=Y.device)
    for s in range(0, n, chunk):
        mx += Xf[s : s + chunk].to(torch.float64).sum(0)
        my += Yf[s : s + chunk].to(torch.float64).sum(0)
    mx, my = mx / n, my / n
    cxy = torch.zeros(Xf.shape[1], Yf.shape[1], dtype=torch.float64, device=X.device)
    cxx = torch.zeros(Xf.shape[1], Xf.shape[1], dtype=torch.float64, device=X.device)
    cyy = torch.zeros(Yf.shape[1], Yf.shape[1], dtype=torch.float64, device=Y.device)
    kd, ld = [], []
    for s in range(0, n, chunk):
        xc = Xf[s : s + chunk].to(torch.float64) - mx
        yc = Yf[s : s + chunk].to(torch.float64) - my
        cxy += xc.T @ yc
        cxx += xc.T @ xc
        cyy += yc.T @ yc
        kd.append((xc * xc).sum(1))
        ld.append((yc * yc).sum(1))
    k, l_ = torch.cat(kd), torch.cat(ld)
    return _Moments(
        n=n,
        xty=float((cxy * cxy).sum()),
        xtx=float((cxx * cxx).sum()),
        yty=float((cyy * cyy).sum()),
        kl_diag=float((k * l_).sum()),
        kk_diag=float((k * k).sum()),
        ll_diag=float((l_ * l_).sum()),
        tr_k=float(k.sum()),
        tr_l=float(l_.sum()),
    )


def _hsic_u(cross: float, diag: float, tr_a: float, tr_b: float, n: int) -> float:
    """Unbiased HSIC of two centred linear kernels from their sufficient statistics."""
    value = cross - n / (n - 2) * diag + tr_a * tr_b / ((n - 1) * (n - 2))
    return value / (n * (n - 3))


def _debiased_terms(m: _Moments) -> tuple[float, float, float]:
    if m.n < 4:
        raise ValueError(f"debiased CKA needs at least 4 samples, got {m.n}")
    return (
        _hsic_u(m.xty, m.kl_diag, m.tr_k, m.tr_l, m.n),
        _hsic_u(m.xtx, m.kk_diag, m.tr_k, m.tr_k, m.n),
        _hsic_u(m.yty, m.ll_diag, m.tr_l, m.tr_l, m.n),
    )


def _ratio(hxy: float, hxx: float, hyy: float) -> float:
    if hxx <= 0.0 or hyy <= 0.0:
        return float("nan")
    return hxy / (hxx**0.5 * hyy**0.5)


def linear_cka(X: Tensor, Y: Tensor, debiased: bool = False) -> float:
    """Linear CKA between representations X (n, p) and Y (n, q), in feature space.

    Never forms an n x n matrix; float64 accumulation over row chunks.  ``debiased``
    uses the unbiased HSIC estimator (needs n >= 4; NaN when a self-HSIC is <= 0).
    """
    m = _moments(X, Y)
    if debiased:
        return _ratio(*_debiased_terms(m))
    return _ratio(m.xty, m.xtx, m.yty)


class MinibatchCKA:
    """Linear CKA accumulated over minibatches (Nguyen, Raghu & Kornblith 2021).

    ``CKA_mb = mean_b HSIC_u(K_b, L_b) / sqrt(mean_b HSIC_u(K_b, K_b) mean_b HSIC_u(L_b, L_b))``
    with the unbiased HSIC of each minibatch b (each needs >= 4 rows).  Memory is
    O(p^2 + q^2) whatever the number of batches; the value converges to the population
    CKA as batches accumulate, unlike the average of per-batch biased CKAs.
    """

    def __init__(self) -> None:
        self._sums = [0.0, 0.0, 0.0]
        self.batches = 0

    def update(self, X: Tensor, Y: Tensor) -> None:
        """Add one minibatch of paired representations."""
        for i, term in enumerate(_debiased_terms(_moments(X, Y))):
            self._sums[i] += term
        self.batches += 1

    def value(self) -> float:
        """The accumulated CKA (NaN before any batch)."""
        if self.batches == 0:
            return float("nan")
        return _ratio(*self._sums)


def kernel_cka(K: Tensor, L: Tensor, debiased: bool = True) -> float:
    """CKA of two symmetric n x n kernel (Gram / similarity) matrices, in float64.

    Biased: ``<HKH, HLH>_F / (||HKH||_F ||HLH||_F)`` with ``H = I - 11^T/n``, the inner
    products taken as elementwise sums.  ``debiased`` (default): the same ratio of the
    unbiased HSIC of Song et al. (2012), ``K~`` being K with its diagonal zeroed::

        HSIC_u(K, L) = [<K~, L~>_F + (1^T K~ 1)(1^T L~ 1)/((n-1)(n-2))
                        - 2/(n-2) 1^T K~ L~ 1] / (n(n-3))
                     = <U(K), U(L)>_F / (n(n-3)),

    computed in the second form, centred before the products (no cancellation of large
    terms) with the U-centring ``U(K)_ij = K~_ij - (r_i + r_j)/(n-2) + 1^T r/((n-1)(n-2))``
    (i != j; 0 on the diagonal; ``r = K~ 1``).  It reads only off-diagonal entries and needs
    n >= 4.  NaN when a self-HSIC is <= 0.  With ``K = X X^T``, ``L = Y Y^T`` it equals
    ``linear_cka(X, Y, debiased)``.
    """
    k, l_ = torch.as_tensor(K).to(torch.float64), torch.as_tensor(L).to(torch.float64)
    n = k.shape[0]
    if k.shape != (n, n) or l_.shape != (n, n):
        raise ValueError(f"K and L must be n x n of the same n: {tuple(k.shape)}, "
                         f"{tuple(l_.shape)}")
    m = torch.stack([k, l_])  # a copy, centred in place (the same operations, one buffer)
    if debiased:
        if n < 4:
            raise ValueError(f"debiased CKA needs at least 4 samples, got {n}")
        eye = torch.eye(n, dtype=torch.bool, device=m.device)
        m.masked_fill_(eye, 0.0)
        r = m.sum(2)
        shift = r[:, :, None] + r[:, None, :]
        m.sub_(shift.div_(n - 2)).add_(r.sum(1)[:, None, None] / ((n - 1) * (n - 2)))
        del shift
        m.masked_fill_(eye, 0.0)  # the common 1/(n(n-3)) cancels in the ratio
    else:
        rows, cols, grand = m.mean(1, keepdim=True), m.mean(2, keepdim=True), m.mean((1, 2),
                                                                                 keepdim=True)
        m.sub_(rows).sub_(cols).add_(grand)
    kc, lc = m
    return _ratio(float((kc * lc).sum()), float((kc * kc).sum()), float((lc * lc).sum()))


def similarity_matrix(Z: Tensor) -> Tensor:
    """Cosine similarity matrix ``Sigma_ij = <z_i, z_j> / (||z_i|| ||z_j||)`` (n x n, float64).

    A zero row has zero similarity to everything (its norm is clamped at 1e-12).
    """
    z = _f64(Z)
    z = z / z.norm(dim=1, keepdim=True).clamp_min(1e-12)
    return z @ z.T


def frobenius_gap(A: Tensor, B: Tensor) -> float:
    """``||A - B||_F`` in float64 (e.g. between two arms' similarity matrices)."""
    return float(torch.linalg.norm(_f64(A) - _f64(B)))


def _rdm(X: Tensor, kind: str) -> Tensor:
    x = _f64(X)
    if kind == "correlation":
        return 1.0 - similarity_matrix(x - x.mean(1, keepdim=True))
    if kind == "cosine":
        return 1.0 - similarity_matrix(x)
    if kind == "euclidean":
        return torch.cdist(x, x)
    raise ValueError(f"unknown rdm {kind!r}; expected correlation, cosine or euclidean")


def _average_ranks(v: Tensor) -> Tensor:
    """Ranks 1..n with ties given their average rank (as scipy.stats.rankdata)."""
    order = torch.argsort(v, stable=True)
    _, counts = torch.unique_consecutive(v[order], return_counts=True)
    ends = torch.cumsum(counts, 0).to(torch.float64)
    group_rank = ends - (counts.to(torch.float64) - 1.0) / 2.0
    ranks = torch.empty_like(v, dtype=torch.float64)
    ranks[order] = torch.repeat_interleave(group_rank, counts)
    return ranks


def _pearson(a: Tensor, b: Tensor) -> float:
    a, b = a - a.mean(), b - b.mean()
    den = a.norm() * b.norm()
    return float((a * b).sum() / den) if den > 0 else float("nan")


def rsa(X: Tensor, Y: Tensor, rdm: str = "correlation", compare: str = "pearson") -> float:
    """Representational similarity analysis (Kriegeskorte et al. 2008).

    Builds each representation's dissimilarity matrix over the n inputs --
    ``correlation``: 1 - Pearson(x_i, x_j); ``cosine``: 1 - cos(x_i, x_j) (= 1 - Sigma_ij);
    ``euclidean``: ||x_i - x_j|| -- and correlates their off-diagonal entries (i < j) with
    ``pearson`` or ``spearman`` (Pearson of average-tie ranks).  NaN if an RDM is constant.
    """
    if compare not in ("pearson", "spearman"):
        raise ValueError(f"unknown compare {compare!r}; expected pearson or spearman")
    dx, dy = _rdm(X, rdm), _rdm(Y, rdm)
    iu = torch.triu_indices(dx.shape[0], dx.shape[0], offset=1, device=dx.device)
    a, b = dx[iu[0], iu[1]], dy[iu[0], iu[1]]
    if compare == "spearman":
        a, b = _average_ranks(a), _average_ranks(b)
    return _pearson(a, b)


__all__ = [
    "linear_cka", "kernel_cka", "MinibatchCKA", "rsa", "similarity_matrix", "frobenius_gap",
]
