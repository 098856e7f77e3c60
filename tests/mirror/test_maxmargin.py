"""The scipy max-margin solvers recover directions known in closed form: a dataset is built
around a chosen w* so that the KKT conditions of min ||w||_p s.t. y_i⟨x_i, w⟩ ≥ 1 hold at w*
with a unique solution, then padded with samples of margin ≥ 1.5 under w*."""

from __future__ import annotations

import numpy as np
import pytest
from geobench_mirror.maxmargin import max_margin, normalised_margin


def _pad(supports: list[np.ndarray], w: np.ndarray, rng: np.random.Generator,
         extra: int = 40) -> tuple[np.ndarray, np.ndarray]:
    """The supports with label +1 and their negatives with label −1 (margin exactly 1),
    plus ``extra`` random samples labelled by w and pushed to margin ≥ 1.5."""
    z = rng.normal(size=(extra, len(w)))
    m = z @ w
    z *= (np.maximum(1.5, np.abs(m)) / np.abs(m))[:, None]
    x = np.vstack(supports + [-s for s in supports] + [z])
    y = np.concatenate([np.ones(len(supports)), -np.ones(len(supports)), np.sign(z @ w)])
    return x, y


@pytest.mark.parametrize("p", [1.5, 2.0, 3.0, 4.0])
def test_lp_solver_recovers_a_known_direction(p: float) -> None:
    rng = np.random.default_rng(int(10 * p))
    w = rng.normal(size=7)
    g = np.sign(w) * np.abs(w) ** (p - 1)  # ∇(||w||_p^p / p): one support along it is KKT
    x, y = _pad([g / (g @ w)], w, rng)
    found = max_margin(x, y, p)
    assert found @ (w / np.linalg.norm(w)) > 1 - 1e-8
    assert normalised_margin(x, y, found, p) == pytest.approx(1 / np.linalg.norm(w, ord=p),
                                                              rel=1e-7)


def test_l1_solver_recovers_a_known_sparse_direction() -> None:
    # w* = (2, 1, 0, 0, 0, 0); supports s1·w* = s2·w* = 1 and 2 s1 + s2 = (1, 1, t) with
    # |t_j| < 1: the dual certificate of a unique L1 optimum
    rng = np.random.default_rng(3)
    w = np.array([2.0, 1.0, 0, 0, 0, 0])
    s1 = np.array([0.5, 0.0, 0.1, -0.2, 0.15, 0.0])
    s2 = np.array([0.0, 1.0, -0.1, 0.1, 0.2, -0.3])
    assert np.all(np.abs((2 * s1 + s2)[2:]) < 1)
    x, y = _pad([s1, s2], w, rng)
    found = max_margin(x, y, 1)
    np.testing.assert_allclose(found, w / np.linalg.norm(w), atol=1e-8)
    assert normalised_margin(x, y, found, 1) == pytest.approx(1 / 3, rel=1e-8)


def test_each_geometry_has_its_own_solution() -> None:
    """On one dataset the three solutions differ, and each attains the largest normalised
    margin in its own norm (a brute-force comparison against the others)."""
    rng = np.random.default_rng(0)
    teacher = np.zeros(30)
    teacher[:3] = [1.0, -0.7, 0.4]
    x = rng.normal(size=(20, 30))
    y = np.sign(x @ teacher)
    found = {p: max_margin(x, y, p) for p in (1, 2, 3)}
    for p, w in found.items():
        own = normalised_margin(x, y, w, p)
        for q, other in found.items():
            if q != p:
                assert own > normalised_margin(x, y, other, p) + 1e-6
    assert found[1] @ found[3] < 0.95


@pytest.mark.parametrize("p", [1, 2, 3])
def test_inseparable_data_is_a_clear_error(p: float) -> None:
    x = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    y = np.array([1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match="separable|separates"):
        max_margin(x, y, p)
