"""Small builders shared by the projection tests (tiny backbones built here, not from the
data plugin, so the tests exercise this plugin alone)."""

from __future__ import annotations

import torch
from geobench_projection import heads
from torch import nn

from geobench.api import Arm, BuildContext, Data


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

