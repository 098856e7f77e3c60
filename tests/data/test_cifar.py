"""CIFAR loaders on a small file set written in the exact CIFAR pickle format."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest
import torch
from geobench_data import DataNotFound

from tests.data.helpers import data


def _dump(path: Path, obj: dict) -> None:
    with open(path, "wb") as f:
        pickle.dump(obj, f, protocol=2)


def write_cifar10(root: Path, per_batch: int = 6, n_test: int = 20) -> dict[str, np.ndarray]:
    """Five training batches, a test batch and batches.meta; returns the raw arrays."""
    rng = np.random.default_rng(0)
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    rows, labels = [], []
    for b in range(1, 6):
        x = rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8)
        y = rng.integers(0, 10, per_batch).tolist()
        _dump(folder / f"data_batch_{b}", {"batch_label": f"training batch {b} of 5",
                                           "labels": y, "data": x,
                                           "filenames": [f"{b}_{i}.png" for i in range(len(y))]})
        rows.append(x)
        labels += y
    tx = rng.integers(0, 256, (n_test, 3072), dtype=np.uint8)
    ty = (np.arange(n_test) % 10).tolist()
    _dump(folder / "test_batch", {"batch_label": "testing batch 1 of 1", "labels": ty,
                                  "data": tx, "filenames": [f"t{i}.png" for i in range(n_test)]})
    _dump(folder / "batches.meta", {"label_names": [f"class{i}" for i in range(10)],
                                    "num_cases_per_batch": per_batch, "num_vis": 3072})
    return {"train_x": np.concatenate(rows), "train_y": np.array(labels), "test_x": tx,
            "test_y": np.array(ty)}


def write_cifar100(root: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    folder = root / "cifar-100-python"
    folder.mkdir(parents=True)
    out = {}
    for split, n in (("train", 40), ("test", 30)):
        x = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
        y = rng.integers(0, 100, n)
        _dump(folder / split, {"filenames": [f"{i}.png" for i in range(n)], "batch_label": split,
                               "fine_labels": y.tolist(), "coarse_labels": (y // 5).tolist(),
                               "data": x})
        out[f"{split}_x"], out[f"{split}_y"] = x, y
    _dump(folder / "meta", {"fine_label_names": [f"f{i}" for i in range(100)],
                            "coarse_label_names": [f"c{i}" for i in range(20)]})
    return out


def _pixels(rows: np.ndarray) -> torch.Tensor:
    """Row layout of CIFAR: 1024 red, 1024 green, 1024 blue values, each row-major 32x32."""
    n = len(rows)
    out = np.zeros((n, 3, 32, 32), dtype=np.float32)
    for k in range(n):
        for c in range(3):
            out[k, c] = rows[k, c * 1024:(c + 1) * 1024].reshape(32, 32) / 255.0
    return torch.from_numpy(out)


def test_cifar10_loads_locally_written_files(tmp_path: Path) -> None:
    raw = write_cifar10(tmp_path)
    d = data({"name": "cifar10", "root": str(tmp_path), "verify_md5": False})
    assert d.train_x.shape == (30, 3, 32, 32) and d.train_x.dtype == torch.float32
    assert torch.equal(d.train_x, _pixels(raw["train_x"]))
    assert d.train_y.tolist() == raw["train_y"].tolist() and d.train_y.dtype == torch.int64
    assert torch.equal(d.test_x, _pixels(raw["test_x"]))
    assert d.num_classes == 10
    # reference: a subset of the test split
    test_rows = {tuple(r.flatten().tolist()) for r in d.test_x}
    assert all(tuple(r.flatten().tolist()) in test_rows for r in d.reference_x)
    assert len(d.reference_x) == 20


def test_cifar10_class_subset_relabels(tmp_path: Path) -> None:
    raw = write_cifar10(tmp_path)
    d = data({"name": "cifar10", "root": str(tmp_path), "verify_md5": False,
              "classes": [7, 2], "n_test": 3, "reference_size": 2})
    keep = np.isin(raw["train_y"], [7, 2])
    assert torch.equal(d.train_x, _pixels(raw["train_x"][keep]))
    assert d.train_y.tolist() == [0 if y == 7 else 1 for y in raw["train_y"][keep]]
    assert d.num_classes == 2 and len(d.test_x) == 3 and len(d.reference_x) == 2


def test_cifar100_fine_labels(tmp_path: Path) -> None:
    raw = write_cifar100(tmp_path)
    d = data({"name": "cifar100", "root": str(tmp_path), "verify_md5": False})
    assert d.num_classes == 100
    assert d.train_y.tolist() == raw["train_y"].tolist()
    assert torch.equal(d.test_x, _pixels(raw["test_x"]))


def test_missing_files_raise_one_clear_line(tmp_path: Path) -> None:
    with pytest.raises(DataNotFound) as info:
        data({"name": "cifar10", "root": str(tmp_path)})
    message = str(info.value)
    assert "\n" not in message and str(tmp_path / "cifar-10-batches-py") in message
    assert "download: true" in message and "cifar-10-batches-py" in message
    assert isinstance(info.value, ValueError)


def test_root_from_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write_cifar10(tmp_path)
    monkeypatch.setenv("GEOBENCH_DATA", str(tmp_path))
    assert len(data({"name": "cifar10", "verify_md5": False}).train_x) == 30


def test_checksum_mismatch_is_reported(tmp_path: Path) -> None:
    write_cifar10(tmp_path)
    with pytest.raises(DataNotFound, match="md5"):
        data({"name": "cifar10", "root": str(tmp_path)})
