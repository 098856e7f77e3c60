"""The generic optimizers (kind ``optimizers``): sgd, adam, adamw and lars.

Every factory optimizes the trainable parameters of ``ctx.model`` (the whole arm) and takes
``lr``; the engine may rescale it in the param groups.
"""

from __future__ import annotations

import torch
from pydantic import Field
from torch import Tensor

from geobench.components.lars import LARS
from geobench.contract.interfaces import BuildContext, Params, trainable


class SGDParams(Params):
    lr: float = Field(..., gt=0, description="learning rate")
    momentum: float = Field(0.0, ge=0, description="momentum factor")
    nesterov: bool = Field(False, description="Nesterov momentum (needs momentum > 0)")
    weight_decay: float = Field(0.0, ge=0, description="L2 penalty added to the gradient")


class AdamParams(Params):
    lr: float = Field(..., gt=0, description="learning rate")
    betas: tuple[float, float] = Field((0.9, 0.999), description="moment decay rates")
    eps: float = Field(1e-8, gt=0, description="denominator term")
    weight_decay: float = Field(0.0, ge=0, description="L2 penalty added to the gradient")


class AdamWParams(AdamParams):
    weight_decay: float = Field(0.01, ge=0, description="decoupled weight decay")


class LARSParams(Params):
    lr: float = Field(..., gt=0, description="learning rate")
    momentum: float = Field(0.9, ge=0, description="momentum factor")
    weight_decay: float = Field(1e-6, ge=0, description="weight decay (weights only)")
    eta: float = Field(0.001, gt=0, description="trust coefficient")
    exclude_bias_and_norm: bool = Field(
        True, description="no trust ratio or weight decay for parameters with ndim <= 1"
    )


def _params(ctx: BuildContext) -> list[Tensor]:
    if ctx.model is None:
        raise ValueError("an optimizer needs ctx.model")
    return [p for _, p in trainable(ctx.model)]


def build_sgd(params: SGDParams, ctx: BuildContext) -> torch.optim.SGD:
    """torch.optim.SGD."""
    return torch.optim.SGD(_params(ctx), **params.model_dump())


def build_adam(params: AdamParams, ctx: BuildContext) -> torch.optim.Adam:
    """torch.optim.Adam."""
    return torch.optim.Adam(_params(ctx), **params.model_dump())


def build_adamw(params: AdamWParams, ctx: BuildContext) -> torch.optim.AdamW:
    """torch.optim.AdamW (decoupled weight decay)."""
    return torch.optim.AdamW(_params(ctx), **params.model_dump())


def build_lars(params: LARSParams, ctx: BuildContext) -> LARS:
    """LARS with momentum, weight decay and trust coefficient."""
    return LARS(_params(ctx), **params.model_dump())
