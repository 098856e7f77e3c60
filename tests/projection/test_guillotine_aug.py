"""``guillotine``'s augmentation probe on arms whose answer is known by construction."""

import math

import pytest
import torch
from geobench_projection.metrics.guillotine import (
    Guillotine,
    GuillotineParams,
    action_angles,
    action_views,
    build_guillotine,
    resolve_augmentation,
)
from torch import nn

from geobench.components import heads
from geobench.contract.interfaces import Arm, BuildContext, Data, Objective
from geobench.contract.manager import load_registry

from .helpers import LinearOrbit, build_data, metric_context


class Flatten(nn.Flatten):
    def __init__(self, d):
        super().__init__()
        self.feature_dim = d


class RotationAverage(nn.Module):
    """h(z) = mean over k of rot90(z as an image, k): rotation-invariant by construction."""

    def __init__(self, shape):
        super().__init__()
        self.shape = shape

    def forward(self, z):
        x = z.unflatten(1, self.shape)
        return sum(torch.rot90(x, k, dims=(-2, -1)) for k in range(4)).flatten(1) / 4


def _images(n, gen, size=4):
    """Integer pixels (sums exact in float32), a bright top row: an upright orientation."""
    x = torch.randint(0, 4, (n, 1, size, size), generator=gen).float()
    x[:, :, 0, :] += 8
    return x


def _image_data(n_train=64, n_test=16):
    gen = torch.Generator().manual_seed(0)
    xtr, xte = _images(n_train, gen), _images(n_test, gen)
    ytr, yte = torch.arange(n_train) % 2, torch.arange(n_test) % 2
    return Data(xtr, ytr, xte, yte, xte[:8], yte[:8], 2, 8)


@pytest.mark.parametrize("probe", ["linear", "knn", "nccc"])
def test_rotation_probe_on_a_rotation_invariant_head(probe):
    data = _image_data()
    arm = Arm(Flatten(16), RotationAverage((1, 4, 4)), Objective()).eval()
    ctx = metric_context(arm, data, [data.train_x[:2]] * 2)
    out = Guillotine(GuillotineParams(probe=probe, k=3, max_train=64))(ctx)
    assert out["head_aug_accuracy"] == 0.25  # the 4 rotations of an image share features
    assert out["backbone_aug_accuracy"] >= 0.95
    assert out["aug_gap"] == out["backbone_aug_accuracy"] - out["head_aug_accuracy"]
    assert math.isclose(out["gap"], out["backbone_accuracy"] - out["head_accuracy"])


def _orbit_data(n=48, n_test=24, class_dim=2, pairs=2):
    gen = torch.Generator().manual_seed(1)

    def latent(m):
        y = torch.arange(m) % 3
        a = 3 * torch.eye(3, class_dim)[y] + 0.3 * torch.randn(m, class_dim, generator=gen)
        phase = 6.283 * torch.rand(m, pairs, generator=gen)
        return torch.cat((a, torch.stack((phase.cos(), phase.sin()), -1).flatten(1)), 1), y

    (u, y), (ut, yt) = latent(n), latent(n_test)
    data = Data(u, y, ut, yt, ut[:8], yt[:8], 3, 8)
    orbit = LinearOrbit(u, class_dim, pairs, max_angle=math.pi)
    orbit.latent["test"] = ut
    data.extras["orbit"] = orbit
    return data


def _invariant_arm(d=6, class_dim=2):
    """Identity backbone; linear head zeroing the rotated pairs (exactly invariant)."""
    ctx = BuildContext(seed=0, device=torch.device("cpu"), feature_dim=d)
    head = heads.build_linear_head(heads.LinearHeadParams(out=d), ctx)
    with torch.no_grad():
        head.projector.weight.copy_(torch.diag(torch.tensor(
            [1.0] * class_dim + [0.0] * (d - class_dim))))
    return Arm(Flatten(d), head, Objective()).eval()


def test_action_probe_on_an_action_invariant_head():
    data = _orbit_data()
    assert resolve_augmentation("auto", data) == "action"
    ctx = metric_context(_invariant_arm(), data, [data.train_x[:2]] * 2)
    out = Guillotine(GuillotineParams(probe="nccc", max_train=40))(ctx)
    assert out["head_aug_accuracy"] == 0.25
    assert out["backbone_aug_accuracy"] == 1.0
    assert out["aug_gap"] == 0.75
    assert out["backbone_accuracy"] == out["head_accuracy"] == 1.0


def test_action_views_are_group_elements_of_the_samples_orbit():
    reg = load_registry()
    data = reg.build("datasets", {"name": "orbit_manifold", "n_train": 16, "n_test": 8,
                                  "reference_size": 4, "batch_size": 8, "dim": 10},
                     BuildContext(0, torch.device("cpu")))
    orbit = data.extras["orbit"]
    u = orbit.latent["train"][:5].double()
    s = u[:, orbit.class_dim:].unflatten(-1, (orbit.pairs, 2))
    phase = torch.atan2(s[..., 1], s[..., 0])
    for k, theta in enumerate(action_angles(orbit.max_angle)):
        # the k-th probe view of sample i is g_(theta_k - phase_i) applied to sample i
        want = orbit.map(orbit.act(u, theta - phase))
        torch.testing.assert_close(action_views(orbit, "train", 5, k), want)
    assert torch.allclose(action_angles(math.pi), torch.tensor(
        [-0.75, -0.25, 0.25, 0.75], dtype=torch.float64) * math.pi)
    assert resolve_augmentation("auto", data) == "action"


def test_no_augmentation_probe_gives_nan():
    data = build_data(n=40)  # vectors: auto resolves to none
    arm = _invariant_arm(d=6)
    out = Guillotine(GuillotineParams(probe="nccc", max_train=20))(
        metric_context(arm, data, [data.train_x[:2]] * 2))
    assert all(math.isnan(out[k]) for k in ("backbone_aug_accuracy", "head_aug_accuracy",
                                            "aug_gap"))
    assert math.isfinite(out["gap"])
    images = _image_data()
    assert resolve_augmentation("auto", images) == "rotation"
    out = Guillotine(GuillotineParams(probe="nccc", augmentation="none"))(
        metric_context(Arm(Flatten(16), RotationAverage((1, 4, 4)), Objective()).eval(),
                       images, [images.train_x[:2]] * 2))
    assert math.isnan(out["aug_gap"]) and math.isfinite(out["backbone_accuracy"])
    with pytest.raises(ValueError, match="square images"):
        resolve_augmentation("rotation", data)
    with pytest.raises(ValueError, match="orbit structure"):
        build_guillotine(GuillotineParams(augmentation="action"),
                         BuildContext(0, torch.device("cpu"), images))
