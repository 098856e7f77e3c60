"""KKT residual on linear problems whose ℓ2 and ℓ1 max-margin solutions are known by hand.

Data: x = (2, 1) with y = +1 and x = (−2, −1) with y = −1, plus far-away points.  The
constraint y w·x ≥ 1 reads 2 w1 + w2 ≥ 1:
  min ||w||_2²  →  w = (2, 1)/5  (the ℓ2 max-margin direction, GD's limit),
  min ||w||_1²  →  w = (1/2, 0)  (the ℓ1 max-margin direction, hypentropy's limit).
"""

from __future__ import annotations

import math

import pytest
import torch
from geobench_mirror.kkt import KKTParams, KKTResidual
from geobench_mirror.objectives import Logistic
from torch import nn

from geobench.api import Arm, Data
from tests.mirror.helpers import BiasFreeMLP, context

EUCLID = {"name": "sgd", "lr": 0.1}
HYP = {"name": "mirror_descent", "lr": 0.1, "mirror_map": {"name": "hypentropy", "lam": 0.1}}


def linear_arm(w: list[float]) -> Arm:
    backbone = BiasFreeMLP([2, 1]).double()
    with torch.no_grad():
        backbone.layers[0].weight.copy_(torch.tensor([w], dtype=torch.float64))
    return Arm(backbone, nn.Identity(), Logistic())


def data() -> Data:
    x = torch.tensor([[2.0, 1.0], [-2.0, -1.0], [5.0, 4.0], [-3.0, -6.0]], dtype=torch.float64)
    y = torch.tensor([1, 0, 1, 0])
    return Data(x, y, x, y, x, y, 2, 4)


def residual(w: list[float], spec: dict) -> float:
    return KKTResidual(KKTParams(delta=0.05))(context(linear_arm(w), data(), spec))["residual"]


def test_l2_max_margin_is_kkt_for_euclidean_only():
    assert residual([0.4, 0.2], EUCLID) < 1e-10
    assert residual([0.5, 0.0], EUCLID) > 0.3


def test_l1_max_margin_is_kkt_for_hypentropy_only():
    assert residual([0.5, 0.0], HYP) < 1e-10
    assert residual([0.4, 0.2], HYP) > 0.2


def test_scale_invariance_and_non_separated_data():
    assert residual([40.0, 20.0], EUCLID) < 1e-10  # direction only
    assert residual([0.5, 1e-6], HYP) < 1e-6  # near-zero coordinate: subgradient
    assert math.isnan(residual([-1.0, 0.0], EUCLID))


def test_residual_by_hand_for_a_non_kkt_direction():
    """w = (1, 1): margin 3 on the active point; θ̃ = w/3; ∇(||θ̃||²/2) = θ̃; the only
    active gradient is x = (2, 1): best μ projects θ̃ onto x, the rest is the residual."""
    t = torch.tensor([1.0, 1.0], dtype=torch.float64) / 3
    x = torch.tensor([2.0, 1.0], dtype=torch.float64)
    r = t - (t @ x) / (x @ x) * x
    expected = float(r.norm() / t.norm())
    assert residual([1.0, 1.0], EUCLID) == pytest.approx(expected, rel=1e-9)
