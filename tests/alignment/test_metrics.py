"""Cross-arm metrics against direct numpy / scipy computations on the representations."""

import numpy as np
import pytest
import torch
from geobench_alignment.metrics import (
    CKA,
    RSA,
    RSAParams,
    SimilarityGap,
    SpaceParams,
    WeightDistance,
    representations,
)
from geobench_alignment.objectives import ContrastiveParams, CrossEntropy, NTXent
from scipy import stats

from geobench.contract.interfaces import MetricParams

from .helpers import arm, blobs, context


def _two_arms():
    a = arm(NTXent(ContrastiveParams()), seed=0)
    b = arm(CrossEntropy(4, 3), seed=1)
    return a, b


def _reps(a, x, space):
    with torch.no_grad():
        out = a.backbone(x) if space == "backbone" else a.head(a.backbone(x))
    return out.double().numpy()


def _hsic_u(K, L):
    """Unbiased HSIC (Song et al. 2012) of two Gram matrices, diagonals zeroed."""
    n = K.shape[0]
    K, L = K - np.diag(np.diag(K)), L - np.diag(np.diag(L))
    one = np.ones(n)
    value = ((K * L).sum() + (one @ K @ one) * (one @ L @ one) / ((n - 1) * (n - 2))
             - 2 / (n - 2) * (one @ K @ L @ one))
    return value / (n * (n - 3))


@pytest.mark.parametrize("space", ["backbone", "head"])
def test_cka_matches_gram_formulas(space):
    data = blobs()
    a, b = _two_arms()
    out = CKA(SpaceParams(space=space))(context(data, b, reference=a))
    assert list(out) == ["debiased", "biased"]
    X, Y = _reps(a, data.reference_x, space), _reps(b, data.reference_x, space)
    n = X.shape[0]
    H = np.eye(n) - 1.0 / n
    K, L = H @ X @ X.T @ H, H @ Y @ Y.T @ H
    biased = (K * L).sum() / np.sqrt((K * K).sum() * (L * L).sum())
    assert out["biased"] == pytest.approx(biased, rel=1e-6)
    K, L = X @ X.T, Y @ Y.T
    debiased = _hsic_u(K, L) / np.sqrt(_hsic_u(K, K) * _hsic_u(L, L))
    assert out["debiased"] == pytest.approx(debiased, rel=1e-6, abs=1e-9)


def test_rsa_matches_scipy():
    data = blobs()
    a, b = _two_arms()
    out = RSA(RSAParams(rdm="euclidean", compare="spearman"))(context(data, b, reference=a))
    X, Y = _reps(a, data.reference_x, "backbone"), _reps(b, data.reference_x, "backbone")
    iu = np.triu_indices(X.shape[0], k=1)
    dx = np.linalg.norm(X[:, None] - X[None], axis=-1)[iu]
    dy = np.linalg.norm(Y[:, None] - Y[None], axis=-1)[iu]
    assert out["value"] == pytest.approx(stats.spearmanr(dx, dy)[0], rel=1e-6)


def test_similarity_gap_matches_numpy():
    data = blobs()
    a, b = _two_arms()
    out = SimilarityGap(SpaceParams(space="head"))(context(data, b, reference=a))
    X, Y = _reps(a, data.reference_x, "head"), _reps(b, data.reference_x, "head")
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    Y /= np.linalg.norm(Y, axis=1, keepdims=True)
    gap = np.linalg.norm(X @ X.T - Y @ Y.T)
    assert out["frobenius"] == pytest.approx(gap, rel=1e-6)
    assert out["relative"] == pytest.approx(gap / np.linalg.norm(X @ X.T), rel=1e-6)
    assert out["per_entry"] == pytest.approx(gap / X.shape[0], rel=1e-6)


def test_identical_arms_are_perfectly_aligned():
    data = blobs()
    a, b = arm(NTXent(ContrastiveParams()), seed=3), arm(CrossEntropy(4, 3), seed=3)
    ctx = context(data, b, reference=a)
    cka = CKA(SpaceParams())(ctx)
    assert cka["debiased"] == pytest.approx(1.0) and cka["biased"] == pytest.approx(1.0)
    assert all(v == pytest.approx(1.0) for v in RSA(RSAParams())(ctx).values())
    assert SimilarityGap(SpaceParams())(ctx)["frobenius"] == pytest.approx(0.0, abs=1e-6)
    dist = WeightDistance(MetricParams())(ctx)
    assert dist == {"network": 0.0, "backbone": 0.0, "head": 0.0}


def test_weight_distance_matches_manual_and_ignores_objective_modules():
    data = blobs()
    a, b = _two_arms()
    out = WeightDistance(MetricParams())(context(data, b, reference=a))

    def flat(m):
        return np.concatenate([p.detach().double().numpy().ravel() for p in m.parameters()])

    for part in ("backbone", "head"):
        pa, pb = flat(getattr(a, part)), flat(getattr(b, part))
        assert out[part] == pytest.approx(np.linalg.norm(pa - pb) / np.linalg.norm(pa))
    pa = np.concatenate([flat(a.backbone), flat(a.head)])
    pb = np.concatenate([flat(b.backbone), flat(b.head)])
    assert out["network"] == pytest.approx(np.linalg.norm(pa - pb) / np.linalg.norm(pa))


def test_representations_restore_training_mode_and_chunk():
    data = blobs()
    a = arm(NTXent(ContrastiveParams()))
    a.train()
    z = representations(a, data.reference_x, "head", chunk=7)
    assert a.training
    assert torch.allclose(z, a.embed(data.reference_x).detach(), atol=1e-6)
