"""The core's tests load no bundled plugin, and the toy plugin they use instead computes what
it says (against hand-written formulas)."""

import math
import os

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from geobench.contract.interfaces import Arm, Batch, BuildContext, Data, MetricContext, Objective
from geobench.contract.manager import plugins, registry
from tests.core import toy_plugin as toy

CPU = torch.device("cpu")


def test_only_the_core_and_the_toy_plugin_are_loaded():
    assert os.environ["GEOBENCH_DISABLE_PLUGIN_AUTOLOAD"] == "1"
    assert set(plugins().info) == {"core", "toy"}
    reg = registry()
    assert reg.names("datasets") == ["toy_mixture"]
    assert reg.names("backbones") == ["toy_mlp"]
    assert "none" not in reg.names("augmentations")


def _mixture(seed: int = 3, **params) -> Data:
    return toy.build_toy_mixture(toy.ToyMixtureParams(**params), BuildContext(seed, CPU))


def test_mixture_is_seeded_balanced_and_has_its_means_on_the_sphere():
    a, b = _mixture(n_train=30, n_test=12, reference_size=5), _mixture(n_train=30, n_test=12)
    assert torch.equal(a.train_x, b.train_x) and torch.equal(a.test_y, b.test_y)
    assert not torch.equal(a.train_x, _mixture(seed=4, n_train=30, n_test=12).train_x)
    assert a.train_x.shape == (30, 8) and a.num_classes == 3 and a.batch_size == 128
    assert torch.bincount(a.train_y).tolist() == [10, 10, 10]
    torch.testing.assert_close(a.extras["means"].norm(dim=1), torch.full((3,), 3.0))
    assert torch.equal(a.reference_x, a.test_x[:5]) and torch.equal(a.reference_y, a.test_y[:5])
    far = _mixture(n_train=60, n_test=6, separation=50.0)  # noise 1: samples sit at their mean
    means = far.extras["means"][far.train_y]
    assert ((far.train_x - means).norm(dim=1) < 10).all()


def test_mixture_class_subset_is_relabelled():
    data = _mixture(n_train=40, n_test=8, num_classes=5, classes=[4, 1], separation=50.0)
    assert data.num_classes == 2 and set(data.train_y.tolist()) == {0, 1}
    means = data.extras["means"]
    nearest = torch.cdist(data.train_x, means).argmin(dim=1)  # original class of each sample
    assert torch.equal(nearest, torch.tensor([4, 1])[data.train_y])


def test_noise_adds_sigma_times_the_generators_normal_draws():
    x = torch.arange(6.0).reshape(2, 3)
    got = toy.ToyNoise(0.5)(x, torch.arange(2), torch.Generator().manual_seed(9))
    eps = torch.randn(2, 3, generator=torch.Generator().manual_seed(9))
    torch.testing.assert_close(got, x + 0.5 * eps)


def test_mlp_is_linear_then_activation_at_every_layer():
    data = _mixture(n_train=4, n_test=4)
    mlp = toy.build_toy_mlp(toy.ToyMLPParams(depth=2, width=5, activation="tanh"),
                            BuildContext(0, CPU, data))
    x = torch.randn(3, 8)
    (w0, b0), (w1, b1) = [(m.weight, m.bias) for m in mlp.layers]
    torch.testing.assert_close(mlp(x), torch.tanh(torch.tanh(x @ w0.T + b0) @ w1.T + b1))
    assert mlp.feature_dim == 5


def _arm() -> Arm:
    return Arm(nn.Identity(), nn.Identity(), Objective())


def test_cross_entropy_by_hand():
    ce = toy.ToyCE(embed_dim=3, num_classes=2)
    x, y = torch.randn(4, 3), torch.tensor([0, 1, 1, 0])
    logits = x @ ce.classifier.weight.T + ce.classifier.bias
    by_hand = -(logits[range(4), y] - logits.exp().sum(1).log()).mean()
    torch.testing.assert_close(ce(_arm(), Batch(x, y, torch.arange(4), 0), [x]), by_hand)


def test_nt_xent_by_hand():
    z1, z2 = torch.randn(3, 4, dtype=torch.float64), torch.randn(3, 4, dtype=torch.float64)
    tau, z = 0.3, F.normalize(torch.cat([z1, z2]), dim=1).numpy()
    loss = 0.0
    for i in range(6):
        others = [j for j in range(6) if j != i]
        positive = (i + 3) % 6
        denom = sum(math.exp(z[i] @ z[j] / tau) for j in others)
        loss -= math.log(math.exp(z[i] @ z[positive] / tau) / denom)
    got = toy.ToyNTXent(tau)(_arm(), Batch(z1, torch.zeros(3), torch.arange(3), 0), [z1, z2])
    assert abs(float(got) - loss / 6) < 1e-12


def test_cka_is_linear_cka_of_the_two_arms_features():
    x = torch.randn(20, 4, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    reference = Arm(nn.Identity(), nn.Identity(), Objective())
    arm = Arm(nn.Linear(4, 3, dtype=torch.float64), nn.Identity(), Objective())
    data = Data(x, torch.zeros(20), x, torch.zeros(20), x, torch.zeros(20), 1, 20)
    ctx = MetricContext(0, 0, "b", arm, data, None, [], None, torch.Generator(), {},
                        reference=reference)
    got = toy.ToyCKA(toy.ToyCKAParams())(ctx)
    a = (x - x.mean(0)).numpy()
    b = arm.backbone(x).detach().numpy()
    b = b - b.mean(0)
    biased = np.linalg.norm(a.T @ b) ** 2 / (np.linalg.norm(a.T @ a) * np.linalg.norm(b.T @ b))
    assert abs(got["biased"] - biased) < 1e-10
    assert set(got) == {"biased", "debiased", "similar"} and -1 <= got["debiased"] <= 1
    assert got["similar"] == float(got["debiased"] > 0.5)
