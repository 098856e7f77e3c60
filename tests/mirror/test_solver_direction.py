"""max_margin_direction: a linear arm set to a direction known in closed form reads cosine 1
and margin ratio 1 for its own geometry, and its cosines with the other geometries equal
those computed from the closed-form directions."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from geobench_mirror.solver_direction import SolverDirection, SolverDirectionParams

from geobench.contract.interfaces import Data
from tests.mirror.helpers import context, make_arm

GD = {"name": "mirror_descent", "lr": 0.1, "mirror_map": {"name": "euclidean"}}
HYP = {"name": "mirror_descent", "lr": 0.1, "mirror_map": {"name": "hypentropy", "lam": 0.01}}


def _known(rng: np.random.Generator) -> tuple[Data, np.ndarray, np.ndarray]:
    """Samples whose L2 max-margin direction is w2 (one support along w2) and whose L1
    direction is e_1 (every sample has |x_1| ≥ 1 and comes with its mirror image in the
    other coordinates, so no other coordinate raises the smallest margin)."""
    w2 = np.array([1.0, 0.3, -0.2, 0.0])
    half = rng.normal(size=(10, 4)) * [0, 1, 1, 1]
    half[:, 0] = 1.0 + rng.uniform(size=10)
    x = np.vstack([half, half * [1, -1, -1, -1]])
    x = np.vstack([x, -x])
    y = np.concatenate([np.ones(20), -np.ones(20)])
    x[0], x[20] = w2 / (w2 @ w2), -w2 / (w2 @ w2)  # the L2 support: margin 1 under w2
    keep = y * (x @ w2) >= 1 - 1e-12
    x, y = x[keep], y[keep]
    t = torch.as_tensor(x)
    labels = torch.as_tensor((y > 0).astype(np.int64))
    return Data(t, labels, t, labels, t[:4], labels[:4], 2, len(t)), w2, np.eye(4)[0]


def _arm_at(theta: np.ndarray):
    arm = make_arm([len(theta), 1])
    with torch.no_grad():
        arm.backbone.layers[0].weight.copy_(torch.as_tensor(theta).view(1, -1))
    return arm


def test_trained_direction_at_the_l2_solution_reads_one():
    data, w2, e1 = _known(np.random.default_rng(0))
    metric = SolverDirection(SolverDirectionParams(norms=[1, 2]))
    out = metric(context(_arm_at(3.0 * w2), data, GD))
    assert out["cos_l2"] == pytest.approx(1.0, abs=1e-8)
    assert out["cos_own"] == out["cos_l2"] and out["margin_ratio"] == pytest.approx(1.0)
    assert out["cos_l1"] == pytest.approx(w2[0] / np.linalg.norm(w2), abs=1e-8)
    assert out["lead"] == pytest.approx(1.0 - out["cos_l1"], abs=1e-8)


def test_hypentropy_is_measured_against_the_l1_solution():
    data, w2, e1 = _known(np.random.default_rng(1))
    theta = np.array([2.0, 0.5, 0.0, 0.1])
    out = SolverDirection(SolverDirectionParams(norms=[1, 2]))(
        context(_arm_at(theta), data, HYP))
    unit = theta / np.linalg.norm(theta)
    assert out["cos_own"] == out["cos_l1"] == pytest.approx(unit @ e1, abs=1e-8)
    assert out["cos_l2"] == pytest.approx(unit @ w2 / np.linalg.norm(w2), abs=1e-8)
    x = data.train_x.numpy()
    y = 2.0 * data.train_y.numpy() - 1.0
    ratio = (y * (x @ theta)).min() / np.abs(theta).sum() / (y * x[:, 0]).min()
    assert out["margin_ratio"] == pytest.approx(ratio, rel=1e-8)


def test_a_two_layer_arm_is_a_clear_error():
    data, _, _ = _known(np.random.default_rng(2))
    with pytest.raises(ValueError, match="linear classifier"):
        SolverDirection(SolverDirectionParams())(context(make_arm([4, 3, 1]), data, GD))
