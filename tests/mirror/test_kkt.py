"""KKT residual on linear problems whose ℓ2 and ℓ1 max-margin solutions are known by hand,
and the residual curve over δ against an independent recomputation.

Data: x = (2, 1) with y = +1 and x = (−2, −1) with y = −1, plus far-away points.  The
constraint y w·x ≥ 1 reads 2 w1 + w2 ≥ 1:
  min ||w||_2²  →  w = (2, 1)/5  (the ℓ2 max-margin direction, GD's limit),
  min ||w||_1²  →  w = (1/2, 0)  (the ℓ1 max-margin direction, hypentropy's limit).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from geobench_mirror.kkt import DEFAULT_DELTAS, KKT_RESIDUAL_FIELDS, KKTParams, KKTResidual
from geobench_mirror.objectives import Logistic
from pydantic import ValidationError
from scipy.optimize import nnls
from torch import nn

from geobench.contract.interfaces import Arm, Data
from tests.mirror.helpers import BiasFreeMLP, context, teacher_data

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


def evaluate(arm: Arm, d: Data, spec: dict, **params) -> dict[str, float]:
    return KKTResidual(KKTParams(**params))(context(arm, d, spec))


def residual(w: list[float], spec: dict) -> float:
    return evaluate(linear_arm(w), data(), spec, deltas=[0.05])["residual_0.05"]


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


# --- the curve over δ ---------------------------------------------------------------------


def two_layer(seed: int = 0, width: int = 8, dim: int = 4) -> tuple[Arm, Data]:
    """f(x) = relu(w·x) − relu(−w·x) + small random units = w·x + noise: separates the
    teacher's labels with non-uniform margins (so the active sets differ across δ)."""
    d = teacher_data(n=24, dim=dim, seed=seed, margin=0.3)
    w = torch.linalg.lstsq(d.train_x, 2.0 * d.train_y.double() - 1.0).solution
    backbone = BiasFreeMLP([dim, width, 1]).double()
    g = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        first = 0.05 * torch.randn(width, dim, generator=g, dtype=torch.float64)
        first[0], first[1] = w, -w
        second = 0.05 * torch.randn(1, width, generator=g, dtype=torch.float64)
        second[0, 0], second[0, 1] = 1.0, -1.0
        backbone.layers[0].weight.copy_(first)
        backbone.layers[1].weight.copy_(second)
    return Arm(backbone, nn.Identity(), Logistic()), d


def expected_curve(arm: Arm, d: Data, deltas: list[float], max_active: int,
                   horizon_grad, zero_tol: float = 0.0) -> list[float]:
    """r(δ) recomputed directly at θ̃ = θ/s: Jacobian of the margins by jacrev, b from the
    closed-form horizon gradient, NNLS multipliers, stationarity + slackness term."""
    w1, w2 = (layer.weight.detach() for layer in arm.backbone.layers)
    theta = torch.cat([w1.reshape(-1), w2.reshape(-1)])
    sign = 2.0 * d.train_y.double() - 1.0

    def forward(flat: torch.Tensor) -> torch.Tensor:  # y_i (w2 relu(W1 x_i)), written out
        a, c = flat[: w1.numel()].reshape(w1.shape), flat[w1.numel():].reshape(w2.shape)
        return sign * (torch.relu(d.train_x @ a.T) @ c.T)[:, 0]

    m0 = forward(theta)
    L = 2
    t = theta / float(m0.min()) ** (1.0 / L)  # θ̃
    m = forward(t).detach().numpy()
    jac = torch.func.jacrev(forward)(t).detach().numpy().T  # (params, samples)
    b, phi = horizon_grad(t)
    b, phi = b.numpy(), float(phi)
    tn = t.numpy()
    zero = np.abs(tn) <= zero_tol * np.abs(tn).max() if zero_tol > 0 else np.zeros(len(tn), bool)
    order = np.argsort(m, kind="stable")
    out = []
    for delta in deltas:
        active = [i for i in order if m[i] <= m.min() * (1 + delta)][:max_active]
        J = jac[:, active]
        mu, _ = nnls(J[~zero], b[~zero])
        stat = np.sum((J[~zero] @ mu - b[~zero]) ** 2)
        sub = np.sum(np.maximum(np.abs(J[zero] @ mu) - phi, 0.0) ** 2)
        cs = np.sum((mu * np.linalg.norm(J, axis=0) * (m[active] - 1.0)) ** 2)
        out.append(math.sqrt(stat + sub + cs) / np.linalg.norm(b[~zero]))
    return out


def euclid_grad(t: torch.Tensor):
    return t, t.norm()  # ∇(||θ||²/2) = θ


def l1_grad(t: torch.Tensor):
    return t.abs().sum() * torch.sign(t), t.abs().sum()  # ∇(||θ||_1²/2), φ = ||θ||_1


DELTAS = [0.0, 0.01, 0.5, 0.75, 1.0, 2.0, 2.5, 3.0, 5.0]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("max_active", [64, 5])
def test_curve_matches_direct_recomputation_euclidean(seed, max_active):
    arm, d = two_layer(seed)
    got = evaluate(arm, d, EUCLID, deltas=DELTAS, max_active=max_active)
    want = expected_curve(arm, d, DELTAS, max_active, euclid_grad)
    for delta, r in zip(DELTAS, want, strict=True):
        assert got[f"residual_{delta:.2g}"] == pytest.approx(r, rel=1e-8, abs=1e-12), delta
    assert len(set(want)) > 3  # the active sets really differ across δ


