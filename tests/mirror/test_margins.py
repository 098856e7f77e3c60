"""Q-margin, horizon function and alignment time against independent formulas."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch
from geobench_mirror import maps
from geobench_mirror.horizon import horizon_closed, horizon_limit
from geobench_mirror.margins import (
    AlignmentParams,
    AlignmentTime,
    HorizonMetric,
    MarginParams,
    QMargin,
)
from geobench_mirror.objectives import Logistic
from torch import nn

from geobench.contract.interfaces import Arm, MetricParams
from tests.mirror.helpers import context, make_arm, record, teacher_data

HYP = {"name": "mirror_descent", "lr": 0.1, "mirror_map": {"name": "hypentropy", "lam": 0.3}}


def numpy_forward(arm, x: np.ndarray) -> np.ndarray:
    """The bias-free ReLU MLP, recomputed in numpy."""
    ws = [layer.weight.detach().numpy() for layer in arm.backbone.layers]
    h = x
    for i, w in enumerate(ws):
        h = h @ w.T
        if i < len(ws) - 1:
            h = np.maximum(h, 0.0)
    return h


def min_margin(arm, data) -> float:
    f = numpy_forward(arm, data.train_x.numpy())[:, 0]
    y = 2.0 * data.train_y.numpy() - 1.0
    return float((y * f).min())


def flat_params(arm) -> np.ndarray:
    return np.concatenate([p.detach().numpy().ravel() for p in arm.parameters()])


def test_q_margin_is_the_normalised_l2_margin_for_euclidean():
    arm, data = make_arm([4, 6, 1]), teacher_data()
    out = QMargin(MarginParams())(context(arm, data, {"name": "sgd", "lr": 0.1}))
    theta = flat_params(arm)
    expected = min_margin(arm, data) / np.linalg.norm(theta) ** 2
    assert out["gamma"] == pytest.approx(expected, rel=1e-12)
    assert out["gamma_l2"] == pytest.approx(expected, rel=1e-12)
    assert out["gamma_phi"] == pytest.approx(expected, rel=1e-12)


def test_q_margin_hypentropy_and_pnorm_formulas():
    arm, data = make_arm([4, 6, 3, 1], seed=1), teacher_data(seed=1)
    theta, m = flat_params(arm), min_margin(arm, data)
    out = QMargin(MarginParams())(context(arm, data, HYP))
    # α = 1, Q(∇R(θ)) = Σ sqrt(θ² + λ²), L = 3
    assert out["gamma"] == pytest.approx(m / np.sqrt(theta**2 + 0.09).sum() ** 3, rel=1e-12)
    assert out["gamma_phi"] == pytest.approx(m / np.abs(theta).sum() ** 3, rel=1e-12)
    spec = {"name": "mirror_descent", "lr": 0.1, "mirror_map": {"name": "pnorm", "p": 3}}
    out = QMargin(MarginParams())(context(arm, data, spec))
    # α = 3: (3 · (2/3) Σ|θ|³)^{L/3}
    assert out["gamma"] == pytest.approx(m / (2 * (np.abs(theta) ** 3).sum()), rel=1e-12)
    assert out["gamma_phi"] == pytest.approx(out["gamma"], rel=1e-10)


def test_multiclass_margin_and_mixed_degrees():
    torch.manual_seed(0)
    arm = make_arm([4, 5, 3])
    data = teacher_data()
    data.train_y = torch.arange(len(data.train_x)) % 3
    f = numpy_forward(arm, data.train_x.numpy())
    y = data.train_y.numpy()
    m = min(f[i, y[i]] - max(f[i, j] for j in range(3) if j != y[i]) for i in range(len(y)))
    out = QMargin(MarginParams())(context(arm, data, {"name": "sgd", "lr": 1.0}))
    assert out["min_margin"] == pytest.approx(m, rel=1e-12)
    mixed = {"name": "mirror_descent", "lr": 0.1,
             "maps": {"*.0.*": {"name": "hypentropy", "lam": 0.1}, "*": {"name": "euclidean"}}}
    with pytest.raises(ValueError, match="one horizon degree alpha"):
        QMargin(MarginParams())(context(arm, data, mixed))


def test_q_margin_needs_a_homogeneous_backbone():
    arm = Arm(nn.Linear(4, 1), nn.Identity(), Logistic()).double()
    with pytest.raises(ValueError, match="homogeneity_degree"):
        QMargin(MarginParams())(context(arm, teacher_data(), {"name": "sgd", "lr": 0.1}))


ALL_MAPS = [maps.euclidean(), maps.hypentropy(0.01), maps.hypentropy(5.0), maps.pnorm(3.0),
            maps.pnorm(2.5), maps.shifted_pnorm(3.0, 0.5), maps.shifted_pnorm(4.0, 3.0)]


@pytest.mark.parametrize("m", ALL_MAPS, ids=[repr(m) for m in ALL_MAPS])
def test_horizon_closed_form_is_the_small_eta_limit(m):
    g = torch.Generator().manual_seed(3)
    theta = torch.randn(200, generator=g, dtype=torch.float64) * torch.logspace(-3, 2, 200,
                                                                               dtype=torch.float64)
    closed = float(horizon_closed([(m, theta)], m.alpha))
    numeric = float(horizon_limit([(m, theta)], m.alpha))
    assert numeric == pytest.approx(closed, rel=1e-8)
    # the textbook forms: ℓ2, ℓ1, (p−1)^{1/p} ℓp
    t = theta.numpy()
    if isinstance(m, maps.Hypentropy):
        assert closed == pytest.approx(np.abs(t).sum(), rel=1e-12)
    elif isinstance(m, maps.Euclidean):
        assert closed == pytest.approx(np.linalg.norm(t), rel=1e-12)
    else:
        expected = (m.p - 1) ** (1 / m.p) * (np.abs(t) ** m.p).sum() ** (1 / m.p)
        assert closed == pytest.approx(expected, rel=1e-12)


def test_horizon_of_groups_with_a_common_degree():
    g = torch.Generator().manual_seed(4)
    a, b = (torch.randn(30, generator=g, dtype=torch.float64) for _ in range(2))
    pairs = [(maps.pnorm(3.0), a), (maps.shifted_pnorm(3.0, 2.0), b)]
    expected = (2.0 * ((a.abs() ** 3).sum() + (b.abs() ** 3).sum())) ** (1 / 3)
    assert float(horizon_closed(pairs, 3.0)) == pytest.approx(float(expected), rel=1e-12)
    assert float(horizon_limit(pairs, 3.0)) == pytest.approx(float(expected), rel=1e-8)


def test_horizon_metric_reports_agreement_and_handles_maps_without_closed_form():
    class NoClosedForm(maps.Hypentropy):
        def horizon(self, theta):
            raise NotImplementedError

    arm, data = make_arm([4, 6, 1]), teacher_data()
    out = HorizonMetric(MetricParams())(context(arm, data, HYP))
    assert out["rel_gap"] < 1e-8
    assert out["closed"] == pytest.approx(np.abs(flat_params(arm)).sum(), rel=1e-12)
    theta = torch.cat([p.detach().reshape(-1) for p in arm.parameters()])
    numeric = float(horizon_limit([(NoClosedForm(0.3), theta)], 1.0))
    assert numeric == pytest.approx(out["closed"], rel=1e-8)


def test_alignment_time_ratio_and_first_step():
    arm, data = make_arm([4, 6, 1]), teacher_data()
    metric = AlignmentTime(AlignmentParams(eps=0.05))
    theta = flat_params(arm)
    history: dict = {}
    out = metric(context(arm, data, HYP, step=0, history=history))
    expected = (np.abs(theta).sum() / np.sqrt(theta**2 + 0.09).sum()) ** 2
    assert out["ratio"] == pytest.approx(expected, rel=1e-12)
    assert out["aligned"] == 0.0 and math.isnan(out["step"])
    record(history, 0, out)
    with torch.no_grad():  # grow θ far into the horizon regime
        for p in arm.parameters():
            p.mul_(1e4)
    out = metric(context(arm, data, HYP, step=40, history=history))
    assert out["aligned"] == 1.0 and out["step"] == 40.0
    record(history, 40, out)
    with torch.no_grad():
        for p in arm.parameters():
            p.mul_(1e-4)
    out = metric(context(arm, data, HYP, step=80, history=history))
    assert out["aligned"] == 0.0 and out["step"] == 40.0  # the first time is kept
    euclid = metric(context(arm, data, {"name": "sgd", "lr": 0.1}, step=0, history={}))
    assert euclid["ratio"] == pytest.approx(1.0, rel=1e-12) and euclid["step"] == 0.0


def test_drawdown_is_the_fall_below_the_late_running_maximum():
    arm, data = make_arm([4, 6, 1]), teacher_data()
    f = torch.as_tensor(numpy_forward(arm, data.train_x.numpy())[:, 0])
    keep = f.abs() > 1e-3  # the arm's own labels where it is not 0: separated
    data = dataclasses.replace(data, train_x=data.train_x[keep], train_y=(f[keep] > 0).long())
    metric = QMargin(MarginParams(late=0.5))  # total_steps 100: the late phase is step ≥ 50
    gamma = metric(context(arm, data, {"name": "sgd", "lr": 0.1}))["gamma"]
    assert gamma > 0
    # earlier late values 2γ (step 50) and 4γ (step 60), an early 10γ (step 10, ignored)
    history = {"gamma": [(10, 10 * gamma), (50, 2 * gamma), (60, 4 * gamma)]}
    out = metric(context(arm, data, {"name": "sgd", "lr": 0.1}, step=70, history=history))
    assert out["drawdown"] == pytest.approx(0.75, rel=1e-12)  # (4γ − γ) / 4γ
    history = {"gamma": [(50, 0.5 * gamma)]}
    out = metric(context(arm, data, {"name": "sgd", "lr": 0.1}, step=70, history=history))
    assert out["drawdown"] == 0.0  # a new maximum
    early = metric(context(arm, data, {"name": "sgd", "lr": 0.1}, step=49))
    assert math.isnan(early["drawdown"])
