"""Small builders shared by the projection tests (tiny backbones built here, not from the
data plugin, so the tests exercise this plugin alone)."""

from __future__ import annotations

import torch
from torch import nn

from geobench.components import heads
from geobench.contract.interfaces import Arm, BuildContext, Data


class TinyBackbone(nn.Sequential):
    """Linear-tanh-linear, ``feature_dim`` = out."""

    def __init__(self, d_in: int = 6, width: int = 8, out: int = 5, norm: bool = False):
        layers = [nn.Linear(d_in, width)]
        if norm:
            layers.append(nn.BatchNorm1d(width))
        layers += [nn.Tanh(), nn.Linear(width, out)]
        super().__init__(*layers)
        self.feature_dim = out


def build_arm(objective_builder, objective_params, head_params=None, d_in=6, feat=5,
             norm=False, seed=0) -> Arm:
    torch.manual_seed(seed)
    backbone = TinyBackbone(d_in, 8, feat, norm)
    ctx = BuildContext(seed=seed, device=torch.device("cpu"), feature_dim=feat)
    head = heads.build_mlp_head(head_params or heads.MLPHeadParams(
        depth=2, hidden=7, out=4, activation="gelu",
        predictor=heads.PredictorParams(hidden=6)), ctx)
    ctx.embed_dim = head.out_dim
    objective = objective_builder(objective_params, ctx)
    arm = Arm(backbone, head, objective)
    objective.setup(arm)
    return arm


def build_data(n: int = 32, d_in: int = 6, classes: int = 3, seed: int = 0) -> Data:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d_in, generator=gen)
    y = torch.arange(n) % classes
    return Data(x, y, x[: n // 2], y[: n // 2], x[:8], y[:8], classes, 8)



def metric_context(arm: Arm, data: Data, views: list[torch.Tensor], step: int = 0,
                   augmentation=None, seed: int = 0, arm_name: str = "main"):
    """A MetricContext on the first ``len(views[0])`` training samples."""
    from geobench.contract.interfaces import Batch, MetricContext

    n = len(views[0])
    index = torch.arange(n)
    batch = Batch(data.train_x[:n], data.train_y[:n], index, step)
    return MetricContext(step=step, total_steps=100, arm_name=arm_name, arm=arm, data=data,
                         batch=batch, views=views, augmentation=augmentation,
                         generator=torch.Generator().manual_seed(seed), spec={}, seed=seed)


class LinearOrbit:
    """An orbit structure with the identity embedding: x = u = (a, s_1, ..., s_m), the
    torus rotating each pair s_j (the protocol of ``orbit_manifold``'s structure)."""

    def __init__(self, latent: torch.Tensor, class_dim: int, pairs: int,
                 max_angle: float = 3.14159) -> None:
        self.latent = {"train": latent}
        self.class_dim, self.pairs, self.max_angle = class_dim, pairs, max_angle

    def map(self, u: torch.Tensor) -> torch.Tensor:
        return u

    def act(self, u: torch.Tensor, theta: torch.Tensor) -> torch.Tensor:
        a, s = u[..., : self.class_dim], u[..., self.class_dim:].unflatten(-1, (self.pairs, 2))
        c, n = torch.cos(theta), torch.sin(theta)
        rot = torch.stack((c * s[..., 0] - n * s[..., 1], n * s[..., 0] + c * s[..., 1]), -1)
        return torch.cat((a, rot.flatten(-2)), -1)

    def generator_field(self, u: torch.Tensor, j: int) -> torch.Tensor:
        v = torch.zeros_like(u)
        k = self.class_dim + 2 * j
        v[..., k], v[..., k + 1] = -u[..., k + 1], u[..., k]
        return v

    def orbit(self, split: str, index: torch.Tensor, k: int, generator) -> torch.Tensor:
        u = self.latent[split][index]
        theta = (2 * torch.rand(len(u), k, self.pairs, generator=generator) - 1) * self.max_angle
        return self.act(u[:, None, :].expand(-1, k, -1), theta)


def orbit_data(n: int = 40, class_dim: int = 2, pairs: int = 2, classes: int = 4,
               seed: int = 0) -> Data:
    """Classes separated in the first ``class_dim`` coordinates, unit circles after them."""
    gen = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % classes
    centres = 3 * torch.randn(classes, class_dim, generator=gen)
    a = centres[y] + 0.3 * torch.randn(n, class_dim, generator=gen)
    phase = 6.283 * torch.rand(n, pairs, generator=gen)
    s = torch.stack((phase.cos(), phase.sin()), -1).flatten(1)
    u = torch.cat((a, s), 1)
    data = Data(u, y, u[: n // 2], y[: n // 2], u[:8], y[:8], classes, 8)
    data.extras["orbit"] = LinearOrbit(u, class_dim, pairs)
    return data
