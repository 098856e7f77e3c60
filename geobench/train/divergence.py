"""The divergence guard: when a cell's training has blown up (docs/reliability.md)."""

from __future__ import annotations

import math

import torch
from torch import nn


class DivergenceGuard:
    """The rule that ends an arm as ``diverged``: at the first step where its loss is not
    finite, or its |loss| exceeds ``max_loss_ratio`` times max(|loss at step 0|,
    ``LOSS_FLOOR``) (off with ``max_loss_ratio: null``), or after which a parameter, a
    gradient or a buffer (BN running statistics, an objective's centre) is not finite. The
    floor keeps a loss that starts near 0 and trains towards -1 (SimSiam's -cos) from
    counting as a blow-up. A loss that blows up and comes back still ends the arm: every
    step's loss is checked, not only the last."""

    LOSS_FLOOR = 1e-2

    def __init__(self, max_loss_ratio: float | None) -> None:
        self.ratio = max_loss_ratio
        self.initial: dict[str, float] = {}

    def loss(self, arm: str, step: int, value: float) -> str | None:
        """Why the loss ``value`` of ``arm`` at ``step`` means divergence, or None."""
        if not math.isfinite(value):
            return f"non-finite loss {value} at step {step} (arm {arm})"
        first = self.initial.setdefault(arm, max(abs(value), self.LOSS_FLOOR))
        if self.ratio is not None and abs(value) > self.ratio * first:
            return (f"loss {value:.4g} at step {step} exceeds max_loss_ratio {self.ratio:g} x "
                    f"the initial loss {first:.4g} (arm {arm})")
        return None

    @staticmethod
    def state(arm: str, model: nn.Module, step: int) -> str | None:
        """Why ``model``'s state after ``step`` means divergence, naming the first parameter,
        gradient or floating-point buffer with a non-finite entry; or None."""
        params = list(model.named_parameters())
        grads = [(name, p.grad) for name, p in params if p.grad is not None]
        buffers = [(name, b) for name, b in model.named_buffers() if b.is_floating_point()]
        for kind, named in (("parameter", params), ("gradient", grads), ("buffer", buffers)):
            bad = _first_non_finite(named)
            if bad is not None:
                return f"non-finite {kind} {bad} after step {step} (arm {arm})"
        return None


def _first_non_finite(named: list[tuple[str, torch.Tensor]]) -> str | None:
    """The name of the first tensor of ``named`` with a non-finite entry (a norm that
    overflows is checked entry by entry), or None."""
    if not named:
        return None
    norms = torch.stack(torch._foreach_norm([t.detach() for _, t in named])).cpu()
    for i in (~torch.isfinite(norms)).nonzero().flatten().tolist():
        if not torch.isfinite(named[i][1].detach()).all():
            return named[i][0]
    return None
