"""The built-in separable mirror maps (Euclidean, hypentropy, p-norm, shifted p-norm).

Each subclasses ``geobench.api.MirrorMap`` (re-exported here): the four elementwise
functions R, ∇R, Q, ∇Q, the horizon degree ``alpha`` and, where known, the closed-form
``horizon``; the built-in maps also override ``grad_Q_into``, the in-place ∇Q the optimizer
calls.  A third-party map subclasses ``geobench.api.MirrorMap`` in its own package, without
importing this module (docs/mirror_flow.md).

∇R and ∇Q are written with the elementwise operations that torch evaluates with SIMD on
every x86 CPU (AVX-512, AVX2 and without SIMD alike): arithmetic, ``abs``, ``copysign``,
``sqrt``, ``exp``, ``log``, ``tanh`` and ``pow`` by 1/2, 1, 2 or 3.  ``expm1``, ``log1p``,
``sinh``, ``cosh``, ``asinh``, ``where`` and ``pow`` by other exponents cost 5 to 90 times
``exp`` per element on some of them (``benchmarks/elementwise_ops.py``), so the maps use
identities instead that keep the accuracy of those functions (each has its derivation
beside it; ``tests/mirror/test_map_kernels.py`` checks them against a 50-digit reference).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from geobench.api import MirrorMap

__all__ = ["Euclidean", "Hypentropy", "MirrorMap", "PNorm", "ShiftedPNorm", "euclidean",
           "hypentropy", "pnorm", "shifted_pnorm"]

_SERIES = 1e-3  # below x = 1e-3, (1+x)^a - 1 - a x is summed as a binomial series
_SINH_SERIES = 0.5  # below |u| = 1/2, sinh(u) is summed as its Taylor series (to u^15)


def _log1p(y: Tensor) -> Tensor:
    """log(1 + y) for y ≥ 0 as log(w) + (y − (w − 1))/w with w = fl(1 + y).

    y − (w − 1) is the part of y that rounding 1 + y lost (exact for y ≤ 1), and
    log(1 + y) = log(w) + log(1 + lost/w) ≈ log(w) + lost/w: a few ulp everywhere,
    y itself for y below half an ulp of 1.
    """
    w = y + 1.0
    lost = torch.sub(y, w - 1.0)
    return torch.log(w).addcdiv_(lost, w)


def _expm1(x: Tensor) -> Tensor:
    """e^x − 1 = tanh(x/2)(e^x + 1): a product of two factors that do not cancel."""
    return torch.tanh(x * 0.5).mul_(torch.exp(x).add_(1.0))


def _asinh(x: Tensor) -> Tensor:
    """asinh(x) = sign(x) log(1 + a + a r), a = |x|, r = a/(1 + sqrt(1 + a²)).

    r is evaluated as 1/(b + sqrt(b² + 1)) with b = 1/a, which neither overflows for large a
    nor divides 0 by 0 at a = 0 (b = ∞ gives r = 0); log(1 + ·) is ``_log1p``.
    """
    a = x.abs()
    b = a.reciprocal()
    r = b.mul(b).add_(1.0).sqrt_().add_(b).reciprocal_()
    return _log1p(r.mul_(a).add_(a)).copysign_(x)


def _pow_(x: Tensor, k: float) -> Tensor:
    """x^k in place for x ≥ 0: sqrt or products for k = 1/2, 1, 2, 3, else exp(k log x)
    (0 ↦ 0 through log 0 = −∞)."""
    if k == 0.5:
        return x.sqrt_()
    if k in (1.0, 2.0, 3.0):
        return x.pow_(k)
    return x.log_().mul_(k).exp_()


def _sinh_series(a: Tensor) -> Tensor:
    """sinh(a) = a Σ_k a^{2k}/(2k+1)!, Horner to a^15: below 1/2 the next term is < 1e-19."""
    a2 = a * a
    total = torch.ones_like(a)
    for k in range(7, 0, -1):  # multiplied by 1/(2k(2k+1)): a vector division is slow
        total = total.mul_(a2).mul_(1.0 / ((2 * k) * (2 * k + 1))).add_(1.0)
    return total.mul_(a)


class Euclidean(MirrorMap):
    """R(θ) = θ²/2: ∇R = ∇Q = identity, mirror descent is gradient descent.

    α = 2, φ_2(θ) = ||θ||_2.
    """

    name = "euclidean"
    alpha = 2.0

    def R(self, theta: Tensor) -> Tensor:
        return 0.5 * theta * theta

    def grad_R(self, theta: Tensor) -> Tensor:
        return theta

    def grad_Q(self, u: Tensor) -> Tensor:
        return u

    def grad_Q_into(self, u: Tensor, out: Tensor) -> Tensor:
        return out.copy_(u)

    def Q(self, u: Tensor) -> Tensor:
        return 0.5 * u * u

    def horizon(self, theta: Tensor) -> Tensor:
        return torch.linalg.vector_norm(theta)


class Hypentropy(MirrorMap):
    """Hyperbolic entropy with scale λ > 0: R(θ) = θ asinh(θ/λ) − sqrt(θ² + λ²).

    ∇R(θ) = asinh(θ/λ); ∇Q(u) = λ sinh(u); Q(u) = λ cosh(u), so Q(∇R(θ)) = sqrt(θ² + λ²).
    With X = (λ/2)e^{|u|} = exp(|u| + log(λ/2)), finite whenever λ cosh(u) is:
    λ cosh(u) = X + (λ/2)²/X, and λ sinh(u) = sign(u)(X − (λ/2)²/X), which cancels at
    |u| ≪ 1.  Two cancellation-free forms of ∇Q agree to a few ulp: ``grad_Q_into`` (the
    eager optimizer step) takes tanh(u) λ cosh(u), six elementwise passes; ``grad_Q`` (what
    ``compile=True`` fuses, where ``where`` is free and tanh is not) takes the difference
    from |u| = 1/2 up and λ times the Taylor series of sinh below.  Where (λ/2)² is outside
    the tensor's floating range (λ < 2e-19 in float32) both are evaluated in float64.
    α = 1, φ_1(θ) = ||θ||_1.
    """

    name = "hypentropy"
    alpha = 1.0

    def __init__(self, lam: float) -> None:
        if not lam > 0:
            raise ValueError(f"hypentropy needs lam > 0, got {lam}")
        if not 1e-150 <= lam <= 1e150:
            raise ValueError(f"hypentropy needs lam between 1e-150 and 1e150, got {lam}")
        self.lam = float(lam)
        self._log_half = math.log(self.lam / 2.0)
        self._half_squared = (self.lam / 2.0) ** 2

    def _params(self) -> dict[str, float]:
        return {"lam": self.lam}

    def _in_range(self, u: Tensor) -> bool:
        info = torch.finfo(u.dtype)
        return info.tiny <= self._half_squared <= info.max

    def _lam_cosh_into(self, u: Tensor, out: Tensor) -> Tensor:
        x = torch.abs(u, out=out).add_(self._log_half).exp_()
        return x.addcdiv_(x.new_ones(()).expand_as(x), x, value=self._half_squared)

    def R(self, theta: Tensor) -> Tensor:
        root = torch.hypot(theta, theta.new_tensor(self.lam))
        return theta * _asinh(theta / self.lam) - root

    def grad_R(self, theta: Tensor) -> Tensor:
        return _asinh(theta / self.lam)

    def grad_Q(self, u: Tensor) -> Tensor:
        if not self._in_range(u):
            return self.grad_Q(u.double()).to(u.dtype)
        a = u.abs()
        x = torch.exp(a + self._log_half)
        small = _sinh_series(a.clamp(max=_SINH_SERIES)).mul_(self.lam)
        return torch.where(a < _SINH_SERIES, small, x - self._half_squared / x).copysign_(u)

    def grad_Q_into(self, u: Tensor, out: Tensor) -> Tensor:
        if not self._in_range(u):
            return out.copy_(self.grad_Q(u.double()))
        return self._lam_cosh_into(u, out).mul_(torch.tanh(u))

    def Q(self, u: Tensor) -> Tensor:
        if not self._in_range(u):
            return self.Q(u.double()).to(u.dtype)
        return self._lam_cosh_into(u, torch.empty_like(u))

    def horizon(self, theta: Tensor) -> Tensor:
        return theta.abs().sum()


def _pnorm_horizon(theta: Tensor, p: float) -> Tensor:
    return (p - 1.0) ** (1.0 / p) * torch.linalg.vector_norm(theta, ord=p)


class PNorm(MirrorMap):
    """Homogeneous p-norm potential, p ≥ 2: R(θ) = |θ|^p / p.

    ∇R(θ) = sign(θ)|θ|^{p−1}; ∇Q(u) = sign(u)|u|^{1/(p−1)} (taken on |u|, so 0 maps to 0
    without a negative base; powers other than 1/2, 1, 2, 3 as exp(k log|·|));
    Q(u) = |u|^q / q with q = p/(p−1), so Q(∇R(θ)) = ((p−1)/p)|θ|^p.
    α = p, φ_p(θ) = (p−1)^{1/p} ||θ||_p.
    """

    name = "pnorm"

    def __init__(self, p: float) -> None:
        if not p >= 2:
            raise ValueError(f"pnorm needs p >= 2, got {p}")
        self.p = float(p)
        self.alpha = self.p

    def _params(self) -> dict[str, float]:
        return {"p": self.p}

    def R(self, theta: Tensor) -> Tensor:
        return theta.abs().pow(self.p) / self.p

    def grad_R(self, theta: Tensor) -> Tensor:
        return _pow_(theta.abs(), self.p - 1.0).copysign_(theta)

    def grad_Q(self, u: Tensor) -> Tensor:
        return self.grad_Q_into(u, torch.empty_like(u))

    def grad_Q_into(self, u: Tensor, out: Tensor) -> Tensor:
        return _pow_(torch.abs(u, out=out), 1.0 / (self.p - 1.0)).copysign_(u)

    def Q(self, u: Tensor) -> Tensor:
        q = self.p / (self.p - 1.0)
        return u.abs().pow(q) / q

    def horizon(self, theta: Tensor) -> Tensor:
        return _pnorm_horizon(theta, self.p)


def _pow1p_minus_one(x: Tensor, a: float) -> Tensor:
    """(1 + x)^a − 1 for x ≥ 0, without cancellation at small x: x(x + 2) for a = 2,
    x/(sqrt(1 + x) + 1) for a = 1/2, else expm1(a log1p(x)) (``_expm1``, ``_log1p``)."""
    if a == 2.0:
        return x.add(2.0).mul_(x)
    if a == 0.5:
        return x / x.add(1.0).sqrt_().add_(1.0)
    return _expm1(_log1p(x).mul_(a))


def _pow1p_minus_linear(x: Tensor, a: float) -> Tensor:
    """(1 + x)^a − 1 − a x for x ≥ 0: a binomial series (terms x² .. x⁸) below 1e-3."""
    xs = x.clamp(max=_SERIES)
    series = torch.zeros_like(xs)
    coef = a * (a - 1.0) / 2.0
    power = xs * xs
    for k in range(2, 9):
        series = series + coef * power
        coef = coef * (a - k) / (k + 1)
        power = power * xs
    return torch.where(x < _SERIES, series, _pow1p_minus_one(x, a) - a * x)


class ShiftedPNorm(MirrorMap):
    """Non-homogeneous p-norm potential with scale λ > 0 (p ≥ 2):

    ∇R(θ) = sign(θ) ((|θ| + λ)^{p−1} − λ^{p−1}),
    R(θ)  = ((|θ| + λ)^p − λ^p)/p − λ^{p−1}|θ|,
    ∇Q(u) = sign(u) ((|u| + λ^{p−1})^{1/(p−1)} − λ),
    Q(u)  = ((|u| + λ^{p−1})^q − λ^p)/q − λ|u|,   q = p/(p−1).

    Near 0 it is quadratic with curvature (p−1)λ^{p−2} (gradient descent with a rescaled
    step); for |θ| ≫ λ it grows as |θ|^p/p, so its horizon is the p-norm one:
    α = p, φ_p(θ) = (p−1)^{1/p}||θ||_p; λ → 0 recovers ``pnorm``.  This form is chosen over
    (θ² + λ²)^{p/2}/p because both ∇R and its inverse are closed-form (no root finding in
    the optimizer step); R is C² everywhere and smooth away from 0.  Powers of 1 + x are
    evaluated without cancellation (``_pow1p_minus_one``) and a series, so small |θ| ≪ λ
    loses no precision; for p = 3, ∇Q(u) = u/(λ + sqrt(λ² + |u|)).
    """

    name = "shifted_pnorm"

    def __init__(self, p: float, lam: float) -> None:
        if not p >= 2:
            raise ValueError(f"shifted_pnorm needs p >= 2, got {p}")
        if not lam > 0:
            raise ValueError(f"shifted_pnorm needs lam > 0, got {lam}")
        self.p = float(p)
        self.lam = float(lam)
        self.alpha = self.p

    def _params(self) -> dict[str, float]:
        return {"p": self.p, "lam": self.lam}

    @property
    def _c(self) -> float:
        return self.lam ** (self.p - 1.0)

    def R(self, theta: Tensor) -> Tensor:
        x = theta.abs() / self.lam
        return self.lam**self.p / self.p * _pow1p_minus_linear(x, self.p)

    def grad_R(self, theta: Tensor) -> Tensor:
        x = theta.abs() / self.lam
        return torch.sign(theta) * self._c * _pow1p_minus_one(x, self.p - 1.0)

    def grad_Q(self, u: Tensor) -> Tensor:
        return self.grad_Q_into(u, torch.empty_like(u))

    def grad_Q_into(self, u: Tensor, out: Tensor) -> Tensor:
        if self.p == 3.0:  # λ((1 + |u|/λ²)^{1/2} − 1) = |u|/(λ + sqrt(λ² + |u|))
            x = torch.abs(u, out=out).add_(self.lam**2).sqrt_().add_(self.lam)
            return torch.div(u, x, out=x)
        y = u.abs().div_(self._c)
        y = _pow1p_minus_one(y, 1.0 / (self.p - 1.0)).mul_(self.lam)
        return out.copy_(y).copysign_(u)

    def Q(self, u: Tensor) -> Tensor:
        q = self.p / (self.p - 1.0)
        y = u.abs() / self._c
        return self.lam**self.p / q * _pow1p_minus_linear(y, q)

    def horizon(self, theta: Tensor) -> Tensor:
        return _pnorm_horizon(theta, self.p)


def euclidean() -> Euclidean:
    """R(θ) = θ²/2 (gradient descent)."""
    return Euclidean()


def hypentropy(lam: float) -> Hypentropy:
    """Hyperbolic entropy with scale ``lam``."""
    return Hypentropy(lam)


def pnorm(p: float) -> PNorm:
    """Homogeneous p-norm potential |θ|^p / p."""
    return PNorm(p)


def shifted_pnorm(p: float, lam: float) -> ShiftedPNorm:
    """Non-homogeneous p-norm potential with scale ``lam``."""
    return ShiftedPNorm(p, lam)

