"""Random images written in the real on-disk formats of the datasets geobench reads: CIFAR
pickles, MNIST / Fashion-MNIST IDX files and the Tiny-ImageNet folder layout.

They let a profile be built and run where the real files are absent (a preflight, a speed
check, CI); the numbers they produce measure speed, not learning. Labels cycle through the
classes, so every class has the same number of images (a class subset always has some).
CIFAR files carry no md5 of the official release: read them with ``verify_md5: false``.
"""

from __future__ import annotations

import pickle
import struct
from pathlib import Path

import numpy as np
from PIL import Image

MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
               "t10k-labels-idx1-ubyte")


def _pickle(path: Path, obj: dict) -> None:
    """Python-3 pickles with str keys: what torchvision reads back with ``encoding='latin1'``
    from the official (Python-2) files."""
    with open(path, "wb") as fh:
        pickle.dump(obj, fh, protocol=2)


def _cifar_batch(rng: np.random.Generator, n: int, classes: int, key: str) -> dict:
    labels = (np.arange(n) % classes).tolist()
    return {"data": rng.integers(0, 256, (n, 3072), dtype=np.uint8), key: labels,
            "filenames": [f"{i}.png" for i in range(n)]}


def write_cifar(root: Path, n_train: int = 1000, n_test: int = 200, seed: int = 0) -> None:
    """``cifar-10-batches-py`` (five training batches, test batch, meta) and
    ``cifar-100-python`` (train, test, meta) under ``root``; ``n_train`` is split over the
    five CIFAR-10 batches."""
    rng = np.random.default_rng(seed)
    ten = root / "cifar-10-batches-py"
    ten.mkdir(parents=True, exist_ok=True)
    for i in range(1, 6):
        _pickle(ten / f"data_batch_{i}", _cifar_batch(rng, n_train // 5, 10, "labels"))
    _pickle(ten / "test_batch", _cifar_batch(rng, n_test, 10, "labels"))
    _pickle(ten / "batches.meta", {"label_names": [f"class{i}" for i in range(10)]})
    hundred = root / "cifar-100-python"
    hundred.mkdir(parents=True, exist_ok=True)
    for split, n in (("train", n_train), ("test", n_test)):
        batch = _cifar_batch(rng, n, 100, "fine_labels")
        batch["coarse_labels"] = [y // 5 for y in batch["fine_labels"]]
        _pickle(hundred / split, batch)
    _pickle(hundred / "meta", {"fine_label_names": [f"f{i}" for i in range(100)],
                               "coarse_label_names": [f"c{i}" for i in range(20)]})


def _idx(array: np.ndarray) -> bytes:
    """IDX: two zero bytes, type 0x08 (ubyte), the rank, big-endian sizes, then the data."""
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim)
    return header + struct.pack(f">{array.ndim}I", *array.shape) + array.tobytes()


def write_mnist(folder: Path, n_train: int = 1000, n_test: int = 200, seed: int = 0) -> None:
    """The four uncompressed IDX files of MNIST / Fashion-MNIST in ``folder``."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    arrays = (rng.integers(0, 256, (n_train, 28, 28), dtype=np.uint8),
              (np.arange(n_train) % 10).astype(np.uint8),
              rng.integers(0, 256, (n_test, 28, 28), dtype=np.uint8),
              (np.arange(n_test) % 10).astype(np.uint8))
    for name, array in zip(MNIST_FILES, arrays, strict=True):
        (folder / name).write_bytes(_idx(array))


def write_tiny_imagenet(root: Path, classes: int = 200, per_class: int = 4,
                        val_per_class: int = 2, side: int = 64, seed: int = 0) -> None:
    """Tiny-ImageNet's layout under ``root``: ``wnids.txt``, ``train/<wnid>/images/*.JPEG``
    and a flat ``val/images`` folder labelled by ``val/val_annotations.txt``."""
    rng = np.random.default_rng(seed)
    wnids = [f"n{i:08d}" for i in range(classes)]
    root.mkdir(parents=True, exist_ok=True)
    (root / "wnids.txt").write_text("".join(w + "\n" for w in wnids))

    def save(path: Path) -> None:
        pixels = rng.integers(0, 256, (side, side, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(path, format="JPEG")

    rows = []
    (root / "val" / "images").mkdir(parents=True, exist_ok=True)
    for wnid in wnids:
        images = root / "train" / wnid / "images"
        images.mkdir(parents=True, exist_ok=True)
        for k in range(per_class):
            save(images / f"{wnid}_{k}.JPEG")
        for k in range(val_per_class):
            name = f"val_{wnid}_{k}.JPEG"
            save(root / "val" / "images" / name)
            rows.append(f"{name}\t{wnid}\t0\t0\t{side - 1}\t{side - 1}\n")
    (root / "val" / "val_annotations.txt").write_text("".join(rows))