def test_curve_matches_direct_recomputation_hypentropy_with_zero_coordinates():
    arm, d = two_layer(seed=2)
    with torch.no_grad():  # exact zeros: the ℓ1 subdifferential branch
        arm.backbone.layers[0].weight[2:4, :2] = 0.0
    got = evaluate(arm, d, HYP, deltas=DELTAS, zero_tol=1e-3)
    want = expected_curve(arm, d, DELTAS, 64, l1_grad, zero_tol=1e-3)
    for delta, r in zip(DELTAS, want, strict=True):
        assert got[f"residual_{delta:.2g}"] == pytest.approx(r, rel=1e-8, abs=1e-12), delta


@pytest.mark.parametrize("spec", [EUCLID, HYP])
def test_min_and_argmin_over_delta(spec):
    arm, d = two_layer(seed=0)
    got = evaluate(arm, d, spec, deltas=DELTAS)
    curve = [got[f"residual_{x:.2g}"] for x in DELTAS]
    j = int(np.argmin(curve))  # first (smallest δ) on ties
    assert got["residual_min"] == min(curve)
    assert got["delta_min"] == DELTAS[j]
    m = arm.embed(d.train_x).detach()[:, 0] * (2.0 * d.train_y - 1.0)
    assert got["n_active"] == float((m <= m.min() * (1 + DELTAS[j])).sum())


def test_default_deltas_and_field_names():
    assert KKTParams().deltas == DEFAULT_DELTAS
    assert len(DEFAULT_DELTAS) == 9
    assert DEFAULT_DELTAS == pytest.approx([10 ** (k / 2 - 4) for k in range(9)], rel=1e-3)
    got = evaluate(linear_arm([0.4, 0.2]), data(), EUCLID)
    names = ["residual_0.0001", "residual_0.00032", "residual_0.001", "residual_0.0032",
             "residual_0.01", "residual_0.032", "residual_0.1", "residual_0.32", "residual_1"]
    assert set(got) == {"residual_min", "delta_min", "n_active", *names}


def test_exact_kkt_point_has_zero_residual_at_every_delta():
    """w = (2, 1)/5 is the ℓ2 max-margin direction of the two symmetric points (the far
    points never enter: normalised margins 2.8 and 2.4 exceed 1 + δ for δ ≤ 1)."""
    got = evaluate(linear_arm([0.4, 0.2]), data(), EUCLID)
    assert got["residual_min"] < 1e-12
    assert got["delta_min"] == DEFAULT_DELTAS[0]  # all equal: the smallest δ
    assert got["n_active"] == 2.0
    assert all(got[f"residual_{x:.2g}"] < 1e-12 for x in DEFAULT_DELTAS)


def test_slackness_term_keeps_the_largest_delta_from_winning():
    """x_a = (1, 0), x_b = (0, 1), both y = +1, w = (1, 0.4): margins 1 and 0.4, so
    θ̃ = w/0.4 = (2.5, 1), m_b = 1, m_a = 2.5.  δ = 0.01: only x_b, μ_b = 1, residual
    |2.5|/|θ̃|.  δ = 2: μ = (2.5, 1) fits θ̃ exactly, but x_a has slack 1.5: the slackness
    term is μ_a·||x_a||·1.5 = 3.75, larger than the stationarity residual it removed."""
    x = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    y = torch.tensor([1, 1])
    d = Data(x, y, x, y, x, y, 2, 2)
    got = evaluate(linear_arm([1.0, 0.4]), d, EUCLID, deltas=[0.01, 2.0])
    norm = math.hypot(2.5, 1.0)
    assert got["residual_0.01"] == pytest.approx(2.5 / norm, rel=1e-12)
    assert got["residual_2"] == pytest.approx(3.75 / norm, rel=1e-12)
    assert got["delta_min"] == 0.01 and got["n_active"] == 1.0
    # w = (1, 0.6): slack 2/3 only, now the larger active set wins
    got = evaluate(linear_arm([1.0, 0.6]), d, EUCLID, deltas=[0.01, 2.0])
    t = (1 / 0.6, 1.0)
    assert got["residual_2"] == pytest.approx(t[0] * (t[0] - 1) / math.hypot(*t), rel=1e-12)
    assert got["delta_min"] == 2.0 and got["n_active"] == 2.0


def test_not_separated_gives_nan_fields():
    got = evaluate(linear_arm([-1.0, 0.0]), data(), EUCLID)
    assert math.isnan(got["residual_min"]) and math.isnan(got["delta_min"])
    assert got["n_active"] == 0.0
    assert all(math.isnan(got[f"residual_{x:.2g}"]) for x in DEFAULT_DELTAS)


@pytest.mark.parametrize("deltas, message", [
    ([], "at least one"),
    ([0.1, 0.01], "sorted ascending"),
    ([0.1, 0.1], "sorted ascending"),
    ([-0.1, 0.1], "≥ 0"),
    ([0.1, float("nan")], "≥ 0"),
    ([0.1, 0.1001], "colliding field names"),
])
def test_invalid_deltas_are_rejected(deltas, message):
    with pytest.raises(ValidationError, match=message):
        KKTParams(deltas=deltas)


def test_field_docs_through_the_registry():
    """residual_min keeps its own doc (explicit keys before the residual_* pattern)."""
    from geobench.contract.manager import registry

    entry = registry().get("metrics", "kkt_residual")
    assert entry.field_doc("residual_min") is KKT_RESIDUAL_FIELDS["residual_min"]
    assert entry.field_doc("residual_min").direction == "lower"
    per_delta = entry.field_doc("residual_0.00032")
    assert per_delta is KKT_RESIDUAL_FIELDS["residual_*"] and per_delta.direction == "lower"
    assert entry.field_doc("delta_min").direction == "diagnostic"
    assert entry.field_doc("n_active").unit == "count"
    assert entry.field_doc("residual") is None
