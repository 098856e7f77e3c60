"""Optimizer factories (kind ``optimizers``): sgd, adam, lars, mirror_descent.

Every factory optimizes the trainable parameters of ``ctx.model`` (the whole arm) and
takes ``lr``; the engine may rescale it in the param groups.
"""

from __future__ import annotations

import torch
from pydantic import Field

from geobench.api import BuildContext, Params
from geobench_mirror.assign import MirrorDescentParams, assign_maps, trainable
from geobench_mirror.lars import LARS
from geobench_mirror.mirror_descent import MirrorDescent


class SGDParams(Params):
    lr: float = Field(..., ge=0, description="learning rate")
    momentum: float = Field(0.0, ge=0, description="momentum factor")
    nesterov: bool = Field(False, description="Nesterov momentum (needs momentum > 0)")
    weight_decay: float = Field(0.0, ge=0, description="L2 penalty added to the gradient")


class AdamParams(Params):
    lr: float = Field(..., ge=0, description="learning rate")
    betas: tuple[float, float] = Field((0.9, 0.999), description="moment decay rates")
    eps: float = Field(1e-8, gt=0, description="denominator term")
    weight_decay: float = Field(0.0, ge=0, description="L2 penalty added to the gradient")


class LARSParams(Params):
    lr: float = Field(..., ge=0, description="learning rate")
    momentum: float = Field(0.9, ge=0, description="momentum factor")
    weight_decay: float = Field(1e-6, ge=0, description="weight decay (weights only)")
    eta: float = Field(0.001, gt=0, description="trust coefficient")
    exclude_bias_and_norm: bool = Field(
        True, description="no trust ratio or weight decay for parameters with ndim <= 1"
    )


def _params(ctx: BuildContext) -> list[torch.Tensor]:
    if ctx.model is None:
        raise ValueError("an optimizer needs ctx.model")
    return [p for _, p in trainable(ctx.model)]


def build_sgd(params: SGDParams, ctx: BuildContext) -> torch.optim.SGD:
    """torch.optim.SGD."""
    return torch.optim.SGD(_params(ctx), **params.model_dump())


def build_adam(params: AdamParams, ctx: BuildContext) -> torch.optim.Adam:
    """torch.optim.Adam."""
    return torch.optim.Adam(_params(ctx), **params.model_dump())


def build_lars(params: LARSParams, ctx: BuildContext) -> LARS:
    """LARS with momentum, weight decay and trust coefficient."""
    return LARS(_params(ctx), **params.model_dump())


def build_mirror_descent(params: MirrorDescentParams, ctx: BuildContext) -> MirrorDescent:
    """Mirror descent; one param group per map (per pattern with ``maps``)."""
    if ctx.model is None:
        raise ValueError("an optimizer needs ctx.model")
    groups: dict[int, dict] = {}
    for _, p, mirror_map in assign_maps(trainable(ctx.model), params, ctx):
        group = groups.setdefault(id(mirror_map), {"params": [], "mirror_map": mirror_map})
        group["params"].append(p)
    return MirrorDescent(list(groups.values()), lr=params.lr, weight_decay=params.weight_decay)
