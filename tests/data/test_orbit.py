"""orbit_manifold: exact tangents (vs finite differences), views on the orbit, determinism."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from torch import nn

from geobench.components.metrics import EvalLoss, EvalLossParams
from geobench.contract.interfaces import Arm, Batch, MetricContext, Objective
from tests.data.helpers import augmentation, data, gen

SPEC = {"name": "orbit_manifold", "n_train": 64, "n_test": 48, "reference_size": 16,
        "dim": 12, "pairs": 3, "class_dim": 2, "num_classes": 4}


def _rotate_numpy(u: np.ndarray, theta: np.ndarray, class_dim: int) -> np.ndarray:
    """The torus action written with explicit 2x2 rotation matrices."""
    out = u.copy()
    for j, t in enumerate(theta):
        k = class_dim + 2 * j
        rot = np.array([[math.cos(t), -math.sin(t)], [math.sin(t), math.cos(t)]])
        out[k:k + 2] = rot @ u[k:k + 2]
    return out


def _map_numpy(orbit, u: np.ndarray) -> np.ndarray:
    w1, b1, w2 = (t.double().numpy() for t in (orbit.w1, orbit.b1, orbit.w2))
    return w2 @ np.tanh(w1 @ u + b1) / math.sqrt(w2.shape[1])


def test_tangents_match_finite_differences() -> None:
    d = data(SPEC)
    orbit = d.extras["orbit"]
    index = torch.arange(10)
    tangents = orbit.tangents("train", index)
    assert tangents.shape == (10, 3, 12)
    h = 1e-5
    for i in range(10):
        u = orbit.latent["train"][i].double().numpy()
        for j in range(3):
            step = np.zeros(3)
            step[j] = h
            fd = (_map_numpy(orbit, _rotate_numpy(u, step, 2))
                  - _map_numpy(orbit, _rotate_numpy(u, -step, 2))) / (2 * h)
            np.testing.assert_allclose(tangents[i, j].double().numpy(), fd, rtol=1e-4,
                                       atol=1e-5)


def test_samples_and_views_lie_on_the_orbit() -> None:
    d = data(SPEC)
    orbit = d.extras["orbit"]
    u = orbit.latent["train"].double().numpy()
    x0 = np.stack([_map_numpy(orbit, ui) for ui in u])
    np.testing.assert_allclose(d.train_x.numpy(), x0, rtol=1e-4, atol=1e-5)
    index = torch.tensor([3, 0, 17])
    g = gen(7)
    theta = (2 * torch.rand(3, 3, generator=gen(7)) - 1) * orbit.max_angle  # same draws
    views = orbit.views("train", index, g)
    for row, i in enumerate(index.tolist()):
        expected = _map_numpy(orbit, _rotate_numpy(u[i], theta[row].double().numpy(), 2))
        np.testing.assert_allclose(views[row].numpy(), expected, rtol=1e-4, atol=1e-5)
    # class coordinates are invariant; the nuisance pairs keep their radius
    moved = orbit.act(orbit.latent["train"], torch.full((64, 3), 0.7))
    torch.testing.assert_close(moved[:, :2], orbit.latent["train"][:, :2])
    radius = moved[:, 2:].unflatten(1, (3, 2)).norm(dim=-1)
    torch.testing.assert_close(radius, torch.ones_like(radius))


def test_orbit_shapes_and_reference_split() -> None:
    d = data(SPEC)
    orbit = d.extras["orbit"]
    k_views = orbit.orbit("test", torch.arange(5), 7, gen(0))
    assert k_views.shape == (5, 7, 12)
    assert not torch.allclose(k_views[:, 0], k_views[:, 1])
    ref = orbit.map(orbit.latent["reference"])
    torch.testing.assert_close(ref, d.reference_x)
    assert orbit.tangents("reference", torch.arange(4)).shape == (4, 3, 12)
    torch.testing.assert_close(d.extras["latent"], orbit.latent["train"])
    with pytest.raises(ValueError, match="split"):
        orbit.views("val", torch.arange(2), gen(0))


def test_orbit_manifold_is_seeded_and_labels_are_invariant() -> None:
    a, b, c = data(SPEC, 1), data(SPEC, 1), data(SPEC, 2)
    assert torch.equal(a.train_x, b.train_x) and not torch.equal(a.train_x, c.train_x)
    assert a.num_classes == 4 and set(a.train_y.tolist()) == {0, 1, 2, 3}
    # classes are separable in the invariant latent part: nearest prototype recovers labels
    lat = a.extras["orbit"].latent["train"][:, :2]
    centers = torch.stack([lat[a.train_y == k].mean(0) for k in range(4)])
    assert (torch.cdist(lat, centers).argmin(1) == a.train_y).float().mean() > 0.9


class _ViewDistance(Objective):
    """Mean squared distance of each sample's view from the sample itself."""

    n_views = 1

    def forward(self, arm, batch, views):
        return (views[0] - batch.x).pow(2).sum(1).mean()


def test_eval_loss_views_the_test_samples_under_orbit_action() -> None:
    """The held-out loss augments the test samples: their own orbits, not the training
    samples' that share their indices."""
    d = data({**SPEC, "batch_size": 8})
    orbit, action = d.extras["orbit"], augmentation({"name": "orbit_action"}, d)
    arm = Arm(nn.Identity(), nn.Identity(), _ViewDistance())
    batch = Batch(d.train_x[:4], d.train_y[:4], torch.arange(4), 0)
    ctx = MetricContext(step=0, total_steps=1, arm_name="main", arm=arm, data=d, batch=batch,
                        views=[batch.x], augmentation=action, generator=gen(3), spec={})
    got = EvalLoss(EvalLossParams(max_batches=3))(ctx)["value"]

    def expected(split: str) -> float:
        g, size, losses = gen(3), 8, []
        for start in range(0, 24, size):  # 3 held-out batches of the data's batch size
            index = torch.arange(start, start + size)
            views = orbit.views(split, index, g)
            losses.append(float((views - d.test_x[index]).pow(2).sum(1).mean()))
        return sum(losses) / len(losses)

    assert got == pytest.approx(expected("test"), rel=1e-6)
    assert abs(got - expected("train")) > 0.1 * got  # the training samples' orbits differ
