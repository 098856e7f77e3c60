"""mlp and homogeneous_vgg16: structure, naming and f(c theta) = c^L f(theta)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.data.helpers import data
from tests.timm.helpers import backbone, scaled_output


@pytest.fixture(scope="module")
def vectors():
    return data({"name": "gaussian_mixture", "dim": 12, "n_train": 32, "n_test": 8})


@pytest.mark.parametrize("activation", ["relu", "leaky_relu", "identity"])
@pytest.mark.parametrize("out_dim", [None, 1, 5])
def test_mlp_homogeneity(vectors, activation: str, out_dim: int | None) -> None:
    model = backbone({"name": "mlp", "depth": 3, "width": 16, "out_dim": out_dim,
                      "activation": activation, "bias": False}, vectors).double()
    assert model.homogeneity_degree == 3
    x = vectors.train_x[:8].double()
    for c in (0.5, 1.7, 3.0):
        torch.testing.assert_close(scaled_output(model, x, c), c**3 * model(x))


@pytest.mark.parametrize("change", [{"bias": True}, {"norm": "batch"}, {"norm": "layer"},
                                    {"activation": "gelu"}, {"activation": "tanh"}])
def test_mlp_non_homogeneous_variants(vectors, change: dict) -> None:
    spec = {"name": "mlp", "depth": 3, "width": 16, "bias": False, **change}
    model = backbone(spec, vectors).double().eval()
    assert not hasattr(model, "homogeneity_degree")
    x = vectors.train_x[:8].double()
    assert not torch.allclose(scaled_output(model, x, 2.0), 8.0 * model(x))


def test_mlp_scalar_output_matches_dense_formula(vectors) -> None:
    model = backbone({"name": "mlp", "depth": 3, "width": 7, "out_dim": 1,
                      "activation": "relu"}, vectors)
    names = [n for n, _ in model.named_parameters()]
    assert names == ["layers.0.weight", "layers.0.bias", "layers.1.weight", "layers.1.bias",
                     "layers.2.weight", "layers.2.bias"]
    x = vectors.train_x[:6].double().numpy()
    w = [model.layers[i].weight.detach().double().numpy() for i in range(3)]
    b = [model.layers[i].bias.detach().double().numpy() for i in range(3)]
    h = np.maximum(x @ w[0].T + b[0], 0)
    h = np.maximum(h @ w[1].T + b[1], 0)
    expected = h @ w[2].T + b[2]  # the last layer is linear
    out = model(vectors.train_x[:6])
    assert out.shape == (6, 1) and model.feature_dim == 1
    np.testing.assert_allclose(out.detach().double().numpy(), expected, rtol=1e-4, atol=1e-5)


def test_mlp_features_end_with_activation_and_flatten_images() -> None:
    images = data({"name": "digits", "size": 8, "n_train": 16, "n_test": 8})
    model = backbone({"name": "mlp", "depth": 2, "width": 10, "norm": "layer"}, images)
    assert model.layers[0].in_features == 64 and model.feature_dim == 10
    out = model(images.train_x)
    assert out.shape == (16, 10) and (out >= 0).all()  # ReLU after the last layer
    assert [n for n, _ in model.named_parameters()][2:4] == ["layers.1.weight", "layers.1.bias"]


@pytest.mark.parametrize("size", [8, 12, 16, 32])
def test_vgg_homogeneous_degree_16(size: int) -> None:
    images = data({"name": "digits", "size": size, "channels": 3, "n_train": 16, "n_test": 8,
                   "classes": 4})
    model = backbone({"name": "homogeneous_vgg16", "width": 0.0625}, images).double()
    assert model.homogeneity_degree == 16 and model.feature_dim == 4
    assert [n for n, _ in model.named_parameters()] == [f"layers.{i}.weight" for i in range(16)]
    assert all(getattr(layer, "bias", None) is None for layer in model.layers)
    x = images.train_x[:4].double()
    out = model(x)
    assert out.shape == (4, 4) and out.abs().max() > 0
    for c in (0.8, 1.25):
        torch.testing.assert_close(scaled_output(model, x, c), c**16 * out)


def test_vgg_pools_stop_at_one_pixel() -> None:
    images = data({"name": "digits", "size": 8, "n_train": 16, "n_test": 8})
    model = backbone({"name": "homogeneous_vgg16", "width": 0.0625, "pool": "avg",
                      "out_dim": 3}, images)
    assert sum(model.pool_after) == 3  # 8 -> 4 -> 2 -> 1, the last two pools dropped
    assert model.layers[0].in_channels == 1 and model(images.train_x).shape == (16, 3)
