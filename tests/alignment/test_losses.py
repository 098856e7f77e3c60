"""Each loss against a direct, loop-based computation of its formula."""

import math

import pytest
import torch
from geobench_alignment import losses


def _views(b=6, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(b, d, generator=g, dtype=torch.float64),
            torch.randn(b, d, generator=g, dtype=torch.float64))


def _sim(z1, z2, tau):
    """Python lists: view a in 0..2B-1, sample a % B, cosine / tau."""
    zs = [v / v.norm() for v in list(z1) + list(z2)]
    return [[float(u @ v) / tau for v in zs] for u in zs]


def ref_nt_xent(z1, z2, tau):
    b = z1.shape[0]
    s = _sim(z1, z2, tau)
    total = 0.0
    for a in range(2 * b):
        p = (a + b) % (2 * b)
        den = sum(math.exp(s[a][k]) for k in range(2 * b) if k != a)
        total += -math.log(math.exp(s[a][p]) / den)
    return total / (2 * b)


def ref_nscl(z1, z2, y, tau, with_pos=True):
    b = z1.shape[0]
    s = _sim(z1, z2, tau)
    lab = [int(v) for v in y] * 2
    terms = []
    for a in range(2 * b):
        p = (a + b) % (2 * b)
        negs = [math.exp(s[a][k]) for k in range(2 * b) if lab[k] != lab[a]]
        if not with_pos and not negs:
            continue  # undefined term: left out of the mean
        den = sum(negs) + (math.exp(s[a][p]) if with_pos else 0.0)
        terms.append(-math.log(math.exp(s[a][p]) / den))
    return sum(terms) / len(terms) if terms else 0.0


def ref_supcon(z1, z2, y, tau):
    b = z1.shape[0]
    s = _sim(z1, z2, tau)
    lab = [int(v) for v in y] * 2
    total = 0.0
    for a in range(2 * b):
        den = sum(math.exp(s[a][k]) for k in range(2 * b) if k != a)
        pos = [k for k in range(2 * b) if k != a and lab[k] == lab[a]]
        total += -sum(math.log(math.exp(s[a][p]) / den) for p in pos) / len(pos)
    return total / (2 * b)


LABELS = {
    "mixed": torch.tensor([0, 1, 0, 2, 1, 0]),
    "one_class": torch.zeros(6, dtype=torch.long),
    "singleton": torch.tensor([0, 0, 1, 1, 1, 2]),  # class 2 has a single sample
    "all_distinct": torch.arange(6),
}


@pytest.mark.parametrize("tau", [0.1, 0.5, 1.0])
def test_nt_xent_matches_loop(tau):
    z1, z2 = _views()
    assert float(losses.nt_xent(z1, z2, tau)) == pytest.approx(ref_nt_xent(z1, z2, tau), rel=1e-10)


@pytest.mark.parametrize("case", sorted(LABELS))
@pytest.mark.parametrize("with_pos", [True, False])
@pytest.mark.parametrize("tau", [0.2, 1.0])
def test_nscl_matches_loop(case, with_pos, tau):
    z1, z2 = _views(seed=1)
    y = LABELS[case]
    got = float(losses.nscl(z1, z2, y, tau, positive_in_denominator=with_pos))
    assert got == pytest.approx(ref_nscl(z1, z2, y, tau, with_pos), rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("case", sorted(LABELS))
@pytest.mark.parametrize("tau", [0.2, 1.0])
def test_supcon_matches_loop(case, tau):
    z1, z2 = _views(seed=2)
    y = LABELS[case]
    got = float(losses.supcon(z1, z2, y, tau))
    assert got == pytest.approx(ref_supcon(z1, z2, y, tau), rel=1e-10)


def test_edge_case_values():
    z1, z2 = _views(seed=3)
    tau = 0.5
    one = LABELS["one_class"]
    # NSCL with the positive in the denominator: every term is -log(1) = 0
    assert float(losses.nscl(z1, z2, one, tau)) == pytest.approx(0.0, abs=1e-12)
    # without it no anchor has a negative: the loss is 0 and still differentiable
    z1g = z1.clone().requires_grad_()
    loss = losses.nscl(z1g, z2, one, tau, positive_in_denominator=False)
    loss.backward()
    assert float(loss.detach()) == 0.0 and z1g.grad is not None
    # SupCon over one class: all 2B-1 others are positives, the loss is >= log(2B-1)
    assert float(losses.supcon(z1, z2, one, tau)) >= math.log(11) - 1e-12
    # distinct labels: NSCL (with positive) and SupCon are NT-Xent
    distinct = LABELS["all_distinct"]
    cl = float(losses.nt_xent(z1, z2, tau))
    assert float(losses.nscl(z1, z2, distinct, tau)) == pytest.approx(cl)
    assert float(losses.supcon(z1, z2, distinct, tau)) == pytest.approx(cl)


def test_losses_are_scale_invariant_and_differentiable():
    z1, z2 = _views(seed=4)
    y = LABELS["mixed"]
    for fn in (lambda a, b: losses.nt_xent(a, b, 0.3),
               lambda a, b: losses.nscl(a, b, y, 0.3),
               lambda a, b: losses.supcon(a, b, y, 0.3)):
        assert float(fn(3.0 * z1, 0.5 * z2)) == pytest.approx(float(fn(z1, z2)))
        a = z1.clone().requires_grad_()
        fn(a, z2).backward()
        assert torch.isfinite(a.grad).all()


def test_cl_nscl_gap_within_paper_bound():
    """|L_CL - L_NSCL| <= log(1 + e^2/(C-1)) (positive in the denominator, tau = 1)."""
    g = torch.Generator().manual_seed(5)
    for c in (2, 5, 20):
        y = torch.arange(64) % c
        z1, z2 = torch.randn(64, 8, generator=g), torch.randn(64, 8, generator=g)
        gap = abs(float(losses.nt_xent(z1, z2, 1.0)) - float(losses.nscl(z1, z2, y, 1.0)))
        assert gap <= math.log(1 + math.e**2 / (c - 1))


def test_shape_mismatch_rejected():
    with pytest.raises(ValueError, match="equal shape"):
        losses.nt_xent(torch.randn(4, 3), torch.randn(5, 3), 0.5)
