"""Shared pieces of the projection metrics: feature extraction and fixed sample sets."""

from __future__ import annotations

import math

import torch
from torch import Tensor

from geobench.api import Arm


@torch.no_grad()
def features(arm: Arm, x: Tensor, chunk: int = 512) -> tuple[Tensor, Tensor]:
    """Backbone representations f(x) and head outputs h(f(x)), flattened, in chunks, with
    the arm in whatever mode it is in (the engine evaluates metrics in eval mode)."""
    zs, hs = [], []
    for i in range(0, len(x), chunk):
        z = arm.backbone(x[i:i + chunk]).flatten(1)
        zs.append(z)
        hs.append(arm.head(z).flatten(1))
    return torch.cat(zs), torch.cat(hs)


def fixed_indices(n_total: int, n: int, seed: int = 0) -> Tensor:
    """``n`` distinct indices of ``range(n_total)``, the same at every call (a fixed
    permutation's prefix), so a metric's sample set does not change during training."""
    gen = torch.Generator().manual_seed(seed)
    return torch.randperm(n_total, generator=gen)[: min(n, n_total)]


def finite_or_nan(value: float) -> float:
    """Metrics store finite floats or NaN: infinities (e.g. a condition number with a zero
    end) become NaN."""
    value = float(value)
    return value if math.isfinite(value) else math.nan
