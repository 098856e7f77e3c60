"""The built-in separable mirror maps (Euclidean, hypentropy, p-norm, shifted p-norm).

Each subclasses ``geobench.api.MirrorMap`` (re-exported here): the four elementwise
functions R, ∇R, Q, ∇Q, the horizon degree ``alpha`` and, where known, the closed-form
``horizon``; the built-in maps also override ``grad_Q_into``, the in-place ∇Q the optimizer
calls.  A third-party map subclasses ``geobench.api.MirrorMap`` in its own package, without
importing this module (docs/mirror_flow.md).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from geobench.api import MirrorMap

__all__ = ["Euclidean", "Hypentropy", "MirrorMap", "PNorm", "ShiftedPNorm", "euclidean",
           "hypentropy", "pnorm", "shifted_pnorm"]

_BIG = 20.0  # above |u| = 20, sinh(u) and cosh(u) equal e^{|u|}/2 to float64 precision
_SERIES = 1e-3  # below x = 1e-3, (1+x)^a - 1 - a x is summed as a binomial series


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


def _scaled_exp_half(u: Tensor, lam: float) -> Tensor:
    """λ e^{|u|}/2 evaluated as exp(|u| + log(λ/2)): finite whenever the result is."""
    return torch.exp(u.abs() + math.log(lam / 2.0))


class Hypentropy(MirrorMap):
    """Hyperbolic entropy with scale λ > 0: R(θ) = θ asinh(θ/λ) − sqrt(θ² + λ²).

    ∇R(θ) = asinh(θ/λ) (``asinh``, not log(sqrt(θ²+λ²)+θ), which cancels for θ ≪ 0);
    ∇Q(u) = λ sinh(u); Q(u) = λ cosh(u), so Q(∇R(θ)) = sqrt(θ² + λ²).
    For |u| > 20, λ sinh(u) and λ cosh(u) are evaluated as ±exp(|u| + log(λ/2)), which
    stays finite as long as the result is (λ sinh(u) itself overflows first for small λ).
    α = 1, φ_1(θ) = ||θ||_1.
    """

    name = "hypentropy"
    alpha = 1.0

    def __init__(self, lam: float) -> None:
        if not lam > 0:
            raise ValueError(f"hypentropy needs lam > 0, got {lam}")
        self.lam = float(lam)

    def _params(self) -> dict[str, float]:
        return {"lam": self.lam}

    def R(self, theta: Tensor) -> Tensor:
        root = torch.hypot(theta, theta.new_tensor(self.lam))
        return theta * torch.asinh(theta / self.lam) - root

    def grad_R(self, theta: Tensor) -> Tensor:
        return torch.asinh(theta / self.lam)

    def grad_Q(self, u: Tensor) -> Tensor:
        # 2 sinh(a) = m + m / (m + 1) with m = expm1(a): no cancellation at small a and, on
        # CPU, several times faster than torch.sinh; evaluated with few temporaries
        a = u.abs()
        m = a.clamp(max=_BIG).expm1_()
        out = m + 1.0
        torch.div(m, out, out=out)
        out.add_(m).mul_(self.lam / 2.0)
        big = a > _BIG
        a.add_(math.log(self.lam / 2.0)).exp_()
        return torch.where(big, a, out, out=out).copysign_(u)

    def grad_Q_into(self, u: Tensor, out: Tensor) -> Tensor:
        # grad_Q's arithmetic, with m + m/(m+1) as one addcdiv; |u| > 20 is rare and goes
        # through grad_Q, and so does any non-CPU tensor (testing for it would synchronise)
        if not u.is_cpu:
            return out.copy_(self.grad_Q(u))
        a = torch.abs(u, out=out)
        if a.numel() and a.max() > _BIG:
            return out.copy_(self.grad_Q(u))
        m = a.expm1_()
        return m.addcdiv_(m, m + 1.0).mul_(self.lam / 2.0).copysign_(u)

    def Q(self, u: Tensor) -> Tensor:
        small = self.lam * torch.cosh(u.clamp(-_BIG, _BIG))
        return torch.where(u.abs() <= _BIG, small, _scaled_exp_half(u, self.lam))

    def horizon(self, theta: Tensor) -> Tensor:
        return theta.abs().sum()


def _pnorm_horizon(theta: Tensor, p: float) -> Tensor:
    return (p - 1.0) ** (1.0 / p) * torch.linalg.vector_norm(theta, ord=p)


class PNorm(MirrorMap):
    """Homogeneous p-norm potential, p ≥ 2: R(θ) = |θ|^p / p.

    ∇R(θ) = sign(θ)|θ|^{p−1}; ∇Q(u) = sign(u)|u|^{1/(p−1)} (taken on |u|, so 0 maps to 0
    without a negative base); Q(u) = |u|^q / q with q = p/(p−1), so
    Q(∇R(θ)) = ((p−1)/p)|θ|^p.  α = p, φ_p(θ) = (p−1)^{1/p} ||θ||_p.
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
        return torch.sign(theta) * theta.abs().pow(self.p - 1.0)

    def grad_Q(self, u: Tensor) -> Tensor:
        return u.abs().pow_(1.0 / (self.p - 1.0)).copysign_(u)

    def grad_Q_into(self, u: Tensor, out: Tensor) -> Tensor:
        return torch.abs(u, out=out).pow_(1.0 / (self.p - 1.0)).copysign_(u)

    def Q(self, u: Tensor) -> Tensor:
        q = self.p / (self.p - 1.0)
        return u.abs().pow(q) / q

    def horizon(self, theta: Tensor) -> Tensor:
        return _pnorm_horizon(theta, self.p)


def _pow1p_minus_one(x: Tensor, a: float) -> Tensor:
    """(1 + x)^a − 1 for x ≥ 0, without cancellation at small x."""
    return torch.expm1(a * torch.log1p(x))


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
    evaluated with expm1/log1p and a series, so small |θ| ≪ λ loses no precision.
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
        y = u.abs() / self._c
        return _pow1p_minus_one(y, 1.0 / (self.p - 1.0)).mul_(self.lam).copysign_(u)

    def grad_Q_into(self, u: Tensor, out: Tensor) -> Tensor:
        y = torch.abs(u, out=out).div_(self._c)
        y.log1p_().mul_(1.0 / (self.p - 1.0)).expm1_()
        return y.mul_(self.lam).copysign_(u)

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


__all__ = [
    "MirrorMap", "Euclidean", "Hypentropy", "PNorm", "ShiftedPNorm",
    "euclidean", "hypentropy", "pnorm", "shifted_pnorm",
]
