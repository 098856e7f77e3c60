"""LARS (You et al. 2017) as used by SimCLR-style recipes.

For a parameter θ with ndim > 1 (weights), at every step:

    g     = ∇L(θ) + wd·θ
    trust = η_trust ||θ|| / ||g||        (1 when ||θ|| = 0 or ||g|| = 0)
    v     = m·v + trust·g                 (v starts at 0)
    θ    ← θ − lr·v

Parameters with ndim ≤ 1 (biases, normalisation scales and shifts) get neither weight
decay nor the trust ratio: v = m·v + ∇L(θ), θ ← θ − lr·v.  Momentum is applied to the
trust-scaled gradient and the learning rate outside it (the form of the public
Barlow Twins / VICReg implementations), so a learning-rate schedule acts immediately.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor
from torch.optim import Optimizer


class LARS(Optimizer):
    """Layer-wise adaptive rate scaling with momentum and weight decay."""

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: float,
        momentum: float = 0.9,
        weight_decay: float = 1e-6,
        eta: float = 0.001,
        exclude_bias_and_norm: bool = True,
    ) -> None:
        if not lr >= 0:
            raise ValueError(f"invalid learning rate {lr}")
        defaults = {
            "lr": lr, "momentum": momentum, "weight_decay": weight_decay, "eta": eta,
            "exclude_bias_and_norm": exclude_bias_and_norm,
        }
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None:
                    continue
                g = p.grad
                if not (group["exclude_bias_and_norm"] and p.ndim <= 1):
                    g = g.add(p, alpha=group["weight_decay"])
                    p_norm = torch.linalg.vector_norm(p)
                    g_norm = torch.linalg.vector_norm(g)
                    ones = torch.ones_like(p_norm)
                    trust = torch.where(
                        (p_norm > 0) & (g_norm > 0), group["eta"] * p_norm / g_norm, ones
                    )
                    g = g.mul(trust)
                state = self.state[p]
                if "momentum_buffer" not in state:
                    state["momentum_buffer"] = torch.zeros_like(p)
                buf = state["momentum_buffer"]
                buf.mul_(group["momentum"]).add_(g)
                p.add_(buf, alpha=-group["lr"])
        return loss
