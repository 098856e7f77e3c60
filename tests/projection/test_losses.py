"""Each loss formula against an independent loop / numpy computation of its definition."""

import math

import numpy as np
import torch
from geobench_projection.objectives import losses


def _rand(*shape, seed=0):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def test_negative_cosine_and_byol_regression():
    p, z = _rand(5, 3, seed=1), _rand(5, 3, seed=2)
    cos = [float(p[i] @ z[i]) / (float(p[i].norm()) * float(z[i].norm())) for i in range(5)]
    assert math.isclose(float(losses.negative_cosine(p, z)), -sum(cos) / 5, rel_tol=1e-12)
    sq = [float(((p[i] / p[i].norm() - z[i] / z[i].norm()) ** 2).sum()) for i in range(5)]
    assert math.isclose(float(losses.byol_regression(p, z)), sum(sq) / 5, rel_tol=1e-12)


def test_vicreg_against_numpy_loops():
    a, b = _rand(7, 4, seed=3).numpy(), _rand(7, 4, seed=4).numpy() * 0.3
    n, d = a.shape
    inv = sum((a[i, j] - b[i, j]) ** 2 for i in range(n) for j in range(d)) / (n * d)
    var = cov = 0.0
    for x in (a, b):
        xc = x - x.mean(0)
        for j in range(d):
            s = math.sqrt(sum(xc[i, j] ** 2 for i in range(n)) / (n - 1) + 1e-4)
            var += max(0.0, 1.0 - s) / d / 2
        for j in range(d):
            for k in range(d):
                if j != k:
                    cjk = sum(xc[i, j] * xc[i, k] for i in range(n)) / (n - 1)
                    cov += cjk ** 2 / d
    expected = 25 * inv + 25 * var + 1 * cov
    got = float(losses.vicreg(torch.from_numpy(a), torch.from_numpy(b)))
    assert math.isclose(got, expected, rel_tol=1e-10)


def test_barlow_twins_against_numpy_loops():
    a, b = _rand(9, 3, seed=5).numpy(), _rand(9, 3, seed=6).numpy()
    n, d = a.shape
    an = (a - a.mean(0)) / np.sqrt(a.var(0) + 1e-5)
    bn = (b - b.mean(0)) / np.sqrt(b.var(0) + 1e-5)
    expected = 0.0
    for i in range(d):
        for j in range(d):
            c = sum(an[k, i] * bn[k, j] for k in range(n)) / n
            expected += (1 - c) ** 2 if i == j else 0.0051 * c ** 2
    got = float(losses.barlow_twins(torch.from_numpy(a), torch.from_numpy(b)))
    assert math.isclose(got, expected, rel_tol=1e-10)


def test_dino_against_explicit_cross_entropy():
    s = [_rand(4, 6, seed=7), _rand(4, 6, seed=8)]
    t = [torch.softmax(_rand(4, 6, seed=9), -1), torch.softmax(_rand(4, 6, seed=10), -1)]
    temp = 0.1
    total = 0.0
    for it in range(2):
        for iv in range(2):
            if it == iv:
                continue
            for i in range(4):
                logits = s[iv][i].numpy() / temp
                logq = logits - np.log(np.exp(logits - logits.max()).sum()) - logits.max()
                total += -(t[it][i].numpy() * logq).sum() / 4
    assert math.isclose(float(losses.dino(s, t, temp)), total / 2, rel_tol=1e-10)


def test_off_diagonal():
    m = torch.arange(16.0).view(4, 4)
    expected = [float(m[i, j]) for i in range(4) for j in range(4) if i != j]
    assert losses.off_diagonal(m).tolist() == expected
