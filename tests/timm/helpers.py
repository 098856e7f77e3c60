"""Building backbones through the registry, and an independent homogeneity check."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from geobench.contract.interfaces import Data
from tests.data.helpers import ctx, registry


def backbone(spec: dict[str, Any], dataset: Data) -> nn.Module:
    return registry().build("backbones", spec, ctx(0, dataset))


def scaled_output(model: nn.Module, x: torch.Tensor, c: float) -> torch.Tensor:
    """f(x; c * theta): every parameter multiplied by c, evaluated with functional_call."""
    params = {name: c * p.detach() for name, p in model.named_parameters()}
    return torch.func.functional_call(model, params, (x,))
