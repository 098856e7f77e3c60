"""Read-out accuracies of frozen features: linear probe, k-NN and nearest class centre."""

from __future__ import annotations

import torch
from torch import Tensor


def _standardise(train: Tensor, test: Tensor) -> tuple[Tensor, Tensor]:
    mean, std = train.mean(0), train.std(0).clamp_min(1e-8)
    return (train - mean) / std, (test - mean) / std


def linear_probe_accuracy(train_x: Tensor, train_y: Tensor, test_x: Tensor, test_y: Tensor,
                          l2: float = 1e-4, max_iter: int = 200) -> float:
    """Test accuracy of multinomial logistic regression fitted on standardised features.

    Minimises mean cross-entropy + ``l2``·||W||² (bias unpenalised) by full-batch L-BFGS in
    float64 from a zero start, so the result is deterministic.
    """
    xtr, xte = _standardise(train_x.double(), test_x.double())
    classes = int(max(train_y.max(), test_y.max())) + 1
    weight = torch.zeros(xtr.shape[1], classes, dtype=torch.float64, requires_grad=True)
    bias = torch.zeros(classes, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([weight, bias], max_iter=max_iter, line_search_fn="strong_wolfe",
                            tolerance_grad=1e-9, tolerance_change=1e-12)

    def closure() -> Tensor:
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(xtr @ weight + bias, train_y)
        loss = loss + l2 * weight.pow(2).sum()
        loss.backward()
        return loss

    with torch.enable_grad():
        opt.step(closure)
    with torch.no_grad():
        pred = (xte @ weight + bias).argmax(1)
    return float((pred == test_y).double().mean())


def knn_accuracy(train_x: Tensor, train_y: Tensor, test_x: Tensor, test_y: Tensor,
                 k: int = 20) -> float:
    """Majority vote of the ``k`` training samples of highest cosine similarity (ties go to
    the smallest label)."""
    a = torch.nn.functional.normalize(train_x.double(), dim=1)
    b = torch.nn.functional.normalize(test_x.double(), dim=1)
    k = min(k, a.shape[0])
    idx = (b @ a.T).topk(k, dim=1).indices
    votes = torch.zeros(b.shape[0], int(train_y.max()) + 1, dtype=torch.float64)
    votes.scatter_add_(1, train_y[idx], torch.ones_like(idx, dtype=torch.float64))
    return float((votes.argmax(1) == test_y).double().mean())


def nccc_accuracy(train_x: Tensor, train_y: Tensor, test_x: Tensor, test_y: Tensor) -> float:
    """Nearest class-centre classifier: each test point takes the label of the closest
    (Euclidean) class mean of the training features."""
    labels = train_y.unique()
    centres = torch.stack([train_x[train_y == c].double().mean(0) for c in labels])
    pred = labels[torch.cdist(test_x.double(), centres).argmin(1)]
    return float((pred == test_y).double().mean())
