"""Mirror maps against hand-written formulas, round trips, Fenchel–Young and conjugacy."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from geobench_mirror import maps
from scipy.optimize import minimize_scalar

BUILTIN = [
    maps.euclidean(),
    maps.hypentropy(0.1),
    maps.hypentropy(10.0),
    maps.pnorm(2.0),
    maps.pnorm(3.0),
    maps.pnorm(4.5),
    maps.shifted_pnorm(3.0, 0.5),
    maps.shifted_pnorm(4.0, 2.0),
]
IDS = [repr(m) for m in BUILTIN]


def thetas() -> torch.Tensor:
    """Random θ of both signs over 13 orders of magnitude, and 0."""
    g = torch.Generator().manual_seed(0)
    scales = [1e-6, 1e-3, 1e-1, 1.0, 10.0, 1e3, 1e6]
    parts = [s * torch.randn(50, generator=g, dtype=torch.float64) for s in scales]
    return torch.cat([*parts, torch.zeros(1, dtype=torch.float64)])


def reference_R(m: maps.MirrorMap, t: float) -> float:
    """The potentials as written in NOTES.md / the map docstrings, one float at a time."""
    if isinstance(m, maps.Euclidean):
        return t * t / 2
    if isinstance(m, maps.Hypentropy):
        return t * math.asinh(t / m.lam) - math.sqrt(t * t + m.lam**2)
    if isinstance(m, maps.PNorm):
        return abs(t) ** m.p / m.p
    p, lam = m.p, m.lam
    return ((abs(t) + lam) ** p - lam**p) / p - lam ** (p - 1) * abs(t)


def reference_grad_R(m: maps.MirrorMap, t: float) -> float:
    if isinstance(m, maps.Euclidean):
        return t
    if isinstance(m, maps.Hypentropy):
        return math.asinh(t / m.lam)
    if isinstance(m, maps.PNorm):
        return math.copysign(abs(t) ** (m.p - 1), t)
    return math.copysign((abs(t) + m.lam) ** (m.p - 1) - m.lam ** (m.p - 1), t)


@pytest.mark.parametrize("m", BUILTIN, ids=IDS)
def test_round_trip_float64(m):
    theta = thetas()
    back = m.grad_Q(m.grad_R(theta))
    torch.testing.assert_close(back, theta, rtol=1e-11, atol=1e-300)


@pytest.mark.parametrize("m", BUILTIN, ids=IDS)
def test_round_trip_float32(m):
    theta = thetas().float()
    theta = theta[theta.abs() < 1e4]  # keep |θ|^p finite in float32
    back = m.grad_Q(m.grad_R(theta))
    torch.testing.assert_close(back, theta, rtol=2e-5, atol=1e-30)


@pytest.mark.parametrize("m", BUILTIN, ids=IDS)
def test_fenchel_young_equality(m):
    theta = thetas()
    u = m.grad_R(theta)
    lhs = m.Q(u)
    rhs = theta * u - m.R(theta)
    scale = torch.maximum(lhs.abs(), (theta * u).abs())
    assert torch.all((lhs - rhs).abs() <= 1e-11 * scale + 1e-300)


@pytest.mark.parametrize("m", BUILTIN, ids=IDS)
def test_potential_and_gradient_match_formulas(m):
    theta = thetas()
    theta = theta[theta.abs() <= 1e3]  # where the naive float formulas are still accurate
    R = torch.tensor([reference_R(m, t) for t in theta.tolist()], dtype=torch.float64)
    G = torch.tensor([reference_grad_R(m, t) for t in theta.tolist()], dtype=torch.float64)
    torch.testing.assert_close(m.grad_R(theta), G, rtol=1e-9, atol=1e-12)
    # the naive formula for R cancels at |θ| ≪ λ: compare at absolute precision
    torch.testing.assert_close(m.R(theta), R, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("m", BUILTIN, ids=IDS)
def test_Q_is_the_convex_conjugate(m):
    """Q(u) = sup_θ θu − R(θ), the supremum found by a scalar optimiser on reference R."""
    for t0 in [-2.0, -0.3, 0.05, 0.7, 3.0]:
        u = reference_grad_R(m, t0)
        res = minimize_scalar(lambda t, u=u: -(t * u - reference_R(m, t)),
                              bracket=(t0 - 1.0, t0 + 1.0), tol=1e-12)
        sup = -res.fun
        q = float(m.Q(torch.tensor([u], dtype=torch.float64))[0])
        assert q == pytest.approx(sup, rel=1e-8, abs=1e-10)


def test_documented_dual_potentials():
    theta = thetas()
    h = maps.hypentropy(0.3)
    torch.testing.assert_close(h.Q(h.grad_R(theta)), torch.sqrt(theta**2 + 0.09), rtol=1e-12,
                               atol=0)
    p = maps.pnorm(3.0)
    torch.testing.assert_close(p.Q(p.grad_R(theta)), (2 / 3) * theta.abs() ** 3, rtol=1e-12,
                               atol=1e-300)
    e = maps.euclidean()
    torch.testing.assert_close(e.Q(e.grad_R(theta)), theta**2 / 2, rtol=1e-15, atol=0)


def test_hypentropy_no_overflow_for_small_lambda():
    """λ sinh(u) with sinh(u) beyond float32 range but the product finite."""
    h = maps.hypentropy(1e-30)
    u = torch.tensor([100.0, -100.0, 3.0], dtype=torch.float32)
    expected = np.array([1e-30 * math.sinh(100.0), -1e-30 * math.sinh(100.0),
                         1e-30 * math.sinh(3.0)])
    assert torch.isinf(1e-30 * torch.sinh(u[:1])).all()  # the naive form overflows
    np.testing.assert_allclose(h.grad_Q(u).double().numpy(), expected, rtol=1e-5)
    np.testing.assert_allclose(h.Q(u).double().numpy(),
                               1e-30 * np.cosh([100.0, 100.0, 3.0]), rtol=1e-5)


def test_pnorm_dual_map_at_zero_is_finite():
    p = maps.pnorm(3.0)
    u = torch.tensor([0.0, -0.0, 1e-40, -1e-300], dtype=torch.float64)
    out = p.grad_Q(u)
    assert torch.isfinite(out).all()
    assert out[0] == 0 and out[1] == 0
    torch.testing.assert_close(out[2:], torch.tensor([1e-20, -1e-150], dtype=torch.float64))


def test_hypentropy_asinh_is_accurate_for_negative_theta():
    """asinh, not log(sqrt(θ²+λ²)+θ): the latter loses all digits at θ ≪ 0."""
    h = maps.hypentropy(1.0)
    theta = torch.tensor([-1e8], dtype=torch.float64)
    assert float(h.grad_R(theta)[0]) == pytest.approx(-math.log(2e8), rel=1e-12)


def test_alpha_and_parameters():
    assert maps.euclidean().alpha == 2.0
    assert maps.hypentropy(0.5).alpha == 1.0
    assert maps.pnorm(3.0).alpha == 3.0
    assert maps.shifted_pnorm(4.0, 1.0).alpha == 4.0
    with pytest.raises(ValueError, match="p >= 2"):
        maps.pnorm(1.5)
    with pytest.raises(ValueError, match="lam > 0"):
        maps.hypentropy(0.0)
    assert repr(maps.hypentropy(0.1)) == "hypentropy(lam=0.1)"
    assert maps.hypentropy(0.1) == maps.hypentropy(0.1) != maps.hypentropy(0.2)
