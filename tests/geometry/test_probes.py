import numpy as np
import torch
from sklearn.linear_model import LogisticRegression
from sklearn.neighbors import KNeighborsClassifier, NearestCentroid

from geobench.geometry.probes import knn_accuracy, linear_probe_accuracy, nccc_accuracy


def _blobs(seed: int, n: int = 300, d: int = 8, classes: int = 4, spread: float = 1.5):
    g = torch.Generator().manual_seed(seed)
    centres = torch.randn(classes, d, generator=g) * spread
    y = torch.randint(0, classes, (n,), generator=g)
    return centres[y] + torch.randn(n, d, generator=g), y


def test_nccc_matches_sklearn_nearest_centroid():
    xtr, ytr = _blobs(0)
    xte, yte = _blobs(1)
    ref = NearestCentroid().fit(xtr.numpy(), ytr.numpy()).score(xte.numpy(), yte.numpy())
    assert nccc_accuracy(xtr, ytr, xte, yte) == np.float64(ref)


def test_knn_matches_sklearn_cosine_neighbours():
    xtr, ytr = _blobs(2)
    xte, yte = _blobs(3)
    clf = KNeighborsClassifier(n_neighbors=5, metric="cosine", algorithm="brute")
    pred = clf.fit(xtr.numpy(), ytr.numpy()).predict(xte.numpy())
    ours = knn_accuracy(xtr, ytr, xte, yte, k=5)
    # sklearn breaks vote ties the same way (smallest label); distances tie with probability 0
    assert abs(ours - float((pred == yte.numpy()).mean())) < 1e-12


def test_linear_probe_close_to_sklearn_logistic_regression():
    xtr, ytr = _blobs(4, spread=0.8)
    xte, yte = _blobs(5, spread=0.8)
    mean, std = xtr.mean(0), xtr.std(0)
    clf = LogisticRegression(C=1 / (2 * 1e-4 * len(xtr)), max_iter=5000)
    ref = clf.fit(((xtr - mean) / std).numpy(), ytr.numpy()).score(((xte - mean) / std).numpy(),
                                                                   yte.numpy())
    assert abs(linear_probe_accuracy(xtr, ytr, xte, yte) - ref) <= 0.01


def test_linear_probe_separates_separable_data():
    x = torch.cat([torch.randn(50, 3) + 6, torch.randn(50, 3) - 6])
    y = torch.cat([torch.zeros(50), torch.ones(50)]).long()
    assert linear_probe_accuracy(x, y, x, y) == 1.0


def test_effective_rank_metric_on_features_with_known_spectrum():
    from torch import nn

    from geobench.components.metrics import EffectiveRank, EffectiveRankParams
    from geobench.contract.interfaces import Arm, Data, MetricContext, Objective

    q, _ = torch.linalg.qr(torch.randn(6, 6, generator=torch.Generator().manual_seed(0),
                                       dtype=torch.float64))
    s = torch.tensor([4.0, 2.0, 1.0, 0.0, 0.0, 0.0], dtype=torch.float64)
    u = q[:, :3] - q[:, :3].mean(0)  # centred columns, not orthonormal: orthonormalise
    u, _ = torch.linalg.qr(torch.cat([torch.ones(6, 1, dtype=torch.float64) / 6 ** 0.5, u], 1))
    x = (u[:, 1:4] * s[:3]) @ q[:3]  # centred rows with singular values 4, 2, 1
    data = Data(x, torch.zeros(6), x, torch.zeros(6), x, torch.zeros(6), 1, 6)
    arm = Arm(nn.Identity(), nn.Identity(), Objective())
    ctx = MetricContext(0, 0, "main", arm, data, None, [], None, torch.Generator(), {})
    p = np.array([4.0, 2.0, 1.0]) / 7.0
    expected = float(np.exp(-(p * np.log(p)).sum()))
    got = EffectiveRank(EffectiveRankParams(samples=6))(ctx)["erank"]
    assert abs(got - expected) < 1e-10
