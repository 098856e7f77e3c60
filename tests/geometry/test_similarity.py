"""Similarity math against dense N x N references, scipy, and invariances."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from geobench.geometry import MinibatchCKA, frobenius_gap, linear_cka, rsa, similarity_matrix


def gram_cka(X: np.ndarray, Y: np.ndarray, debiased: bool = False) -> float:
    """Reference: CKA from n x n Gram matrices (Kornblith et al.'s centring of K, L)."""
    K, L = X @ X.T, Y @ Y.T

    def centre(G):
        G = G.astype(np.float64).copy()
        n = G.shape[0]
        if debiased:
            np.fill_diagonal(G, 0.0)
            means = G.sum(0) / (n - 2)
            means -= means.sum() / (2 * (n - 1))
            G -= means[:, None]
            G -= means[None, :]
            np.fill_diagonal(G, 0.0)
            return G
        H = np.eye(n) - np.ones((n, n)) / n
        return H @ G @ H

    Kc, Lc = centre(K), centre(L)
    hxy = np.sum(Kc * Lc)
    return hxy / np.sqrt(np.sum(Kc * Kc) * np.sum(Lc * Lc))


def hsic_u_loop(K: np.ndarray, L: np.ndarray) -> float:
    """Song et al. (2012) unbiased HSIC written term by term."""
    n = K.shape[0]
    Kt, Lt = K.copy(), L.copy()
    np.fill_diagonal(Kt, 0.0)
    np.fill_diagonal(Lt, 0.0)
    one = np.ones(n)
    return (
        np.trace(Kt @ Lt)
        + (one @ Kt @ one) * (one @ Lt @ one) / ((n - 1) * (n - 2))
        - 2.0 / (n - 2) * (one @ Kt @ Lt @ one)
    ) / (n * (n - 3))


def _pair(seed: int, n: int = 40, p: int = 7, q: int = 5):
    g = np.random.default_rng(seed)
    X = g.normal(size=(n, p))
    Y = X[:, :q] @ g.normal(size=(q, q)) + 0.5 * g.normal(size=(n, q))
    return X, Y


@pytest.mark.parametrize("debiased", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_cka_matches_gram_formula(seed, debiased):
    X, Y = _pair(seed)
    X += 3.0  # uncentred input: the centring must happen inside
    got = linear_cka(torch.tensor(X), torch.tensor(Y), debiased=debiased)
    assert got == pytest.approx(gram_cka(X, Y, debiased), rel=1e-9, abs=1e-12)


def test_debiased_cka_matches_song_u_statistic():
    X, Y = _pair(5, n=23)
    Xc, Yc = X - X.mean(0), Y - Y.mean(0)
    K, L = Xc @ Xc.T, Yc @ Yc.T
    ref = hsic_u_loop(K, L) / np.sqrt(hsic_u_loop(K, K) * hsic_u_loop(L, L))
    assert linear_cka(torch.tensor(X), torch.tensor(Y), debiased=True) == pytest.approx(ref)


def test_cka_float32_input_accumulates_in_float64():
    X, Y = _pair(3, n=200)
    got = linear_cka(torch.tensor(X, dtype=torch.float32), torch.tensor(Y, dtype=torch.float32))
    ref = gram_cka(X.astype(np.float32).astype(np.float64), Y.astype(np.float32).astype(np.float64))
    assert got == pytest.approx(ref, rel=1e-9)


def test_cka_identical_is_one():
    X, _ = _pair(4)
    assert linear_cka(torch.tensor(X), torch.tensor(X)) == pytest.approx(1.0)
    assert linear_cka(torch.tensor(X), torch.tensor(X), debiased=True) == pytest.approx(1.0)


settings_small = settings(max_examples=20, deadline=None)


@settings_small
@given(seed=st.integers(0, 10_000), scale=st.floats(1e-3, 1e3), debiased=st.booleans())
def test_cka_invariances(seed, scale, debiased):
    X, Y = _pair(seed, n=30, p=6, q=6)
    g = np.random.default_rng(seed + 1)
    Q, _ = np.linalg.qr(g.normal(size=(6, 6)))
    perm = g.permutation(6)
    base = linear_cka(torch.tensor(X), torch.tensor(Y), debiased=debiased)
    for Y2 in (Y @ Q, scale * Y, Y[:, perm]):
        assert linear_cka(torch.tensor(X), torch.tensor(Y2), debiased=debiased) == pytest.approx(
            base, rel=1e-7, abs=1e-10
        )


def test_cka_biased_inflated_debiased_near_zero_for_independent_gaussians():
    g = torch.Generator().manual_seed(0)

    def mean_cka(n, debiased, reps=40):
        vals = [
            linear_cka(torch.randn(n, 64, generator=g), torch.randn(n, 64, generator=g), debiased)
            for _ in range(reps)
        ]
        return float(np.mean(vals))

    biased_small, biased_large = mean_cka(32, False), mean_cka(256, False)
    assert biased_small > 0.5  # d=64 >> n=32: the biased estimator is far from 0
    assert biased_large < biased_small / 2
    assert abs(mean_cka(32, True)) < 0.02
    assert abs(mean_cka(256, True)) < 0.005


def test_minibatch_cka_is_ratio_of_mean_unbiased_hsic():
    X, Y = _pair(7, n=90)
    mb = MinibatchCKA()
    hs = []
    for s in range(0, 90, 30):
        xb, yb = X[s : s + 30], Y[s : s + 30]
        xb, yb = xb - xb.mean(0), yb - yb.mean(0)
        K, L = xb @ xb.T, yb @ yb.T
        hs.append((hsic_u_loop(K, L), hsic_u_loop(K, K), hsic_u_loop(L, L)))
        mb.update(torch.tensor(X[s : s + 30]), torch.tensor(Y[s : s + 30]))
    h = np.mean(hs, axis=0)
    assert mb.batches == 3
    assert mb.value() == pytest.approx(h[0] / np.sqrt(h[1] * h[2]))
    assert np.isnan(MinibatchCKA().value())


def test_minibatch_cka_tracks_full_cka_for_large_n():
    g = torch.Generator().manual_seed(1)
    X = torch.randn(4096, 16, generator=g)
    Y = X @ torch.randn(16, 8, generator=g) + torch.randn(4096, 8, generator=g)
    mb = MinibatchCKA()
    for s in range(0, 4096, 256):
        mb.update(X[s : s + 256], Y[s : s + 256])
    assert mb.value() == pytest.approx(linear_cka(X, Y, debiased=True), abs=0.02)


def _rdm_ref(X: np.ndarray, kind: str) -> np.ndarray:
    n = X.shape[0]
    D = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            if kind == "correlation":
                D[i, j] = 1.0 - stats.pearsonr(X[i], X[j])[0]
            elif kind == "cosine":
                D[i, j] = 1.0 - X[i] @ X[j] / (np.linalg.norm(X[i]) * np.linalg.norm(X[j]))
            else:
                D[i, j] = np.linalg.norm(X[i] - X[j])
    return D


@pytest.mark.parametrize("rdm", ["correlation", "cosine", "euclidean"])
@pytest.mark.parametrize("compare", ["pearson", "spearman"])
def test_rsa_matches_scipy_on_off_diagonal(rdm, compare):
    X, Y = _pair(11, n=18, p=6, q=4)
    iu = np.triu_indices(18, k=1)
    a, b = _rdm_ref(X, rdm)[iu], _rdm_ref(Y, rdm)[iu]
    ref = (stats.pearsonr if compare == "pearson" else stats.spearmanr)(a, b)[0]
    assert rsa(torch.tensor(X), torch.tensor(Y), rdm=rdm, compare=compare) == pytest.approx(ref)


def test_rsa_spearman_handles_ties_like_scipy():
    # integer-valued features give tied euclidean distances
    g = np.random.default_rng(2)
    X = g.integers(0, 3, size=(15, 2)).astype(float)
    Y = g.integers(0, 3, size=(15, 2)).astype(float)
    iu = np.triu_indices(15, k=1)
    ref = stats.spearmanr(_rdm_ref(X, "euclidean")[iu], _rdm_ref(Y, "euclidean")[iu])[0]
    got = rsa(torch.tensor(X), torch.tensor(Y), rdm="euclidean", compare="spearman")
    assert got == pytest.approx(ref)


@settings_small
@given(seed=st.integers(0, 10_000), scale=st.floats(1e-2, 1e2))
def test_rsa_invariances(seed, scale):
    X, Y = _pair(seed, n=20, p=5, q=5)
    Q, _ = np.linalg.qr(np.random.default_rng(seed).normal(size=(5, 5)))
    base = rsa(torch.tensor(X), torch.tensor(Y), rdm="euclidean")
    for Y2 in (Y @ Q, scale * Y):
        got = rsa(torch.tensor(X), torch.tensor(Y2), rdm="euclidean")
        assert got == pytest.approx(base, rel=1e-7)


def test_rsa_rejects_unknown_options():
    X = torch.randn(5, 3)
    with pytest.raises(ValueError, match="rdm"):
        rsa(X, X, rdm="manhattan")
    with pytest.raises(ValueError, match="compare"):
        rsa(X, X, compare="kendall")


def test_similarity_matrix_and_frobenius_gap():
    g = np.random.default_rng(3)
    Z = g.normal(size=(9, 4))
    ref = np.array([[u @ v / np.linalg.norm(u) / np.linalg.norm(v) for v in Z] for u in Z])
    S = similarity_matrix(torch.tensor(Z, dtype=torch.float32))
    assert S.dtype == torch.float64
    np.testing.assert_allclose(S.numpy(), ref, atol=1e-6)
    A, B = g.normal(size=(6, 6)), g.normal(size=(6, 6))
    assert frobenius_gap(torch.tensor(A), torch.tensor(B)) == pytest.approx(
        np.sqrt(((A - B) ** 2).sum())
    )
