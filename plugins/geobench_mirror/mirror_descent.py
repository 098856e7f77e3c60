"""Mirror descent as a ``torch.optim.Optimizer``.

Update (per parameter group, with the group's mirror map):

    u  = ∇R(θ)                    (the dual variable)
    u⁺ = u − η (∇L(θ) + wd·θ)
    θ⁺ = ∇Q(u⁺)

The dual variable u is kept in the optimizer state (one buffer per parameter, like a
momentum buffer) rather than recomputed as ∇R(θ) at every step: a round trip
∇Q(∇R(θ)) in float32 has relative error ~ε·|u| (sinh amplifies the error of asinh), and
recomputing would add that error at every step, a drift that is systematic over
thousands of steps and of the same size as the per-step update for small step sizes.
Keeping u costs one parameter-sized buffer and makes the dual iterate exact up to the
rounding of the additions.  u is initialised as ∇R(θ) computed in float64; if a
parameter is written outside the optimizer after a step (detected by its version
counter, e.g. ``load_state_dict`` on the model or an in-place edit under ``no_grad``),
its dual variable is re-derived from the new θ.  Writes through ``.data`` bypass the
version counter and are not seen.

The maps are evaluated on one flat tensor per (device, dtype) bucket of a group (a
concatenation), so the cost is a few vectorised kernels per step, not per parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import Tensor
from torch.optim import Optimizer

from geobench_mirror.maps import Euclidean, MirrorMap


class MirrorDescent(Optimizer):
    """Mirror descent ∇R(θ⁺) = ∇R(θ) − η∇L(θ) with a separable mirror map per group.

    ``mirror_map=maps.euclidean()`` reproduces ``torch.optim.SGD`` (no momentum) exactly.
    Param groups may carry their own ``mirror_map``.  ``state_dict`` stores each group's
    map as its ``repr``; loading checks it against the optimizer's own maps.
    """

    def __init__(
        self,
        params: Iterable[Tensor] | Iterable[dict[str, Any]],
        lr: float,
        mirror_map: MirrorMap | None = None,
        weight_decay: float = 0.0,
    ) -> None:
        if not lr >= 0:
            raise ValueError(f"invalid learning rate {lr}")
        if not weight_decay >= 0:
            raise ValueError(f"invalid weight_decay {weight_decay}")
        defaults = {
            "lr": lr,
            "mirror_map": mirror_map if mirror_map is not None else Euclidean(),
            "weight_decay": weight_decay,
        }
        super().__init__(params, defaults)
        self._written: dict[Tensor, int] = {}

    def _dual(self, p: Tensor, mirror_map: MirrorMap) -> Tensor:
        state = self.state[p]
        seen = self._written.get(p)
        if "dual" not in state or (seen is not None and seen != p._version):
            state["dual"] = mirror_map.grad_R(p.detach().to(torch.float64)).to(p.dtype)
        return state["dual"]

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            buckets: dict[tuple[torch.device, torch.dtype], list[Tensor]] = {}
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.grad.is_sparse:
                    raise RuntimeError("MirrorDescent does not support sparse gradients")
                buckets.setdefault((p.device, p.dtype), []).append(p)
            for params in buckets.values():
                self._update(params, group)
        return loss

    def _update(self, params: list[Tensor], group: dict[str, Any]) -> None:
        mirror_map: MirrorMap = group["mirror_map"]
        duals = [self._dual(p, mirror_map) for p in params]
        grads = [p.grad for p in params]
        if group["weight_decay"] != 0:
            grads = torch._foreach_add(grads, params, alpha=group["weight_decay"])
        torch._foreach_add_(duals, grads, alpha=-group["lr"])
        flat = torch.cat([u.reshape(-1) for u in duals])
        theta = mirror_map.grad_Q(flat).split([p.numel() for p in params])
        torch._foreach_copy_(params, [t.view_as(p) for t, p in zip(theta, params, strict=True)])
        for p in params:
            self._written[p] = p._version

    def state_dict(self) -> dict[str, Any]:
        sd = super().state_dict()
        for group in sd["param_groups"]:
            group["mirror_map"] = repr(group["mirror_map"])
        return sd

    def load_state_dict(self, state_dict: dict[str, Any]) -> None:
        maps = [group["mirror_map"] for group in self.param_groups]
        saved = [group.get("mirror_map") for group in state_dict["param_groups"]]
        for i, (own, theirs) in enumerate(zip(maps, saved, strict=False)):
            if theirs != repr(own):
                raise ValueError(
                    f"param group {i}: the state dict was saved with mirror map {theirs}, "
                    f"this optimizer uses {own!r}"
                )
        super().load_state_dict(state_dict)
        for group, mirror_map in zip(self.param_groups, maps, strict=True):
            group["mirror_map"] = mirror_map
        self._written.clear()
