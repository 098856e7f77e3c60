"""Logistic and exponential losses against loop / numpy formulas, stable at large |f|."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from geobench_mirror.objectives import exponential_loss, logistic_loss, signed_margins

from geobench.contract.interfaces import Batch
from geobench.contract.manager import load_registry
from tests.mirror.helpers import make_arm, teacher_data


def test_binary_logistic_and_exponential():
    f = torch.tensor([[3.0], [-0.5], [800.0], [-800.0], [0.0]], dtype=torch.float64)
    labels = torch.tensor([1, 1, 0, 0, 1])
    y = [1, 1, -1, -1, 1]
    expected = np.mean([math.log1p(math.exp(-yi * fi)) if yi * fi > -30 else -yi * fi
                        for yi, fi in zip(y, f[:, 0].tolist(), strict=True)])
    out = logistic_loss(f, labels)
    assert torch.isfinite(out) and float(out) == pytest.approx(expected, rel=1e-12)
    small = f.clamp(-5, 5)
    expected = np.mean([math.exp(-yi * fi) for yi, fi in zip(y, small[:, 0].tolist(),
                                                               strict=True)])
    assert float(exponential_loss(small, labels)) == pytest.approx(expected, rel=1e-12)


def test_multiclass_losses_and_margins():
    g = torch.Generator().manual_seed(0)
    f = torch.randn(6, 4, generator=g, dtype=torch.float64)
    labels = torch.tensor([0, 3, 1, 2, 2, 0])
    F, y = f.numpy(), labels.numpy()
    ce = np.mean([-F[i, y[i]] + np.log(np.exp(F[i]).sum()) for i in range(6)])
    ex = np.mean([sum(math.exp(-(F[i, y[i]] - F[i, j])) for j in range(4) if j != y[i])
                  for i in range(6)])
    mg = [F[i, y[i]] - max(F[i, j] for j in range(4) if j != y[i]) for i in range(6)]
    assert float(logistic_loss(f, labels)) == pytest.approx(ce, rel=1e-12)
    assert float(exponential_loss(f, labels)) == pytest.approx(ex, rel=1e-12)
    np.testing.assert_allclose(signed_margins(f, labels).numpy(), mg, rtol=1e-12)


def test_registered_objectives_use_the_raw_inputs():
    reg = load_registry()
    arm, data = make_arm([4, 5, 1]), teacher_data()
    batch = Batch(data.train_x, data.train_y, torch.arange(len(data.train_x)), 0)
    for name, fn in (("logistic", logistic_loss), ("exponential", exponential_loss)):
        objective = reg.build("objectives", {"name": name}, None)
        assert type(objective).n_views == 0
        with torch.no_grad():
            expected = fn(arm.backbone(data.train_x), data.train_y)
            assert float(objective(arm, batch, [])) == pytest.approx(float(expected), rel=1e-14)
