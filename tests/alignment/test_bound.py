"""Theorem 1 bound against its formula; the corollaries' reading as valid inequalities."""

import dataclasses
import math

import numpy as np
import pytest
import torch
from geobench_alignment.bound import (
    AlignmentBound,
    BoundParams,
    log_theorem1_bound,
    lower_bound,
    tightness,
)
from geobench_alignment.objectives import NSCL, ContrastiveParams, NSCLParams, NTXent
from hypothesis import given, settings
from hypothesis import strategies as st
from torch import nn

from geobench.contract.interfaces import Arm
from geobench.geometry import linear_cka, rsa

from .helpers import Linear, arm, blobs, context


def direct_bound(lrs, tau, b, c, delta):
    t, s = len(lrs), sum(lrs)
    eps = math.sqrt(math.log(t * b / delta) / (2 * b))
    dlt = 2 * math.exp(2 / tau) * (1 / c + eps) / (1 - 1 / c - eps)
    return math.exp(s / (2 * tau**2 * b)) * s / (tau * math.sqrt(b)) * dlt


@pytest.mark.parametrize("tau,b,c,lrs", [
    (1.0, 1024, 100, [0.1] * 50),
    (0.5, 256, 1000, [0.3 * (1 + math.cos(math.pi * t / 20)) / 2 for t in range(20)]),
    (0.1, 4096, 200, [0.01] * 10),
])
def test_log_bound_matches_direct_formula(tau, b, c, lrs):
    got = log_theorem1_bound(lrs, tau, b, c, 0.05)
    assert got == pytest.approx(math.log(direct_bound(lrs, tau, b, c, 0.05)), rel=1e-12)


def test_vacuous_and_empty_cases():
    # 1 - 1/C - eps <= 0: two classes, small batch
    assert log_theorem1_bound([0.1] * 10, 0.5, 8, 2, 0.05) == math.inf
    assert log_theorem1_bound([], 0.5, 256, 10, 0.05) == -math.inf
    # astronomically large but finite in log space (exp would overflow)
    assert math.isfinite(log_theorem1_bound([1.0] * 10_000, 0.1, 64, 100, 0.05))


def test_lower_bound_formula():
    for x in (0.0, 0.01, 0.5, 1.0, 3.0, 1e6):
        log_x = math.log(x) if x > 0 else -math.inf
        assert lower_bound(log_x) == pytest.approx((1 - x) / (1 + x))
    assert lower_bound(math.inf) == -1.0
    assert lower_bound(1e6) == -1.0


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), noise=st.floats(0.0, 2.0))
def test_corollary_reading_is_a_valid_inequality(seed, noise):
    """With D = ||Sigma_a - Sigma_b||_F, rho = D / ||H Sigma_a H||_F and r = D / ||u_a||
    (centred off-diagonal), CKA >= (1-rho)/(1+rho) and RSA >= (1-r)/(1+r)."""
    g = np.random.default_rng(seed)
    za = g.normal(size=(30, 5))
    zb = za + noise * g.normal(size=(30, 5))
    za /= np.linalg.norm(za, axis=1, keepdims=True)
    zb /= np.linalg.norm(zb, axis=1, keepdims=True)
    sa, sb = za @ za.T, zb @ zb.T
    d = np.linalg.norm(sa - sb)
    h = np.eye(30) - 1 / 30
    off = sa[~np.eye(30, dtype=bool)]
    rho = d / np.linalg.norm(h @ sa @ h)
    r = d / np.linalg.norm(off - off.mean())
    cka = linear_cka(torch.tensor(za), torch.tensor(zb))
    rs = rsa(torch.tensor(za), torch.tensor(zb), rdm="cosine")
    assert cka >= (1 - rho) / (1 + rho) - 1e-9
    assert rs >= (1 - r) / (1 + r) - 1e-9


