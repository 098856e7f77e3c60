"""Small arms, data and metric contexts for the alignment tests."""

from __future__ import annotations

import torch
from torch import nn

from geobench.contract.interfaces import Arm, Batch, Data, MetricContext, Objective


class Linear(nn.Linear):
    """A linear backbone / head with the attributes the engine reads."""

    def __init__(self, d_in: int, d_out: int) -> None:
        super().__init__(d_in, d_out)
        self.feature_dim = self.out_dim = d_out


def blobs(n: int = 96, dim: int = 6, classes: int = 3, batch_size: int = 16,
          seed: int = 0) -> Data:
    g = torch.Generator().manual_seed(seed)
    means = 3.0 * torch.randn(classes, dim, generator=g)

    def draw(m: int) -> tuple[torch.Tensor, torch.Tensor]:
        y = torch.arange(m) % classes
        return means[y] + torch.randn(m, dim, generator=g), y

    (xtr, ytr), (xte, yte), (xref, yref) = draw(n), draw(n // 2), draw(40)
    return Data(xtr, ytr, xte, yte, xref, yref, classes, batch_size)


def arm(objective: Objective, dim: int = 6, feat: int = 5, emb: int = 4, seed: int = 0) -> Arm:
    torch.manual_seed(seed)
    return Arm(Linear(dim, feat), Linear(feat, emb), objective)


def context(data: Data, the_arm: Arm, reference: Arm | None = None, step: int = 0,
            total: int = 10, batch: Batch | None = None, lrs: list[float] | None = None
            ) -> MetricContext:
    if batch is None:
        index = torch.arange(data.batch_size)
        batch = Batch(data.train_x[index], data.train_y[index], index, step)
    return MetricContext(
        step=step, total_steps=total, arm_name="b", arm=the_arm, data=data, batch=batch,
        views=[batch.x, batch.x], augmentation=lambda x, i, g, view=0: x,
        generator=torch.Generator(), spec={}, reference_name="a" if reference else None,
        reference=reference, lrs=list(lrs or []),
    )
