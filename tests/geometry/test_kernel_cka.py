"""kernel_cka: the Gram-form CKA against the feature-space linear_cka and a hand-computed
4 x 4 case."""

import math

import numpy as np
import pytest
import torch

from geobench.geometry.similarity import kernel_cka, linear_cka


def _pair(n, p, q, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, p, generator=g, dtype=torch.float64) + 0.5  # uncentred features
    y = x[:, :1] * torch.randn(1, q, generator=g, dtype=torch.float64)
    return x, y + torch.randn(n, q, generator=g, dtype=torch.float64)


@pytest.mark.parametrize("debiased", [False, True])
@pytest.mark.parametrize(("n", "p", "q", "seed"),
                         [(4, 3, 2, 0), (10, 30, 20, 1), (40, 3, 5, 2), (200, 8, 64, 3)])
def test_matches_linear_cka_on_linear_kernels(n, p, q, seed, debiased):
    x, y = _pair(n, p, q, seed)
    expected = linear_cka(x, y, debiased=debiased)
    assert kernel_cka(x @ x.T, y @ y.T, debiased=debiased) == pytest.approx(expected, abs=1e-10)


def song_hsic(k, l_):
    """The literal U-statistic of Song et al. (2012), in numpy."""
    n = k.shape[0]
    kt, lt = k - np.diag(np.diag(k)), l_ - np.diag(np.diag(l_))
    one = np.ones(n)
    value = (np.trace(kt @ lt) + (one @ kt @ one) * (one @ lt @ one) / ((n - 1) * (n - 2))
             - 2 / (n - 2) * one @ kt @ lt @ one)
    return value / (n * (n - 3))


@pytest.mark.parametrize("n", [4, 9, 60])
def test_debiased_is_the_song_u_statistic_on_general_kernels(n):
    g = np.random.default_rng(n)
    a, b = g.normal(size=(n, n)), g.normal(size=(n, n))
    k = np.exp(-np.abs(a + a.T)) + 3.0  # symmetric, not a linear kernel, large offset
    l_ = np.tanh(b + b.T) + 0.5 * k
    expected = song_hsic(k, l_) / np.sqrt(song_hsic(k, k) * song_hsic(l_, l_))
    assert kernel_cka(torch.from_numpy(k), torch.from_numpy(l_)) == pytest.approx(expected,
                                                                                  abs=1e-10)


def test_hand_computed_biased_4x4():
    # f is centred, so H f f^T H = f f^T; H I H = H with ||H||_F^2 = tr H = 3.
    f = torch.tensor([1.0, 1.0, 1.0, -3.0])
    e = torch.tensor([1.0, 1.0, -1.0, -1.0])
    ones = torch.ones(4, 4)
    # <H, ff^T> = |f|^2 = 12, ||ff^T|| = |f|^2 = 12: CKA = 12 / (sqrt(3) 12) = 1/sqrt(3).
    assert kernel_cka(torch.eye(4), torch.outer(f, f), debiased=False) == pytest.approx(
        1 / math.sqrt(3), abs=1e-12)
    # (e.f)^2 / (|e|^2 |f|^2) = 16 / (4 * 12) = 1/3; a constant offset is centred away.
    assert kernel_cka(torch.outer(e, e) + 5 * ones, torch.outer(f, f),
                      debiased=False) == pytest.approx(1 / 3, abs=1e-12)


def test_debiased_reads_only_off_diagonal_entries_and_is_one_on_itself():
    x, _ = _pair(12, 4, 1, 5)
    k = x @ x.T
    moved = k + torch.diag(torch.arange(12, dtype=torch.float64))
    assert kernel_cka(k, moved) == pytest.approx(1.0, abs=1e-12)
    assert kernel_cka(k, k, debiased=False) == pytest.approx(1.0, abs=1e-12)


def test_degenerate_kernels_give_nan_and_small_n_raises():
    x, _ = _pair(8, 3, 1, 6)
    # the identity has no off-diagonal entries; a constant kernel is centred to exactly 0
    assert math.isnan(kernel_cka(x @ x.T, torch.eye(8)))
    assert math.isnan(kernel_cka(torch.full((8, 8), 2.0), x @ x.T, debiased=False))
    with pytest.raises(ValueError, match="at least 4"):
        kernel_cka(torch.eye(3), torch.eye(3))
    with pytest.raises(ValueError, match="n x n"):
        kernel_cka(torch.eye(4), torch.eye(5))