def test_metric_reads_run_and_reports_bound_next_to_measured():
    data = blobs(classes=3, batch_size=16)
    a = arm(NTXent(ContrastiveParams(tau=1.0)), seed=0)
    b = arm(NSCL(NSCLParams(tau=1.0)), seed=1)
    lrs = [1e-4] * 5
    out = AlignmentBound(BoundParams(delta=0.1))(context(data, b, reference=a, lrs=lrs))
    log_d = math.log(direct_bound(lrs, 1.0, 16, 3, 0.1))
    assert out["log10_bound"] == pytest.approx(log_d / math.log(10))
    za = a.embed(data.reference_x).detach().double()
    zb = b.embed(data.reference_x).detach().double()
    za, zb = za / za.norm(dim=1, keepdim=True), zb / zb.norm(dim=1, keepdim=True)
    sa, sb = (za @ za.T).numpy(), (zb @ zb.T).numpy()
    assert out["gap"] == pytest.approx(np.linalg.norm(sa - sb), rel=1e-6)
    n = sa.shape[0]
    h = np.eye(n) - 1 / n
    rho = math.exp(log_d) / np.linalg.norm(h @ sa @ h)
    assert out["log10_rho"] == pytest.approx(math.log10(rho))
    assert out["cka_lower"] == pytest.approx((1 - rho) / (1 + rho))
    assert out["cka"] == pytest.approx(linear_cka(za, zb))
    assert out["rsa"] == pytest.approx(rsa(za, zb, rdm="cosine"))
    assert -1 <= out["rsa_lower"] <= 1
    assert out["cka_lower"] > 0.9  # a tiny bound: the corollary says CKA is near 1
    assert out["cka_excess"] == pytest.approx(out["cka"] - (1 - rho) / (1 + rho))


def test_excess_is_left_out_where_the_lower_bound_says_nothing():
    data = blobs(classes=3, batch_size=16)
    a = arm(NTXent(ContrastiveParams(tau=0.1)), seed=0)
    b = arm(NSCL(NSCLParams(tau=0.1)), seed=1)
    out = AlignmentBound(BoundParams())(context(data, b, reference=a, lrs=[1.0] * 50))
    assert out["cka_lower"] <= 0 and out["rsa_lower"] <= 0  # an astronomical bound
    assert math.isnan(out["cka_excess"]) and math.isnan(out["rsa_excess"])


def test_tau_falls_back_to_reference_arm_and_nan_without_any():
    from geobench_alignment.objectives import CrossEntropy

    data = blobs(classes=3, batch_size=16)
    cl = arm(NTXent(ContrastiveParams(tau=0.25)))
    ce = arm(CrossEntropy(4, 3), seed=1)
    metric = AlignmentBound(BoundParams())
    out = metric(context(data, ce, reference=cl, lrs=[0.01] * 3))
    assert out["log10_bound"] == pytest.approx(
        math.log10(direct_bound([0.01] * 3, 0.25, 16, 3, 0.05)))
    out = metric(context(data, ce, reference=arm(CrossEntropy(4, 3)), lrs=[0.01] * 3))
    assert math.isnan(out["log10_bound"]) and math.isnan(out["cka_lower"])
    for key in ("vacuous", "tightness", "tightness_batch"):
        assert math.isnan(out[key])
    assert math.isfinite(out["cka"]) and math.isfinite(out["gap_batch"])


def _embed(a, x):
    """Head embeddings computed directly in eval mode, row-normalised, float64 numpy."""
    was = a.training
    a.eval()
    with torch.no_grad():
        z = a.head(a.backbone(x)).double().numpy()
    a.train(was)
    return z / np.linalg.norm(z, axis=1, keepdims=True)


def _gap(a, b, x):
    za, zb = _embed(a, x), _embed(b, x)
    return float(np.linalg.norm(za @ za.T - zb @ zb.T))


def _bn_arm(objective, seed):
    """An arm whose backbone ends in batch norm: train and eval mode embed differently."""
    torch.manual_seed(seed)
    return Arm(nn.Sequential(Linear(6, 5), nn.BatchNorm1d(5)), Linear(5, 4), objective)


