"""DINO: self-distillation with a centred, sharpened EMA teacher."""

from __future__ import annotations

import torch
import torch.nn.functional as F
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
from geobench_projection.objectives.losses import dino


class DINOParams(Params):
    out_dim: int = Field(256, ge=2, description="number of prototypes K (softmax width)")
    student_temp: float = Field(0.1, gt=0, description="student temperature")
    teacher_temp: float = Field(0.04, gt=0, description="teacher temperature after warm-up")
    warmup_teacher_temp: float = Field(0.04, gt=0, description="teacher temperature at step 0")
    warmup_teacher_temp_steps: int = Field(0, ge=0, description="linear warm-up length")
    center_momentum: float = Field(0.9, ge=0, lt=1, description="EMA momentum of the centre")
    momentum: float = Field(0.996, ge=0, le=1, description="base teacher EMA momentum "
                            "(cosine schedule to 1)")


class Prototypes(nn.Module):
    """DINO's last layer with ``norm_last_layer``: logits = normalise(h) W^T with unit-norm
    rows of W (weight normalisation with g = 1)."""

    def __init__(self, dim: int, k: int) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.empty(k, dim))
        nn.init.trunc_normal_(self.weight, std=0.02)

    def forward(self, h: Tensor) -> Tensor:
        return F.normalize(h, dim=-1) @ F.normalize(self.weight, dim=-1).T


class _Student(nn.Module):
    def __init__(self, head: nn.Module, prototypes: nn.Module) -> None:
        super().__init__()
        self.head, self.prototypes = head, prototypes

    def forward(self, z: Tensor) -> Tensor:
        return self.prototypes(self.head(z))


class DINO(SSLObjective):
    """DINO (Caron et al. 2021) with two global views and no multi-crop.

    Student logits s_v = W normalise(h(f(x_v))); teacher probabilities
    P_v = softmax((s'_v - c) / tau_t) from an EMA teacher (f', h', W') held constant;
    L = mean over v != v' of (1/B) sum_i H(P_v,i, softmax(s_v',i / tau_s)).
    The centre c <- m c + (1 - m) mean(s') after each loss evaluation in training; the
    teacher temperature warms up linearly; the teacher's EMA momentum follows BYOL's
    cosine schedule."""

    n_views = 2

    def __init__(self, params: DINOParams, embed_dim: int) -> None:
        super().__init__()
        self.params = params
        self.prototypes = Prototypes(embed_dim, params.out_dim)
        self.register_buffer("center", torch.zeros(1, params.out_dim))
        self.teacher: nn.ModuleDict | None = None

    def setup(self, arm: Arm) -> None:
        self.teacher = nn.ModuleDict({"backbone": frozen_copy(arm.backbone),
                                      "head": target_head(arm.head),
                                      "prototypes": frozen_copy(self.prototypes)})

    def teacher_temp(self, step: int) -> float:
        p = self.params
        if step >= p.warmup_teacher_temp_steps:
            return p.teacher_temp
        frac = step / p.warmup_teacher_temp_steps
        return p.warmup_teacher_temp + frac * (p.teacher_temp - p.warmup_teacher_temp)

    def _teacher_logits(self, views: list[Tensor]) -> list[Tensor]:
        if self.teacher is None:
            raise RuntimeError("dino: setup(arm) was not called")
        t = self.teacher
        with torch.no_grad():
            return [t["prototypes"](t["head"](t["backbone"](v))) for v in views[:2]]

    def _teacher_probs(self, logits: list[Tensor], step: int) -> list[Tensor]:
        temp = self.teacher_temp(step)
        return [F.softmax((s - self.center) / temp, dim=-1) for s in logits]

    def forward(self, arm: Arm, batch: Batch, views: list[Tensor]) -> Tensor:
        student = [self.prototypes(arm.embed(v)) for v in views[:2]]
        logits = self._teacher_logits(views)
        loss = dino(student, self._teacher_probs(logits, batch.step), self.params.student_temp)
        with torch.no_grad():
            batch_center = torch.cat(logits).mean(dim=0, keepdim=True)
            m = self.params.center_momentum
            self.center.mul_(m).add_(batch_center, alpha=1 - m)
        return loss

    def after_step(self, arm: Arm, step: int, total_steps: int) -> None:
        assert self.teacher is not None
        tau = cosine_momentum(self.params.momentum, step, total_steps)
        ema_update(self.teacher["backbone"], arm.backbone, tau)
        ema_update(self.teacher["head"], arm.head, tau)
        ema_update(self.teacher["prototypes"], self.prototypes, tau)

    def loss_of_h(self, arm: Arm, views: list[Tensor], step: int = 0) -> HeadLoss:
        """Online head = prototypes(normalise(h(.))); the teacher's probabilities (with the
        current centre, temperature of ``step``) are constants."""
        r1, r2 = self.representations(arm, views)
        assert self.teacher is not None
        with training_pass(self.teacher):
            probs = self._teacher_probs(self._teacher_logits(views), step)
        student = _Student(functional_copy(arm.head), functional_copy(self.prototypes))
        return HeadLoss(torch.cat((r1, r2)).detach(), ViewwiseHead(student, 2),
                        self.stacked_loss, tuple(probs))

    def stacked_loss(self, out: Tensor, *probs: Tensor) -> Tensor:
        """DINO's loss of the stacked student logits against constant teacher probabilities."""
        return dino(list(out.chunk(len(probs))), list(probs), self.params.student_temp)


def build_dino(params: DINOParams, ctx: BuildContext) -> DINO:
    """DINO: cross-entropy between a centred, sharpened EMA teacher and the student."""
    if ctx.embed_dim is None:
        raise ValueError("dino needs ctx.embed_dim (build the head first)")
    return DINO(params, ctx.embed_dim)
