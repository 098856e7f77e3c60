"""What the SSL objectives share: the ``HeadLoss`` view of a batch, EMA targets, and a
side-effect-free training-mode forward pass."""

from __future__ import annotations

import abc
import copy
import math
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from geobench.api import Arm, Objective


@dataclass
class HeadLoss:
    """The loss of one batch as a function of the online head outputs.

    ``z``: ``(V*B, d)`` backbone representations of the V online views, stacked view after
    view (detached).  ``head``: maps ``(V*B, d)`` to ``(V*B, m)`` by applying the online
    head (projector, then predictor / prototypes where the objective has them) to each
    view's block separately, with batch statistics and no side effects.
    ``loss(out) = fn(out, *constants)`` maps the ``(V*B, m)`` head outputs to the scalar
    loss; ``constants`` are the stop-gradient targets (detached).  ``loss(head(z))``
    equals the objective's training loss on the same views.
    """

    z: Tensor
    head: nn.Module
    fn: Callable[..., Tensor]
    constants: tuple[Tensor, ...] = ()

    def loss(self, out: Tensor) -> Tensor:
        return self.fn(out, *self.constants)

    def to(self, dtype: torch.dtype | None = None,
           device: torch.device | str | None = None) -> HeadLoss:
        """A copy with z, the head and the constants moved / cast (e.g. to float64)."""
        head = copy.deepcopy(self.head).to(device=device, dtype=dtype)
        return HeadLoss(self.z.to(device=device, dtype=dtype), head, self.fn,
                        tuple(c.to(device=device, dtype=dtype) for c in self.constants))


class ViewwiseHead(nn.Module):
    """Applies ``fn`` to each of ``n_views`` equal row blocks and stacks the results, so
    batch-statistic layers see one view at a time, as in training."""

    def __init__(self, fn: nn.Module, n_views: int) -> None:
        super().__init__()
        self.fn = fn
        self.n_views = n_views

    def forward(self, z: Tensor) -> Tensor:
        return torch.cat([self.fn(block) for block in z.chunk(self.n_views)])


def functional_copy(module: nn.Module) -> nn.Module:
    """A frozen copy in train mode whose batch-norm layers keep no running statistics:
    a pure function of its input (batch statistics, nothing written), safe under
    ``torch.func`` transforms."""
    out = copy.deepcopy(module)
    for sub in out.modules():
        if isinstance(sub, nn.modules.batchnorm._BatchNorm):
            sub.track_running_stats = False
            sub.running_mean = None
            sub.running_var = None
            sub.num_batches_tracked = None
    out.requires_grad_(False)
    return out.train()


@contextmanager
def training_pass(*modules: nn.Module) -> Iterator[None]:
    """Run ``modules`` in train mode (batch statistics) under ``no_grad`` and restore their
    buffers and modes afterwards, so a measurement never moves running statistics."""
    saved = [(m, [b.clone() for b in m.buffers()], [(s, s.training) for s in m.modules()])
             for m in modules]
    try:
        for m in modules:
            m.train()
        with torch.no_grad():
            yield
    finally:
        for m, buffers, modes in saved:
            for b, old in zip(m.buffers(), buffers):
                b.copy_(old)
            for s, was in modes:
                s.train(was)


def frozen_copy(module: nn.Module) -> nn.Module:
    """A copy with ``requires_grad=False`` everywhere (an EMA target's initial state)."""
    out = copy.deepcopy(module)
    out.requires_grad_(False)
    return out


@torch.no_grad()
def ema_update(target: nn.Module, online: nn.Module, tau: float) -> None:
    """target <- tau * target + (1 - tau) * online for the target's parameters (matched by
    name: the online module may have more, e.g. a predictor); buffers are copied."""
    params = dict(online.named_parameters())
    for name, t in target.named_parameters():
        t.mul_(tau).add_(params[name].detach(), alpha=1.0 - tau)
    buffers = dict(online.named_buffers())
    for name, t in target.named_buffers():
        t.copy_(buffers[name])


def cosine_momentum(base: float, step: int, total: int) -> float:
    """BYOL's schedule tau_k = 1 - (1 - base) (cos(pi k / K) + 1) / 2, k = steps done."""
    k = min(step + 1, total)
    return 1.0 - (1.0 - base) * (math.cos(math.pi * k / max(total, 1)) + 1.0) / 2.0


def target_head(head: nn.Module) -> nn.Module:
    """A frozen copy of the head without its predictor (the target branch projects only)."""
    out = frozen_copy(head)
    if getattr(out, "predictor", None) is not None:
        out.predictor = None
    return out


class SSLObjective(Objective, abc.ABC):
    """An objective whose loss can be written as a function of the online head outputs."""

    @abc.abstractmethod
    def loss_of_h(self, arm: Arm, views: list[Tensor], step: int = 0) -> HeadLoss:
        """The batch's loss as a function of the online head outputs (see ``HeadLoss``);
        ``step`` is the training step (for schedules inside the loss, e.g. DINO's)."""

    def representations(self, arm: Arm, views: list[Tensor]) -> list[Tensor]:
        """Backbone representations of the online views, as the training pass sees them."""
        with training_pass(arm.backbone):
            return [arm.backbone(v) for v in views[: self.n_views]]
