"""The divergence guard: when a cell's training has blown up (docs/reliability.md)."""

from __future__ import annotations

import math

import torch
from torch import nn


class DivergenceGuard:
    """The rule that ends a cell as ``diverged``: at the first step where an arm's loss is
    not finite, or its |loss| exceeds ``max_loss_ratio`` times max(|loss at step 0|,
    ``LOSS_FLOOR``) (off with ``max_loss_ratio: null``), or after which a parameter is not
    finite. The floor keeps a loss that starts near 0 and trains towards -1 (SimSiam's
    -cos) from counting as a blow-up. A loss that blows up and comes back still ends the
    cell: every step's loss is checked, not only the last."""

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
    def parameters(arm: str, model: nn.Module, step: int) -> str | None:
        """Why ``model``'s parameters after ``step`` mean divergence, or None."""
        params = [p.detach() for p in model.parameters()]
        if params and not torch.isfinite(torch.stack(torch._foreach_norm(params))).all():
            return f"non-finite parameters after step {step} (arm {arm})"
        return None