def _run(tau, lrs, classes=3, batch_size=16, make=arm):
    """The metric on CL vs NSCL arms (different inits), with two distinct batch views;
    returns its output, the reference-set gap and the batch gap computed directly."""
    data = blobs(classes=classes, batch_size=batch_size)
    a = make(NTXent(ContrastiveParams(tau=tau)), seed=0)
    b = make(NSCL(NSCLParams(tau=tau)), seed=1)
    a.train()
    b.train()
    ctx = context(data, b, reference=a, lrs=lrs)
    g = torch.Generator().manual_seed(5)
    x = ctx.batch.x
    views = [x + 0.5 * torch.randn(x.shape, generator=g),
             0.8 * x + torch.randn(x.shape, generator=g)]
    out = AlignmentBound(BoundParams(delta=0.05))(dataclasses.replace(ctx, views=views))
    assert a.training and b.training
    return out, _gap(a, b, data.reference_x), _gap(a, b, torch.cat(views))


TRIVIAL_REF = 2 * math.sqrt(40 * 39)  # blobs' reference set: n = 40
TRIVIAL_BATCH = 2 * math.sqrt(32 * 31)  # 2B = 32 view rows


@pytest.mark.parametrize("make", [arm, _bn_arm])
def test_gaps_match_numpy_on_reference_set_and_batch_views(make):
    out, gap, gap_batch = _run(1.0, [0.01] * 3, make=make)
    assert out["gap"] == pytest.approx(gap, abs=1e-10)
    assert out["gap_batch"] == pytest.approx(gap_batch, abs=1e-10)
    assert out["gap"] > 0.1 and out["gap_batch"] > 0.1


def test_bound_below_both_trivial_bounds_reports_tightness():
    lrs = [0.01] * 3
    bound = direct_bound(lrs, 2.0, 16, 3, 0.05)
    assert bound < TRIVIAL_BATCH
    out, gap, gap_batch = _run(2.0, lrs)
    assert out["vacuous"] == 0.0
    assert out["tightness"] == pytest.approx(gap / bound, rel=1e-9)
    assert out["tightness_batch"] == pytest.approx(gap_batch / bound, rel=1e-9)


def test_bound_between_the_batch_and_reference_trivial_bounds():
    lrs = [7.0] * 3
    bound = direct_bound(lrs, 2.0, 16, 3, 0.05)
    assert TRIVIAL_BATCH < bound < TRIVIAL_REF
    out, gap, _ = _run(2.0, lrs)
    assert out["vacuous"] == 0.0
    assert out["tightness"] == pytest.approx(gap / bound, rel=1e-9)
    assert math.isnan(out["tightness_batch"])


def test_bound_above_the_trivial_bound_is_vacuous():
    lrs = [0.01] * 3
    bound = direct_bound(lrs, 0.1, 16, 3, 0.05)
    assert bound > TRIVIAL_REF
    out, _, _ = _run(0.1, lrs)
    assert out["log10_bound"] == pytest.approx(math.log10(bound))
    assert out["vacuous"] == 1.0
    assert math.isnan(out["tightness"]) and math.isnan(out["tightness_batch"])


def test_infinite_bound_is_vacuous():
    # C = 2, B = 8: 1 - 1/C - eps < 0
    out, gap, _ = _run(1.0, [0.01] * 3, classes=2, batch_size=8)
    assert math.isnan(out["log10_bound"])
    assert out["vacuous"] == 1.0
    assert math.isnan(out["tightness"]) and math.isnan(out["tightness_batch"])
    assert out["gap"] == pytest.approx(gap, abs=1e-10)


def test_tightness_edge_cases():
    assert tightness(0.5, math.log(2.0), math.log(10.0)) == pytest.approx(0.25)
    assert math.isnan(tightness(1.0, math.log(10.0), math.log(10.0)))  # bound = trivial
    assert math.isnan(tightness(1.0, math.inf, math.log(10.0)))
    assert math.isnan(tightness(1.0, math.nan, math.log(10.0)))
    assert math.isnan(tightness(0.0, -math.inf, math.log(10.0)))  # no steps, no gap: 0 / 0
    assert tightness(1.0, -math.inf, math.log(10.0)) == math.inf
    assert tightness(1.0, -800.0, math.log(10.0)) == math.inf  # e^800 overflows a float
    assert tightness(0.0, math.log(2.0), math.log(10.0)) == 0.0
