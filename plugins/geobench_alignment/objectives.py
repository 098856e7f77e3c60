"""Objectives compared by the alignment suite: CL (NT-Xent), NSCL, SupCon and CE.

The contrastive objectives embed the first two views with ``arm.embed`` (head outputs)
and apply the loss of ``geobench_alignment.losses``; ``ce`` classifies the embedding of
the first view with its own linear layer.
"""

from __future__ import annotations

from typing import ClassVar

import torch.nn.functional as F
from pydantic import Field
from torch import Tensor, nn

from geobench.api import Arm, Batch, BuildContext, Objective, Params
from geobench.params import EmptyParams
from geobench_alignment import losses


class ContrastiveParams(Params):
    tau: float = Field(0.5, gt=0, description="temperature of the cosine similarities")


class NSCLParams(ContrastiveParams):
    positive_in_denominator: bool = Field(
        True,
        description="keep the positive pair in the denominator (authors' released loss); "
        "false: negatives only (the paper's formula)",
    )


class NTXent(Objective):
    """CL / SimCLR: NT-Xent over the 2B views."""

    def __init__(self, params: ContrastiveParams) -> None:
        super().__init__()
        self.tau = params.tau

    def forward(self, arm: Arm, batch: Batch, views: list[Tensor]) -> Tensor:
        return losses.nt_xent(arm.embed(views[0]), arm.embed(views[1]), self.tau)


class NSCL(Objective):
    """Negatives-only supervised contrastive loss (same-class views leave the denominator)."""

    def __init__(self, params: NSCLParams) -> None:
        super().__init__()
        self.tau = params.tau
        self.positive_in_denominator = params.positive_in_denominator

    def forward(self, arm: Arm, batch: Batch, views: list[Tensor]) -> Tensor:
        z1, z2 = arm.embed(views[0]), arm.embed(views[1])
        return losses.nscl(z1, z2, batch.y, self.tau, self.positive_in_denominator)


class SupCon(Objective):
    """Supervised contrastive loss (Khosla et al. 2020): every same-class view is a positive."""

    def __init__(self, params: ContrastiveParams) -> None:
        super().__init__()
        self.tau = params.tau

    def forward(self, arm: Arm, batch: Batch, views: list[Tensor]) -> Tensor:
        return losses.supcon(arm.embed(views[0]), arm.embed(views[1]), batch.y, self.tau)


class CrossEntropy(Objective):
    """Cross-entropy of a linear classifier on the embedding of the first view."""

    n_views: ClassVar[int] = 1

    def __init__(self, embed_dim: int, num_classes: int) -> None:
        super().__init__()
        self.classifier = nn.Linear(embed_dim, num_classes)

    def forward(self, arm: Arm, batch: Batch, views: list[Tensor]) -> Tensor:
        return F.cross_entropy(self.classifier(arm.embed(views[0])), batch.y)


def build_nt_xent(params: ContrastiveParams, ctx: BuildContext) -> NTXent:
    return NTXent(params)


def build_nscl(params: NSCLParams, ctx: BuildContext) -> NSCL:
    return NSCL(params)


def build_supcon(params: ContrastiveParams, ctx: BuildContext) -> SupCon:
    return SupCon(params)


def build_ce(params: EmptyParams, ctx: BuildContext) -> CrossEntropy:
    if ctx.embed_dim is None or ctx.data is None:
        raise ValueError("ce needs the embedding dimension and the dataset's class count")
    return CrossEntropy(ctx.embed_dim, ctx.data.num_classes)
