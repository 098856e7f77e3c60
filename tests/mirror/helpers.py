"""Small homogeneous arms, separable data and metric contexts for the mirror tests."""

from __future__ import annotations

from typing import Any

import torch
from geobench_mirror import maps
from geobench_mirror.objectives import Logistic
from torch import Tensor, nn

from geobench.contract.interfaces import Arm, Batch, Data, MetricContext
from geobench.contract.manager import registry


class BiasFreeMLP(nn.Module):
    """relu MLP without biases: f(x; cθ) = c^depth f(x; θ)."""

    def __init__(self, dims: list[int]) -> None:
        super().__init__()
        self.layers = nn.ModuleList(
            nn.Linear(a, b, bias=False) for a, b in zip(dims[:-1], dims[1:], strict=True)
        )
        self.homogeneity_degree = len(self.layers)
        self.feature_dim = dims[-1]

    def forward(self, x: Tensor) -> Tensor:
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i < len(self.layers) - 1:
                x = torch.relu(x)
        return x


TINY_BASE = """\
base:
  data: {name: student_teacher, dim: 6, n_train: 48, n_test: 64, batch_size: 48,
         reference_size: 8, margin: 0.2}
  backbone: {name: mlp, depth: 2, width: 12, out_dim: 1, bias: false}
  head: {name: identity}
  objective: {name: exponential}
  optimizer: {name: mirror_descent, lr: 0.2}
  train: {steps: 40, device: cpu}
"""
"""The base of the tiny mirror suites: bias-free 2-layer ReLU students, exponential loss,
mirror descent, 40 full-batch steps on the CPU."""


def make_arm(dims: list[int], seed: int = 0, dtype: torch.dtype = torch.float64) -> Arm:
    torch.manual_seed(seed)
    return Arm(BiasFreeMLP(dims), nn.Identity(), Logistic()).to(dtype)


def teacher_data(n: int = 64, dim: int = 4, seed: int = 0, margin: float = 0.1,
                 dtype: torch.dtype = torch.float64) -> Data:
    """x ~ N(0, I), label 1[x·w* > 0] with |x·w*| ≥ margin (separable)."""
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(dim, generator=g, dtype=dtype)

    def draw(m: int) -> tuple[Tensor, Tensor]:
        x = torch.randn(20 * m, dim, generator=g, dtype=dtype)
        s = x @ w
        x = x[s.abs() >= margin][:m]
        return x, (x @ w > 0).long()

    (xtr, ytr), (xte, yte) = draw(n), draw(n)
    return Data(xtr, ytr, xte, yte, xte[:8], yte[:8], 2, n)


def context(arm: Arm, data: Data, optimizer: dict[str, Any], step: int = 0,
            history: dict | None = None) -> MetricContext:
    index = torch.arange(len(data.train_x))
    batch = Batch(data.train_x, data.train_y, index, step)
    return MetricContext(
        step=step, total_steps=100, arm_name="main", arm=arm, data=data, batch=batch,
        views=[], augmentation=lambda x, i, g, view=0: x, generator=torch.Generator(),
        spec={"optimizer": optimizer}, history=history if history is not None else {},
        registry=registry(),
    )


def record(history: dict, step: int, values: dict[str, float]) -> None:
    """Append a metric's values to ``history`` as the engine does."""
    for key, value in values.items():
        history.setdefault(key, []).append((step, value))


class Cubic(maps.MirrorMap):
    """R = |θ|³/3 + θ²/2: a third-party map with only the four abstract methods."""

    name = "cubic_plus"

    def R(self, t: Tensor) -> Tensor:
        return t.abs() ** 3 / 3 + t**2 / 2

    def grad_R(self, t: Tensor) -> Tensor:
        return t.sign() * t**2 + t

    def grad_Q(self, u: Tensor) -> Tensor:
        return u.sign() * (torch.sqrt(1 + 4 * u.abs()) - 1) / 2

    def Q(self, u: Tensor) -> Tensor:
        t = self.grad_Q(u)
        return t * u - self.R(t)
