"""Stop-gradient objectives with a predictor: SimSiam and BYOL."""

from __future__ import annotations

from typing import Literal

import torch
from pydantic import Field
from torch import Tensor, nn

from geobench.api import Arm, Batch, BuildContext, Params
from geobench_projection.objectives.common import (
    HeadLoss,
    SSLObjective,
    ViewwiseHead,
    cosine_momentum,
    ema_update,
    frozen_copy,
    functional_copy,
    target_head,
    training_pass,
)
from geobench_projection.objectives.losses import byol_regression, negative_cosine


class PredictorOptions(Params):
    require_predictor: bool = Field(
        True, description="fail unless the head has a predictor (False: identity predictor, "
        "the collapsing ablation)")


class SimSiamParams(PredictorOptions):
    pass


class BYOLParams(PredictorOptions):
    momentum: float = Field(0.996, ge=0, le=1, description="base EMA momentum tau_base")
    schedule: Literal["cosine", "constant"] = Field(
        "cosine", description="cosine: tau_k = 1 - (1 - tau_base)(cos(pi k/K) + 1)/2")


def _predictor(arm: Arm, required: bool, name: str) -> nn.Module:
    pred = getattr(arm.head, "predictor", None)
    if pred is None:
        if required:
            raise ValueError(f"{name} needs a head with a predictor (head: {{predictor: "
                             "{depth: 2}}}), or require_predictor: false")
        return nn.Identity()
    return pred


class _Online(nn.Module):
    """predictor(head(z))."""

    def __init__(self, head: nn.Module, predictor: nn.Module) -> None:
        super().__init__()
        self.head, self.predictor = head, predictor

    def forward(self, z: Tensor) -> Tensor:
        return self.predictor(self.head(z))


def _online_head(arm: Arm, predictor: nn.Module) -> ViewwiseHead:
    head = functional_copy(arm.head)
    return ViewwiseHead(_Online(head, functional_copy(predictor)), 2)


def simsiam_of_h(out: Tensor, t1: Tensor, t2: Tensor) -> Tensor:
    """SimSiam's loss of the stacked predictions (p1; p2) against constant targets."""
    p1, p2 = out.chunk(2)
    return (negative_cosine(p1, t2) + negative_cosine(p2, t1)) / 2


def byol_of_h(out: Tensor, t1: Tensor, t2: Tensor) -> Tensor:
    """BYOL's loss of the stacked predictions (p1; p2) against constant targets."""
    p1, p2 = out.chunk(2)
    return byol_regression(p1, t2) + byol_regression(p2, t1)


class SimSiam(SSLObjective):
    """SimSiam (Chen & He 2021): L = D(p1, sg(z2)) / 2 + D(p2, sg(z1)) / 2 with
    z_v = h(f(x_v)), p_v = pred(z_v) and D the negative cosine similarity."""

    n_views = 2

    def __init__(self, params: SimSiamParams) -> None:
        super().__init__()
        self.params = params

    def setup(self, arm: Arm) -> None:
        _predictor(arm, self.params.require_predictor, "simsiam")

    def forward(self, arm: Arm, batch: Batch, views: list[Tensor]) -> Tensor:
        pred = _predictor(arm, self.params.require_predictor, "simsiam")
        z1, z2 = (arm.head(arm.backbone(v)) for v in views[:2])
        return (negative_cosine(pred(z1), z2.detach()) + negative_cosine(pred(z2), z1.detach())) / 2

    def loss_of_h(self, arm: Arm, views: list[Tensor], step: int = 0) -> HeadLoss:
        pred = _predictor(arm, self.params.require_predictor, "simsiam")
        r1, r2 = self.representations(arm, views)
        with training_pass(arm.head):
            t1, t2 = arm.head(r1), arm.head(r2)
        return HeadLoss(torch.cat((r1, r2)).detach(), _online_head(arm, pred), simsiam_of_h,
                        (t1.detach(), t2.detach()))


class BYOL(SSLObjective):
    """BYOL (Grill et al. 2020): online p_v = pred(h(f(x_v))), target t_v = h'(f'(x_v)) from
    an EMA copy (f', h') of backbone and projector;
    L = mean(2 - 2 cos(p1, sg t2)) + mean(2 - 2 cos(p2, sg t1)).
    After each step (f', h') <- tau (f', h') + (1 - tau) (f, h), tau on BYOL's cosine
    schedule from ``momentum`` to 1 (or constant)."""

    n_views = 2

    def __init__(self, params: BYOLParams) -> None:
        super().__init__()
        self.params = params
        self.target: nn.ModuleDict | None = None

    def setup(self, arm: Arm) -> None:
        _predictor(arm, self.params.require_predictor, "byol")
        self.target = nn.ModuleDict(
            {"backbone": frozen_copy(arm.backbone), "head": target_head(arm.head)})

    def _targets(self, views: list[Tensor]) -> list[Tensor]:
        if self.target is None:
            raise RuntimeError("byol: setup(arm) was not called")
        return [self.target["head"](self.target["backbone"](v)).detach() for v in views[:2]]

    def forward(self, arm: Arm, batch: Batch, views: list[Tensor]) -> Tensor:
        pred = _predictor(arm, self.params.require_predictor, "byol")
        p1, p2 = (pred(arm.head(arm.backbone(v))) for v in views[:2])
        t1, t2 = self._targets(views)
        return byol_regression(p1, t2) + byol_regression(p2, t1)

    def after_step(self, arm: Arm, step: int, total_steps: int) -> None:
        assert self.target is not None
        tau = self.params.momentum
        if self.params.schedule == "cosine":
            tau = cosine_momentum(tau, step, total_steps)
        ema_update(self.target["backbone"], arm.backbone, tau)
        ema_update(self.target["head"], arm.head, tau)

    def loss_of_h(self, arm: Arm, views: list[Tensor], step: int = 0) -> HeadLoss:
        pred = _predictor(arm, self.params.require_predictor, "byol")
        r1, r2 = self.representations(arm, views)
        assert self.target is not None
        with training_pass(self.target):
            t1, t2 = self._targets(views)
        return HeadLoss(torch.cat((r1, r2)).detach(), _online_head(arm, pred), byol_of_h,
                        (t1, t2))


def build_simsiam(params: SimSiamParams, ctx: BuildContext) -> SimSiam:
    """SimSiam: negative cosine between predictor output and stop-gradient projection."""
    return SimSiam(params)


def build_byol(params: BYOLParams, ctx: BuildContext) -> BYOL:
    """BYOL: predictor regression onto an EMA target network's projection."""
    return BYOL(params)
