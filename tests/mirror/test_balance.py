"""Balance equation: per-layer dual potentials, and drift that vanishes with the step size."""

from __future__ import annotations

import numpy as np
import pytest
from geobench_mirror import MirrorDescent, maps
from geobench_mirror.balance import Balance

from geobench.contract.interfaces import MetricParams
from tests.mirror.helpers import context, make_arm, record, teacher_data

LAM = 0.2
SPEC = {"name": "mirror_descent", "lr": 0.1, "mirror_map": {"name": "hypentropy", "lam": LAM}}


def layer_potentials(arm) -> np.ndarray:
    """Q_l(∇R_l(W_l)) = Σ sqrt(W² + λ²) per layer, from the weights directly."""
    return np.array([np.sqrt(layer.weight.detach().numpy() ** 2 + LAM**2).sum()
                     for layer in arm.backbone.layers])


def independent_drift(q0: np.ndarray, q: np.ndarray) -> float:
    d = q - q0
    return max(abs(d[i] - d[j]) for i in range(len(d)) for j in range(len(d)))


def train_for_time(lr: float, time: float):
    """Full-batch mirror descent (hypentropy) on the logistic loss up to t = lr · steps."""
    arm, data = make_arm([4, 8, 1], seed=2), teacher_data(n=48, seed=2)
    opt = MirrorDescent(arm.parameters(), lr=lr, mirror_map=maps.hypentropy(LAM))
    q0 = layer_potentials(arm)
    for _ in range(round(time / lr)):
        opt.zero_grad()
        arm.objective.loss(arm.embed(data.train_x), data.train_y).backward()
        opt.step()
    return arm, data, q0


def test_metric_matches_direct_computation():
    arm, data, q0 = train_for_time(0.2, 4.0)
    history: dict = {}
    record(history, 0, {f"q_{i}": v for i, v in enumerate(q0)})
    out = Balance(MetricParams())(context(arm, data, SPEC, step=20, history=history))
    q = layer_potentials(arm)
    assert [out["q_0"], out["q_1"]] == pytest.approx(list(q), rel=1e-12)
    assert out["drift"] == pytest.approx(independent_drift(q0, q), rel=1e-9)
    assert out["rel_drift"] == pytest.approx(out["drift"] / np.abs(q - q0).max(), rel=1e-9)


def test_drift_shrinks_with_the_step_size():
    """Same flow time, smaller steps: the conserved differences drift less (first order)."""
    drifts, moved = [], []
    for lr in (0.4, 0.1, 0.025):
        arm, _, q0 = train_for_time(lr, 8.0)
        q = layer_potentials(arm)
        drifts.append(independent_drift(q0, q))
        moved.append(np.abs(q - q0).max())
    assert drifts[1] < 0.5 * drifts[0] and drifts[2] < 0.5 * drifts[1]
    assert drifts[2] < 0.05 * moved[2]  # the potentials moved, their differences did not


def test_first_evaluation_has_zero_drift_and_per_layer_maps():
    arm, data = make_arm([4, 8, 1]), teacher_data()
    spec = {"name": "mirror_descent", "lr": 0.1,
            "maps": {"backbone.layers.0.*": {"name": "hypentropy", "lam": LAM},
                     "*": {"name": "euclidean"}}}
    out = Balance(MetricParams())(context(arm, data, spec))
    w0, w1 = (layer.weight.detach().numpy() for layer in arm.backbone.layers)
    assert out["q_0"] == pytest.approx(np.sqrt(w0**2 + LAM**2).sum(), rel=1e-12)
    assert out["q_1"] == pytest.approx((w1**2).sum() / 2, rel=1e-12)
    assert out["drift"] == 0.0 and np.isnan(out["rel_drift"])


def test_drift_needs_an_evaluation_at_step_zero():
    arm, data = make_arm([4, 8, 1]), teacher_data()
    out = Balance(MetricParams())(context(arm, data, SPEC, step=50))
    assert np.isnan(out["drift"]) and np.isnan(out["rel_drift"]) and out["q_0"] > 0


def test_path_sums_the_changes_of_the_difference():
    """Evaluated along a run, ``path`` is Σ_t |Δ(ΔQ₀ − ΔQ₁)| over the evaluations (computed
    here from the weights), at least the final drift, and it never decreases."""
    arm, data = make_arm([4, 8, 1], seed=2), teacher_data(n=48, seed=2)
    opt = MirrorDescent(arm.parameters(), lr=0.4, mirror_map=maps.hypentropy(LAM))
    history: dict = {}
    qs, paths = [], []
    for step in range(0, 60, 5):
        if step:
            for _ in range(5):
                opt.zero_grad()
                arm.objective.loss(arm.embed(data.train_x), data.train_y).backward()
                opt.step()
        out = Balance(MetricParams())(context(arm, data, SPEC, step=step, history=history))
        record(history, step, out)
        qs.append(layer_potentials(arm))
        paths.append(out["path"])
    diff = np.array([q[0] - q[1] for q in qs])
    assert paths[-1] == pytest.approx(np.abs(np.diff(diff)).sum(), rel=1e-9)
    assert paths[0] == 0.0 and all(b >= a for a, b in zip(paths, paths[1:]))
    assert paths[-1] >= out["drift"] - 1e-12
