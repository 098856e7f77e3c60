"""Dual potential Q(∇R(θ)) and the horizon function φ_α of a set of (map, tensor) pairs.

For parameters split into groups g with maps R_g of a common degree α:

    Q(∇R(θ))  = Σ_g Σ_j Q_g(∇R_g(θ_gj))
    φ_α(θ)    = lim_{η→0} η (α Q(∇R(θ/η)))^{1/α}
              = (Σ_g φ_g(θ_g)^α)^{1/α}            (closed form, from each map's horizon)

Everything is evaluated in float64.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from geobench_mirror.maps import MirrorMap

Pairs = list[tuple[MirrorMap, Tensor]]


def common_alpha(pairs: Pairs, what: str) -> float:
    """The horizon degree α shared by all maps; a clear error when absent or mixed."""
    alphas = {m.alpha for m, _ in pairs}
    if None in alphas:
        missing = sorted({repr(m) for m, _ in pairs if m.alpha is None})
        raise ValueError(f"{what} needs the horizon degree alpha of every map; {missing} has none")
    if len(alphas) != 1:
        kinds = sorted({f"{m!r}: alpha={m.alpha}" for m, _ in pairs})
        raise ValueError(
            f"{what} needs one horizon degree alpha for all parameters, got {kinds}; "
            "Q-margins of mixed degree are not defined"
        )
    return float(alphas.pop())


def dual_potential(pairs: Pairs) -> Tensor:
    """Σ Q(∇R(θ)) over all pairs, in float64."""
    total = torch.zeros((), dtype=torch.float64)
    for m, theta in pairs:
        t = theta.detach().to(torch.float64)
        total = total + m.Q(m.grad_R(t)).sum().cpu()
    return total


def horizon_closed(pairs: Pairs, alpha: float) -> Tensor:
    """(Σ_g φ_g(θ_g)^α)^{1/α} from each map's closed form (differentiable in θ)."""
    total = sum(m.horizon(theta.to(torch.float64)).cpu() ** alpha for m, theta in pairs)
    return total ** (1.0 / alpha)


def horizon_limit(pairs: Pairs, alpha: float, rtol: float = 1e-10) -> Tensor:
    """η (α Q(∇R(θ/η)))^{1/α} along η = 10^-1, 10^-2, ..., 10^-15.

    Stops when two successive values agree to ``rtol`` (relative) and returns the last
    finite value (the sequence stops early if Q overflows at small η).  Differentiable
    in θ.
    """
    last: Tensor | None = None
    for k in range(1, 16):
        eta = 10.0 ** (-k)
        q = sum(m.Q(m.grad_R(theta.to(torch.float64) / eta)).sum().cpu() for m, theta in pairs)
        value = eta * (alpha * q) ** (1.0 / alpha)
        if not math.isfinite(float(value)):
            break
        if last is not None and abs(float(value - last)) <= rtol * abs(float(value)):
            return value
        last = value
    if last is None:
        raise ValueError("the horizon limit overflowed already at eta = 0.1")
    return last


def horizon(pairs: Pairs, alpha: float) -> Tensor:
    """The closed form when every map has one, else the numerical η → 0 limit."""
    try:
        return horizon_closed(pairs, alpha)
    except NotImplementedError:
        return horizon_limit(pairs, alpha)
