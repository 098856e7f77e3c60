"""The fake-data writers produce files the real readers accept: torchvision's CIFAR loaders,
the IDX format as specified, and Tiny-ImageNet's layout through ``image_folder``."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import torch
from geobench_data.fakes import MNIST_FILES, write_cifar, write_mnist, write_tiny_imagenet
from PIL import Image
from torchvision.datasets import CIFAR10, CIFAR100

from tests.data.helpers import data


def _no_md5(cls: type) -> type:
    """torchvision's loader without the official files' md5 sums (it skips None)."""
    return type(cls.__name__, (cls,), {"train_list": [[n, None] for n, _ in cls.train_list],
                                       "test_list": [[n, None] for n, _ in cls.test_list],
                                       "meta": {**cls.meta, "md5": None}})


def test_cifar_files_load_through_torchvision(tmp_path: Path) -> None:
    write_cifar(tmp_path, n_train=50, n_test=20)
    ten = _no_md5(CIFAR10)(str(tmp_path), train=True)
    assert ten.data.shape == (50, 32, 32, 3) and ten.classes == [f"class{i}" for i in range(10)]
    assert ten.targets == [i % 10 for i in range(10)] * 5
    test = _no_md5(CIFAR100)(str(tmp_path), train=False)
    assert test.data.shape == (20, 32, 32, 3) and test.targets == list(range(20))
    assert len(test.classes) == 100
    write_cifar(tmp_path, n_train=200, n_test=100)  # two and one images of each class
    d = data({"name": "cifar100", "root": str(tmp_path), "verify_md5": False, "classes": 10})
    assert d.num_classes == 10 and len(d.train_x) == 20 and len(d.test_x) == 10


def test_idx_files_follow_the_format(tmp_path: Path) -> None:
    write_mnist(tmp_path, n_train=30, n_test=10)
    raw = (tmp_path / MNIST_FILES[0]).read_bytes()
    assert struct.unpack(">BBBBIII", raw[:16]) == (0, 0, 8, 3, 30, 28, 28)
    assert len(raw) == 16 + 30 * 28 * 28
    labels = (tmp_path / MNIST_FILES[3]).read_bytes()
    assert struct.unpack(">BBBBI", labels[:8]) == (0, 0, 8, 1, 10)
    assert list(labels[8:]) == list(range(10))
    d = data({"name": "fashion_mnist", "root": str(tmp_path)})
    first = np.frombuffer(raw[16:16 + 784], dtype=np.uint8).reshape(28, 28)
    assert torch.allclose(d.train_x[0, 0], torch.from_numpy(first / 255.0).float())


def test_tiny_imagenet_layout_reads_val_labels_from_annotations(tmp_path: Path) -> None:
    root = tmp_path / "tiny-imagenet-200"
    write_tiny_imagenet(root, classes=3, per_class=2, val_per_class=2, side=16)
    rows = (root / "val" / "val_annotations.txt").read_text().splitlines()
    assert len(rows) == 6 and rows[0].split("\t")[:2] == ["val_n00000000_0.JPEG", "n00000000"]
    d = data({"name": "image_folder", "root": str(root), "size": 16})
    assert d.num_classes == 3 and d.train_y.tolist() == [0, 0, 1, 1, 2, 2]
    assert d.test_y.tolist() == [0, 0, 1, 1, 2, 2]
    decoded = np.array(Image.open(root / "val" / "images" / "val_n00000002_1.JPEG"))
    expected = torch.from_numpy(decoded).permute(2, 0, 1).float() / 255
    assert torch.allclose(d.test_x[5], expected, atol=1e-6)
