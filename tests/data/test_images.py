"""image_folder and digits against independent readers (PIL, scikit-learn)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from geobench_data import DataNotFound
from PIL import Image
from sklearn.datasets import load_digits

from tests.data.helpers import data


def _write_folder(root: Path, classes: list[str], per_class: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    pixels = {}
    for name in classes:
        (root / name).mkdir(parents=True)
        for i in range(per_class):
            arr = rng.integers(0, 256, (12, 12, 3), dtype=np.uint8)
            Image.fromarray(arr).save(root / name / f"{i}.png")
            pixels[(name, i)] = arr
    return pixels


def test_image_folder_train_test_layout(tmp_path: Path) -> None:
    train = _write_folder(tmp_path / "train", ["cat", "dog", "eel"], 4, 0)
    test = _write_folder(tmp_path / "test", ["cat", "dog", "eel"], 2, 1)
    d = data({"name": "image_folder", "root": str(tmp_path), "size": 12})
    assert d.train_x.shape == (12, 3, 12, 12) and d.test_x.shape == (6, 3, 12, 12)
    assert d.train_y.tolist() == [0] * 4 + [1] * 4 + [2] * 4
    # ImageFolder orders files by name within a class folder
    expected = torch.from_numpy(train[("dog", 0)]).permute(2, 0, 1).float() / 255
    assert torch.allclose(d.train_x[4], expected, atol=1e-6)
    expected = torch.from_numpy(test[("eel", 1)]).permute(2, 0, 1).float() / 255
    assert torch.allclose(d.test_x[5], expected, atol=1e-6)


def test_image_folder_single_tree_subset_and_resize(tmp_path: Path) -> None:
    pixels = _write_folder(tmp_path, ["a", "b", "c"], 5, 2)
    d = data({"name": "image_folder", "root": str(tmp_path), "size": 6, "channels": 1,
              "classes": [2, 0], "test_fraction": 0.4})
    assert d.train_x.shape == (6, 1, 6, 6) and d.test_x.shape == (4, 1, 6, 6)
    assert sorted(d.train_y.tolist()) == [0, 0, 0, 1, 1, 1]
    gray = Image.fromarray(pixels[("a", 0)]).convert("L")
    reference = torch.nn.functional.interpolate(
        torch.from_numpy(np.array(gray)).float()[None, None] / 255, size=(6, 6),
        mode="bilinear", antialias=True)
    assert any(torch.allclose(x, reference[0], atol=1e-5) for x in torch.cat([d.train_x,
                                                                              d.test_x]))


def test_image_folder_without_test_split_uses_train_for_reference(tmp_path: Path) -> None:
    _write_folder(tmp_path, ["a", "b"], 3, 3)
    d = data({"name": "image_folder", "root": str(tmp_path), "test_fraction": 0.0,
              "reference_size": 4, "size": 12})
    assert len(d.test_x) == 0 and len(d.reference_x) == 4
    rows = {tuple(r.flatten().tolist()) for r in d.train_x}
    assert all(tuple(r.flatten().tolist()) in rows for r in d.reference_x)


def test_image_folder_missing_root(tmp_path: Path) -> None:
    with pytest.raises(DataNotFound, match="not a folder"):
        data({"name": "image_folder", "root": str(tmp_path / "nope")})


def test_digits_match_sklearn_and_split_is_fixed() -> None:
    d = data({"name": "digits", "size": 8})
    bunch = load_digits()
    assert len(d.train_x) + len(d.test_x) == 1797 and d.train_x.shape[1:] == (1, 8, 8)
    # every training image is one of sklearn's images / 16 with its label
    table = {tuple((img / 16.0).astype(np.float32).flatten().tolist()): t
             for img, t in zip(bunch.images, bunch.target, strict=True)}
    for x, y in zip(d.train_x[:50], d.train_y[:50], strict=True):
        assert table[tuple(x.flatten().tolist())] == int(y)
    counts = torch.bincount(d.test_y, minlength=10)
    full = np.bincount(bunch.target)
    assert counts.tolist() == [round(0.2 * n) for n in full]  # stratified 20%
    other = data({"name": "digits", "size": 8}, seed=5)
    assert torch.equal(other.test_x, d.test_x)  # the split does not depend on the seed


def test_digits_resized_three_channels() -> None:
    d = data({"name": "digits", "size": 16, "channels": 3, "n_train": 100, "classes": 4})
    assert d.train_x.shape == (100, 3, 16, 16)
    assert torch.equal(d.train_x[:, 0], d.train_x[:, 2])
    assert d.train_x.min() >= 0 and d.train_x.max() <= 1
    assert set(d.train_y.tolist()) <= {0, 1, 2, 3} and d.num_classes == 4


@pytest.mark.parametrize("classes", [None, [0, 1], [0, 8], [8]])
def test_the_declared_test_size_is_the_built_splits(classes) -> None:
    """At test_fraction 0.0028 classes 0, 2 and 8 (178, 177, 174 images) get no test
    sample: the declared ``test_size`` counts the built test split."""
    from geobench_data.images import DigitsParams, digits_test_size

    spec = {"name": "digits", "size": 8, "test_fraction": 0.0028, "batch_size": 8,
            "classes": classes}
    built = data(spec)
    assert digits_test_size(DigitsParams(**{k: v for k, v in spec.items() if k != "name"})) \
        == len(built.test_y)


def test_the_declared_test_size_of_drawn_classes_is_the_fewest() -> None:
    from geobench_data.images import DigitsParams, digits_test_size

    assert digits_test_size(DigitsParams(test_fraction=0.0028, classes=3)) == 0
    assert digits_test_size(DigitsParams(test_fraction=0.0028, classes=4)) == 1
