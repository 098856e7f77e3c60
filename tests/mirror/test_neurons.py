"""Effective weights, active neurons, Hoyer/Gini sparsity and the pruning curve."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from geobench_mirror.neurons import (
    ActiveNeurons,
    ActiveParams,
    HistogramParams,
    NeuronHistogram,
    PruningCurve,
    PruningParams,
    Sparsity,
    effective_weights,
    gini,
    hoyer,
)

from geobench.contract.interfaces import MetricParams
from tests.mirror.helpers import context, make_arm, teacher_data

SGD = {"name": "sgd", "lr": 0.1}


def two_layer(w_norms: list[float], a: list[float]):
    """A two-layer net whose unit k has ||w_k|| = w_norms[k] and output weight a[k]."""
    arm = make_arm([3, len(a), 1])
    g = torch.Generator().manual_seed(0)
    w = torch.randn(len(a), 3, generator=g, dtype=torch.float64)
    w = w / w.norm(dim=1, keepdim=True) * torch.tensor(w_norms, dtype=torch.float64)[:, None]
    with torch.no_grad():
        arm.backbone.layers[0].weight.copy_(w)
        arm.backbone.layers[1].weight.copy_(torch.tensor([a], dtype=torch.float64))
    return arm


def test_effective_weights_of_a_two_layer_net():
    arm = two_layer([1.0, 2.0, 0.5, 3.0], [0.5, -1.0, 0.01, 0.0])
    (e,) = effective_weights([layer.weight.detach() for layer in arm.backbone.layers])
    np.testing.assert_allclose(e.numpy(), [0.5, 2.0, 0.005, 0.0], rtol=1e-12)
    out = ActiveNeurons(ActiveParams(threshold=0.1))(context(arm, teacher_data(dim=3), SGD))
    assert out == {"active": 2.0, "fraction": 0.5}


def test_effective_weights_through_conv_and_flatten():
    conv1 = torch.randn(4, 2, 3, 3, dtype=torch.float64)
    conv2 = torch.randn(5, 4, 3, 3, dtype=torch.float64)
    linear = torch.randn(7, 5 * 6, dtype=torch.float64)  # flatten of (5 channels, 6 pixels)
    e1, e2 = effective_weights([conv1, conv2, linear])
    for k in range(4):
        assert float(e1[k]) == pytest.approx(float(conv1[k].norm() * conv2[:, k].norm()))
    for k in range(5):
        block = linear[:, 6 * k : 6 * (k + 1)]
        assert float(e2[k]) == pytest.approx(float(conv2[k].norm() * block.norm()))


def test_hoyer_and_gini_against_definitions():
    rng = np.random.default_rng(0)
    for e in [rng.exponential(size=50), np.ones(10), np.r_[np.zeros(9), 1.0]]:
        n = e.size
        h = (np.sqrt(n) - np.abs(e).sum() / np.sqrt((e**2).sum())) / (np.sqrt(n) - 1)
        pairwise = np.abs(e[:, None] - e[None, :]).sum() / (2 * n * e.sum())  # Gini coefficient
        t = torch.from_numpy(e)
        assert hoyer(t) == pytest.approx(h, abs=1e-12)
        assert gini(t) == pytest.approx(pairwise, abs=1e-12)
    arm = two_layer([1.0, 1.0, 1.0], [1.0, 1.0, 1.0])
    out = Sparsity(MetricParams())(context(arm, teacher_data(dim=3), SGD))
    assert out["hoyer"] == pytest.approx(0.0, abs=1e-12)
    assert out["gini"] == pytest.approx(0.0, abs=1e-12)


def numpy_accuracy(ws: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> float:
    h = np.maximum(x @ ws[0].T, 0.0) @ ws[1].T
    return float(((h[:, 0] > 0).astype(int) == y).mean())


def test_pruning_curve_against_numpy_pruning():
    arm, data = make_arm([4, 16, 1], seed=3), teacher_data(n=200, seed=3)
    before = [p.detach().clone() for p in arm.parameters()]
    out = PruningCurve(PruningParams(fractions=[0.0, 0.3, 0.5, 0.9]))(context(arm, data, SGD))
    ws = [p.detach().numpy() for p in arm.parameters()]
    flat = np.concatenate([w.ravel() for w in ws])
    order = np.argsort(np.abs(flat), kind="stable")
    for fraction in [0.0, 0.3, 0.5, 0.9]:
        kept = flat.copy()
        kept[order[: int(np.floor(fraction * flat.size))]] = 0.0
        split = [kept[: ws[0].size].reshape(ws[0].shape), kept[ws[0].size :].reshape(ws[1].shape)]
        expected = numpy_accuracy(split, data.test_x.numpy(), data.test_y.numpy())
        assert out[f"acc_{round(100 * fraction)}"] == pytest.approx(expected, abs=1e-12)
    for p, b in zip(arm.parameters(), before, strict=True):
        assert torch.equal(p.detach(), b)  # the arm itself is untouched


def test_neuron_histogram_bins():
    # e / max e = 1, 0.5, 0.02, 0.001, 1e-6, 0 with bins over [1e-4, 1]: edges 1e-4, 1e-3 ..
    a = [1.0, 0.5, 0.02, 0.001, 1e-6, 0.0]
    arm = two_layer([1.0] * len(a), a)
    out = NeuronHistogram(HistogramParams(bins=4, low=1e-4))(context(arm, teacher_data(dim=3),
                                                                      SGD))
    assert out == pytest.approx({"bin_0": 2 / 6, "bin_1": 1 / 6, "bin_2": 1 / 6,
                                 "bin_3": 2 / 6}, abs=1e-12)
