"""Split rules shared by all datasets: class subsets, subsampling, reference set."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from geobench_data.common import pick_classes, relabel

from tests.data.helpers import data


def test_pick_classes_count_is_seeded_and_sorted() -> None:
    a = pick_classes(4, 100, seed=1)
    assert a == sorted(a) and len(set(a)) == 4 and all(0 <= c < 100 for c in a)
    assert pick_classes(4, 100, seed=1) == a
    assert any(pick_classes(4, 100, seed=s) != a for s in range(2, 6))


def test_pick_classes_list_keeps_order_and_validates() -> None:
    assert pick_classes([5, 1], 10, 0) == [5, 1]
    for bad in ([10], [1, 1], 0, 11):
        with pytest.raises(ValueError):
            pick_classes(bad, 10, 0)


def test_relabel_maps_positions() -> None:
    y = torch.tensor([5, 1, 3, 5])
    assert relabel(y, [5, 1], 10).tolist() == [0, 1, -1, 0]


def test_subsets_and_reference_from_seed() -> None:
    spec = {"name": "digits", "size": 8, "n_train": 200, "n_test": 50, "reference_size": 30,
            "classes": 5}
    a, b, c = data(spec, seed=0), data(spec, seed=0), data(spec, seed=1)
    assert torch.equal(a.train_x, b.train_x) and torch.equal(a.reference_x, b.reference_x)
    assert not torch.equal(a.train_x, c.train_x)
    assert a.train_x.shape[0] == 200 and a.test_x.shape[0] == 50
    assert set(a.train_y.tolist()) == set(range(5)) and a.num_classes == 5
    test_rows = [x.flatten() for x in a.test_x]
    for x, y in zip(a.reference_x, a.reference_y, strict=True):
        match = [i for i, t in enumerate(test_rows) if torch.equal(t, x.flatten())]
        assert match and any(a.test_y[i] == y for i in match)


def test_too_many_samples_is_an_error() -> None:
    from sklearn.datasets import load_digits

    counts = np.bincount(load_digits().target)
    train = int(counts.sum() - sum(round(0.2 * n) for n in counts))  # stratified 20% held out
    with pytest.raises(ValueError, match=f"n_train 10000 is more than the {train} images"):
        data({"name": "digits", "n_train": 10_000})  # refused by the params, before building
    with pytest.raises(ValueError, match="only"):
        data({"name": "digits", "n_train": 1_000, "classes": 2})  # refused when built
