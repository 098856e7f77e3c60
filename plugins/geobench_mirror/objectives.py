"""Exponential-tailed classification losses on the network output f(x) itself.

The classifier is the arm's output ``arm.embed(x)`` (backbone then head; use the
``identity`` head so that f stays homogeneous).  The inputs are ``batch.x`` without
augmentation (``n_views = 0``).

Binary (output of shape (N, 1)): y = 2·label − 1 ∈ {−1, +1}.
Multiclass (output (N, C), C ≥ 2): labels in 0..C−1.
"""

from __future__ import annotations

import abc
from typing import ClassVar

import torch
import torch.nn.functional as F
from torch import Tensor

from geobench.api import Arm, Batch, Objective


def signed_margins(out: Tensor, labels: Tensor) -> Tensor:
    """Per-sample margins: y·f(x) for an (N, 1) output, f_y − max_{j≠y} f_j for (N, C)."""
    if out.ndim != 2:
        raise ValueError(f"expected an (N, C) output, got shape {tuple(out.shape)}")
    if out.shape[1] == 1:
        return (2.0 * labels.to(out.dtype) - 1.0) * out[:, 0]
    own = out.gather(1, labels.view(-1, 1))[:, 0]
    others = out.scatter(1, labels.view(-1, 1), float("-inf"))
    return own - others.max(dim=1).values


def predictions(out: Tensor) -> Tensor:
    """Predicted labels: 1[f > 0] for an (N, 1) output, argmax for (N, C)."""
    if out.shape[1] == 1:
        return (out[:, 0] > 0).long()
    return out.argmax(dim=1)


def logistic_loss(out: Tensor, labels: Tensor) -> Tensor:
    """Binary: mean softplus(−y f) = mean log(1 + e^{−y f}); multiclass: cross-entropy."""
    if out.shape[1] == 1:
        y = 2.0 * labels.to(out.dtype) - 1.0
        return F.softplus(-y * out[:, 0]).mean()
    return F.cross_entropy(out, labels)


def exponential_loss(out: Tensor, labels: Tensor) -> Tensor:
    """Binary: mean e^{−y f}; multiclass: mean_i Σ_{j≠y_i} e^{−(f_{y_i} − f_j)}."""
    if out.shape[1] == 1:
        y = 2.0 * labels.to(out.dtype) - 1.0
        return torch.exp(-y * out[:, 0]).mean()
    own = out.gather(1, labels.view(-1, 1))
    terms = torch.exp(out - own).scatter(1, labels.view(-1, 1), 0.0)
    return terms.sum(dim=1).mean()


class _OutputLoss(Objective, abc.ABC):
    n_views: ClassVar[int] = 0

    @abc.abstractmethod
    def loss(self, out: Tensor, labels: Tensor) -> Tensor:
        """The loss of the network outputs ``out`` against ``labels``."""

    def forward(self, arm: Arm, batch: Batch, views: list[Tensor]) -> Tensor:
        return self.loss(arm.embed(batch.x), batch.y)


class Logistic(_OutputLoss):
    """Logistic loss of the network output (softmax cross-entropy when multiclass)."""

    def loss(self, out: Tensor, labels: Tensor) -> Tensor:
        return logistic_loss(out, labels)


class Exponential(_OutputLoss):
    """Exponential loss of the network output (pairwise exponential when multiclass)."""

    def loss(self, out: Tensor, labels: Tensor) -> Tensor:
        return exponential_loss(out, labels)
