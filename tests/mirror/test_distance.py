"""distance_to_reference against a direct numpy computation."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from geobench_mirror.distance import ReferenceDistance

from geobench.contract.interfaces import MetricParams
from tests.mirror.helpers import context, make_arm, teacher_data
from tests.mirror.test_margins import numpy_forward


def _flat(arm) -> np.ndarray:
    return np.concatenate([p.detach().numpy().ravel() for p in arm.parameters()])


def _ctx(arm, reference, data):
    ctx = context(arm, data, {"name": "sgd", "lr": 0.1})
    return dataclasses.replace(ctx, reference=reference, reference_name="gd")


def test_distance_direction_and_agreement_against_numpy():
    data = teacher_data(n=64, dim=4)
    arm, ref = make_arm([4, 6, 1], seed=0), make_arm([4, 6, 1], seed=1)
    out = ReferenceDistance(MetricParams())(_ctx(arm, ref, data))
    a, b = _flat(arm), _flat(ref)
    assert out["relative"] == pytest.approx(np.linalg.norm(a - b) / np.linalg.norm(b), rel=1e-12)
    direction = np.linalg.norm(a / np.linalg.norm(a) - b / np.linalg.norm(b))
    assert out["direction"] == pytest.approx(direction, rel=1e-12)
    x = data.test_x.numpy()
    same = (numpy_forward(arm, x)[:, 0] > 0) == (numpy_forward(ref, x)[:, 0] > 0)
    assert out["agreement"] == pytest.approx(same.mean(), abs=1e-15)


def test_a_rescaled_copy_has_the_same_direction():
    data = teacher_data(n=32, dim=4)
    ref = make_arm([4, 6, 1], seed=2)
    arm = make_arm([4, 6, 1], seed=2)
    for p in arm.parameters():
        p.data.mul_(3.0)
    out = ReferenceDistance(MetricParams())(_ctx(arm, ref, data))
    assert out["relative"] == pytest.approx(2.0, rel=1e-12)
    assert out["direction"] == pytest.approx(0.0, abs=1e-12)
    assert out["agreement"] == 1.0  # f(x; 3θ) = 9 f(x; θ): same signs


def test_different_architectures_and_a_missing_reference_are_errors():
    data = teacher_data(n=32, dim=4)
    with pytest.raises(ValueError, match="different parameters"):
        ReferenceDistance(MetricParams())(_ctx(make_arm([4, 6, 1]), make_arm([4, 5, 1]), data))
    with pytest.raises(ValueError, match="cross-arm"):
        ReferenceDistance(MetricParams())(context(make_arm([4, 6, 1]), data, {"name": "sgd"}))
