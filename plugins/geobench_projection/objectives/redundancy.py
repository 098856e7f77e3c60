"""Symmetric objectives without stop-gradient: VICReg and Barlow Twins."""

from __future__ import annotations

import abc

import torch
from pydantic import Field
from torch import Tensor

from geobench.api import Arm, Batch, BuildContext, Params
from geobench_projection.objectives.common import (
    HeadLoss,
    SSLObjective,
    ViewwiseHead,
    functional_copy,
)
from geobench_projection.objectives.losses import barlow_twins, vicreg


class VICRegParams(Params):
    sim_coeff: float = Field(25.0, ge=0, description="lambda: invariance (MSE) weight")
    std_coeff: float = Field(25.0, ge=0, description="mu: variance hinge weight")
    cov_coeff: float = Field(1.0, ge=0, description="nu: covariance penalty weight")
    gamma: float = Field(1.0, gt=0, description="target standard deviation of the hinge")
    eps: float = Field(1e-4, gt=0, description="added to the variance under the square root")


class BarlowTwinsParams(Params):
    lambd: float = Field(0.0051, ge=0, description="weight of the off-diagonal terms")
    eps: float = Field(1e-5, gt=0, description="added to the variance when standardising")


class _Symmetric(SSLObjective):
    """Both views go through the same backbone and head; the loss sees h(z1), h(z2)."""

    n_views = 2

    @abc.abstractmethod
    def pair_loss(self, h1: Tensor, h2: Tensor) -> Tensor:
        """The loss of the two views' head outputs."""

    def forward(self, arm: Arm, batch: Batch, views: list[Tensor]) -> Tensor:
        h1, h2 = (arm.embed(v) for v in views[:2])
        return self.pair_loss(h1, h2)

    def loss_of_h(self, arm: Arm, views: list[Tensor], step: int = 0) -> HeadLoss:
        r1, r2 = self.representations(arm, views)
        head = ViewwiseHead(functional_copy(arm.head), 2)
        return HeadLoss(torch.cat((r1, r2)).detach(), head, self.stacked_loss)

    def stacked_loss(self, out: Tensor) -> Tensor:
        """The loss of the stacked embeddings (h1; h2)."""
        return self.pair_loss(*out.chunk(2))


class VICReg(_Symmetric):
    """VICReg (Bardes et al. 2022); formula in ``losses.vicreg``."""

    def __init__(self, params: VICRegParams) -> None:
        super().__init__()
        self.params = params

    def pair_loss(self, h1: Tensor, h2: Tensor) -> Tensor:
        p = self.params
        return vicreg(h1, h2, p.sim_coeff, p.std_coeff, p.cov_coeff, p.gamma, p.eps)


class BarlowTwins(_Symmetric):
    """Barlow Twins (Zbontar et al. 2021); formula in ``losses.barlow_twins``."""

    def __init__(self, params: BarlowTwinsParams) -> None:
        super().__init__()
        self.params = params

    def pair_loss(self, h1: Tensor, h2: Tensor) -> Tensor:
        return barlow_twins(h1, h2, self.params.lambd, self.params.eps)


def build_vicreg(params: VICRegParams, ctx: BuildContext) -> VICReg:
    """VICReg: invariance + variance hinge + covariance penalty."""
    return VICReg(params)


def build_barlow_twins(params: BarlowTwinsParams, ctx: BuildContext) -> BarlowTwins:
    """Barlow Twins: cross-correlation of standardised embeddings pushed to the identity."""
    return BarlowTwins(params)
