"""The authors' RSA (cosine similarity matrices, Pearson / Spearman over i < j) against a
hand-written numpy version, and distinct from our default (correlation RDM) RSA."""

import numpy as np
import pytest
import torch
from geobench_alignment.metrics import RSA, RSAParams
from torch import nn

from geobench.contract.interfaces import Arm, Data, Objective

from .helpers import context


class Lookup(nn.Module):
    """Maps input i (a one-column index) to the fixed feature row ``table[i]``."""

    def __init__(self, table: np.ndarray) -> None:
        super().__init__()
        self.register_buffer("table", torch.tensor(table, dtype=torch.float64))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.table[x[:, 0].long()]


def _metric(X: np.ndarray, Y: np.ndarray, params: RSAParams | None = None) -> dict:
    n = X.shape[0]
    idx = torch.arange(n, dtype=torch.float64)[:, None]
    y = torch.zeros(n, dtype=torch.long)
    data = Data(idx, y, idx, y, idx, y, num_classes=1, batch_size=4)
    ref = Arm(Lookup(X), nn.Identity(), Objective())
    other = Arm(Lookup(Y), nn.Identity(), Objective())
    return RSA(params or RSAParams())(context(data, other, reference=ref))


def _pearson(a: np.ndarray, b: np.ndarray) -> float:
    a, b = a - a.mean(), b - b.mean()
    return float(a @ b / np.sqrt((a @ a) * (b @ b)))


def _ranks(v: np.ndarray) -> np.ndarray:
    r = np.empty(len(v))
    r[np.argsort(v)] = np.arange(len(v))
    return r


def _upper_cosine(Z: np.ndarray) -> np.ndarray:
    zn = Z / np.linalg.norm(Z, axis=1, keepdims=True)
    return (zn @ zn.T)[np.triu_indices(Z.shape[0], 1)]


def _cases():
    g = np.random.default_rng(7)
    X = g.normal(size=(12, 5))
    near = X + 0.3 * g.normal(size=(12, 5))
    unrelated = g.normal(size=(12, 5))
    return [(X, near), (X, unrelated)]


@pytest.mark.parametrize("case", [0, 1])
def test_authors_rsa_matches_numpy(case):
    X, Y = _cases()[case]
    sx, sy = _upper_cosine(X), _upper_cosine(Y)
    assert len(np.unique(sx)) == len(sx) and len(np.unique(sy)) == len(sy)  # no ties
    out = _metric(X, Y)
    pearson, spearman = _pearson(sx, sy), _pearson(_ranks(sx), _ranks(sy))
    assert out["authors_pearson"] == pytest.approx(pearson, abs=1e-10)
    assert out["authors_spearman"] == pytest.approx(spearman, abs=1e-10)
    if case == 1:
        assert abs(pearson) < 0.5 and abs(spearman) < 0.5


def test_default_value_is_distinct_from_the_authors_form():
    """Per-sample feature means make the correlation RDM (row-centred features) and the
    cosine one differ; ``value`` follows the former, ``authors_pearson`` the latter."""
    X, Y = _cases()[0]
    X, Y = X + 2.0, Y - 1.5
    out = _metric(X, Y)
    ours = _pearson(_upper_cosine(X - X.mean(1, keepdims=True)),
                    _upper_cosine(Y - Y.mean(1, keepdims=True)))
    assert out["value"] == pytest.approx(ours, abs=1e-10)
    assert out["authors_pearson"] == pytest.approx(
        _pearson(_upper_cosine(X), _upper_cosine(Y)), abs=1e-10)
    assert abs(out["value"] - out["authors_pearson"]) > 0.05
