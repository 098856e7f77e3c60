"""gaussian_mixture and student_teacher: generating process, determinism, margins."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.data.helpers import data


def test_gaussian_mixture_process() -> None:
    spec = {"name": "gaussian_mixture", "num_classes": 300, "dim": 64, "separation": 8.0,
            "noise": 0.5, "n_train": 6000, "n_test": 30}
    d = data(spec)
    means = d.extras["means"].numpy()
    assert means.shape == (300, 64)
    np.testing.assert_allclose(np.linalg.norm(means, axis=1), 8.0 * 0.5, rtol=1e-5)
    x, y = d.train_x.numpy().astype(np.float64), d.train_y.numpy()
    assert np.bincount(y).min() == 20 and np.bincount(y).max() == 20  # balanced
    resid = x - means[y]
    assert abs(resid.std() - 0.5) < 0.01 and abs(resid.mean()) < 0.01
    # nearest-mean classification works at separation 8 in 64 dims
    dist = (x**2).sum(1)[:, None] - 2 * x @ means.T + (means**2).sum(1)[None]
    assert (dist.argmin(1) == y).mean() > 0.95


def test_gaussian_mixture_seeds_and_subset() -> None:
    spec = {"name": "gaussian_mixture", "n_train": 64, "n_test": 32}
    a, b, c = data(spec, 3), data(spec, 3), data(spec, 4)
    assert torch.equal(a.train_x, b.train_x) and torch.equal(a.test_x, b.test_x)
    assert not torch.equal(a.train_x, c.train_x)
    sub = data({**spec, "classes": [7, 2]}, 3)
    assert sub.num_classes == 2 and set(sub.train_y.tolist()) == {0, 1}
    full = data(spec, 3)
    torch.testing.assert_close(sub.extras["means"], full.extras["means"][[7, 2]])


def _teacher_loop(x: np.ndarray, w: np.ndarray, a: np.ndarray) -> np.ndarray:
    out = np.zeros(len(x))
    for i in range(len(x)):
        for j in range(len(w)):
            out[i] += a[j] * max(0.0, float(np.dot(w[j], x[i])))
    return out / np.sqrt(len(w))


def test_student_teacher_labels_and_margin() -> None:
    d = data({"name": "student_teacher", "dim": 10, "teacher_width": 5, "margin": 0.3,
              "n_train": 300, "n_test": 100})
    t = d.extras["teacher"]
    w, a = t.w.numpy(), t.a.numpy()
    np.testing.assert_allclose(np.linalg.norm(w, axis=1), 1.0, rtol=1e-5)
    assert sorted(set(a.tolist())) == [-1.0, 1.0]
    out = _teacher_loop(d.train_x.numpy().astype(np.float64), w, a)
    assert np.all(np.abs(out) >= 0.3 - 1e-5)
    assert d.train_y.tolist() == (out > 0).astype(int).tolist()
    assert 0 < d.train_y.sum() < 300 and d.num_classes == 2


def test_student_teacher_without_margin_is_gaussian() -> None:
    d = data({"name": "student_teacher", "dim": 8, "n_train": 4000, "n_test": 10})
    x = d.train_x.numpy()
    assert abs(x.mean()) < 0.03 and abs(x.std() - 1.0) < 0.03
    a = data({"name": "student_teacher", "dim": 8, "n_train": 4000, "n_test": 10}, seed=1)
    assert not torch.equal(a.train_x, d.train_x)


def test_student_teacher_single_neuron_margin_is_rejected() -> None:
    with pytest.raises(ValueError, match="teacher_width"):
        data({"name": "student_teacher", "teacher_width": 1, "margin": 0.1})


def test_linear_teacher_labels_support_and_margin() -> None:
    d = data({"name": "linear_teacher", "dim": 20, "support": 3, "margin": 0.2,
              "n_train": 200, "n_test": 50})
    w = d.extras["teacher"].numpy().astype(np.float64)
    assert np.count_nonzero(w) == 3 and np.linalg.norm(w) == pytest.approx(1.0, rel=1e-6)
    for x, y in ((d.train_x, d.train_y), (d.test_x, d.test_y)):
        score = x.numpy().astype(np.float64) @ w
        assert np.all(np.abs(score) >= 0.2 - 1e-6)
        assert y.tolist() == (score > 0).astype(int).tolist()
    assert 0 < d.train_y.sum() < 200
    other = data({"name": "linear_teacher", "dim": 20, "support": 3}, seed=1)
    assert not np.array_equal(other.extras["teacher"].numpy(), w)


def test_linear_teacher_support_beyond_dim_is_rejected() -> None:
    with pytest.raises(ValueError, match="support"):
        data({"name": "linear_teacher", "dim": 4, "support": 5})
