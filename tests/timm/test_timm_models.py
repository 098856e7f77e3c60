"""timm backbones: shapes, CIFAR stem, local checkpoints, errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from safetensors.torch import save_file
from torch import nn

from tests.data.helpers import data
from tests.timm.helpers import backbone


@pytest.fixture(scope="module")
def rgb32():
    return data({"name": "digits", "size": 32, "channels": 3, "n_train": 64, "n_test": 16})


@pytest.fixture(scope="module")
def gray8():
    return data({"name": "digits", "size": 8, "n_train": 64, "n_test": 16})


def test_resnet18_cifar_stem(rgb32) -> None:
    model = backbone({"name": "timm", "model": "resnet18", "cifar_stem": True}, rgb32)
    assert model.conv1.kernel_size == (3, 3) and model.conv1.stride == (1, 1)
    assert isinstance(model.maxpool, nn.Identity)
    x = rgb32.train_x[:4]
    assert model.forward_features(x).shape == (4, 512, 4, 4)  # strides 1, 2, 2, 2 -> 32/8
    assert model(x).shape == (4, model.feature_dim) and model.feature_dim == 512


def test_vit_tiny_with_small_patches(rgb32) -> None:
    model = backbone({"name": "timm", "model": "vit_tiny_patch16_224", "img_size": 32,
                      "patch_size": 4}, rgb32)
    assert model.patch_embed.num_patches == 64
    assert model(rgb32.train_x[:2]).shape == (2, 192) and model.feature_dim == 192


def test_in_chans_from_data(gray8) -> None:
    model = backbone({"name": "timm", "model": "resnet18", "cifar_stem": True}, gray8)
    assert model.conv1.in_channels == 1
    assert model(gray8.train_x[:3]).shape == (3, 512)


@pytest.mark.slow
def test_vgg16_features(rgb32) -> None:
    model = backbone({"name": "timm", "model": "vgg16"}, rgb32)
    assert model(rgb32.train_x[:2]).shape == (2, model.feature_dim)


@pytest.mark.parametrize("name", ["resnet_tiny", "vit_tiny_cpu"])
@pytest.mark.parametrize("which", ["rgb32", "gray8"])
def test_small_variants(name: str, which: str, request: pytest.FixtureRequest) -> None:
    dataset = request.getfixturevalue(which)
    model = backbone({"name": name}, dataset)
    out = model(dataset.train_x[:5])
    assert out.shape == (5, model.feature_dim)
    assert model.feature_dim == (128 if name == "resnet_tiny" else 64)
    n_params = sum(p.numel() for p in model.parameters())
    assert n_params < 400_000


def test_resnet_tiny_structure(rgb32) -> None:
    model = backbone({"name": "resnet_tiny"}, rgb32)
    widths = [model.layer1[-1].conv2.out_channels, model.layer2[-1].conv2.out_channels,
              model.layer3[-1].conv2.out_channels, model.layer4[-1].conv2.out_channels]
    assert widths == [16, 32, 64, 128]
    assert all(len(getattr(model, f"layer{i}")) == 1 for i in range(1, 5))
    assert model.conv1.stride == (1, 1) and isinstance(model.maxpool, nn.Identity)


def test_vit_tiny_cpu_structure(rgb32) -> None:
    model = backbone({"name": "vit_tiny_cpu"}, rgb32)
    assert len(model.blocks) == 2 and model.embed_dim == 64
    assert model.patch_embed.patch_size == (4, 4)


@pytest.mark.parametrize("suffix", [".pt", ".safetensors"])
def test_checkpoint_roundtrip(rgb32, tmp_path: Path, suffix: str) -> None:
    spec = {"name": "timm", "model": "test_resnet"}  # a tiny timm ResNet
    source = backbone(spec, rgb32).eval()
    state = {k: v.clone() for k, v in source.state_dict().items()}
    state["fc.weight"] = torch.zeros(10, source.feature_dim)  # a classifier the feature model lacks
    path = tmp_path / f"w{suffix}"
    if suffix == ".pt":
        torch.save({"state_dict": state}, path)
    else:
        save_file(state, str(path))
    loaded = backbone({**spec, "checkpoint": str(path)}, rgb32).eval()
    fresh = backbone(spec, rgb32).eval()
    x = rgb32.train_x[:3]
    with torch.no_grad():
        torch.testing.assert_close(loaded(x), source(x))
        assert not torch.allclose(fresh(x), source(x))


def test_checkpoint_mismatch_is_an_error(rgb32, tmp_path: Path) -> None:
    path = tmp_path / "w.pt"
    torch.save({"conv1.0.weight": torch.zeros(16, 3, 3, 3)}, path)
    with pytest.raises(ValueError, match="missing"):
        backbone({"name": "timm", "model": "test_resnet", "checkpoint": str(path)}, rgb32)
    with pytest.raises(FileNotFoundError):
        backbone({"name": "timm", "model": "resnet18", "checkpoint": str(tmp_path / "no.pt")},
                 rgb32)


def test_errors_are_clear(rgb32) -> None:
    with pytest.raises(ValueError, match="did you mean 'resnet18'"):
        backbone({"name": "timm", "model": "resnet1"}, rgb32)
    with pytest.raises(ValueError, match="checkpoint"):
        backbone({"name": "timm", "model": "resnet18", "kwargs": {"pretrained": True}}, rgb32)
    with pytest.raises(ValueError, match="img_size: 32"):
        backbone({"name": "timm", "model": "vit_tiny_patch16_224"}, rgb32)
    with pytest.raises(ValueError, match="cifar_stem"):
        backbone({"name": "timm", "model": "vit_tiny_patch16_224", "img_size": 32,
                  "cifar_stem": True}, rgb32)
    with pytest.raises(ValueError, match="image data"):
        backbone({"name": "resnet_tiny"}, data({"name": "gaussian_mixture"}))
