"""``collapse`` init: start the backbone output at (eps = 0) or near (eps > 0) a collapsed
state, z = f(x) = eps * f0(x) + c for every input x, with f0 the freshly built backbone and
c a fixed random vector.

Two equivalent realisations, both trainable:

- ``last_layer``: when the backbone's output is exactly the output of its last affine
  layer (``nn.Linear`` or ``nn.LayerNorm`` with a bias, e.g. the ``mlp`` and ViT
  backbones), that layer's weight is scaled by eps and its bias becomes eps * b + c.
- ``affine``: otherwise (e.g. a ResNet ending in global pooling) an output layer
  A z + a with A = eps * I, a = c is appended to the backbone (``CollapsedBackbone``).

``auto`` picks ``last_layer`` when possible.  At eps = 0 every sample has representation c
exactly; gradients still reach the scaled weights (sum_i g_i a_i^T), so training can leave
the collapsed state.
"""

from __future__ import annotations

from typing import Literal

import torch
from pydantic import Field
from torch import Tensor, nn

from geobench.api import Arm, BuildContext, Data, Params
from geobench_projection.objectives.common import training_pass


class CollapseParams(Params):
    eps: float = Field(0.0, ge=0, description="scale of the input-dependent part (0: collapsed)")
    bias_scale: float = Field(1.0, ge=0, description="c ~ N(0, bias_scale^2 I)")
    mode: Literal["auto", "last_layer", "affine"] = Field(
        "auto", description="scale the last affine layer, or append an affine output layer")


class CollapsedBackbone(nn.Module):
    """``affine(backbone(x))`` with ``affine`` initialised to z -> eps z + c."""

    def __init__(self, backbone: nn.Module, eps: float, c: Tensor) -> None:
        super().__init__()
        d = c.shape[0]
        self.backbone = backbone
        self.feature_dim = getattr(backbone, "feature_dim", d)
        self.affine = nn.Linear(d, d).to(c.device)
        with torch.no_grad():
            self.affine.weight.copy_(eps * torch.eye(d, device=c.device))
            self.affine.bias.copy_(c)

    def forward(self, x: Tensor) -> Tensor:
        return self.affine(self.backbone(x))


def output_layer(backbone: nn.Module, x: Tensor) -> nn.Module | None:
    """The last ``nn.Linear`` / ``nn.LayerNorm`` (with weight and bias) whose output is the
    backbone's output itself, found by running ``x`` through it; None if there is none."""
    outputs: list[tuple[nn.Module, Tensor]] = []
    hooks = [m.register_forward_hook(lambda mod, _i, out: outputs.append((mod, out)))
             for m in backbone.modules()
             if isinstance(m, (nn.Linear, nn.LayerNorm))
             and getattr(m, "weight", None) is not None and getattr(m, "bias", None) is not None]
    try:
        with training_pass(backbone):
            backbone.eval()
            y = backbone(x)
    finally:
        for h in hooks:
            h.remove()
    for module, out in reversed(outputs):
        if isinstance(out, Tensor) and out.shape == y.shape and torch.equal(out, y):
            return module
    return None


class CollapseInit:
    """Makes ``arm.backbone`` output eps * f0(x) + c (see the module docstring)."""

    def __init__(self, params: CollapseParams, seed: int) -> None:
        self.params = params
        self.seed = seed

    def __call__(self, arm: Arm, data: Data) -> None:
        p = self.params
        device = next(arm.backbone.parameters()).device
        layer = None
        if p.mode != "affine":
            layer = output_layer(arm.backbone, data.reference_x[:8].to(device))
            if layer is None and p.mode == "last_layer":
                raise ValueError("collapse init (mode last_layer): the backbone's output is not "
                                 "the output of a Linear/LayerNorm layer; use mode auto/affine")
        gen = torch.Generator().manual_seed(self.seed)
        c = (p.bias_scale * torch.randn(arm.backbone.feature_dim, generator=gen)).to(device)
        if layer is None:
            arm.backbone = CollapsedBackbone(arm.backbone, p.eps, c)
            return
        with torch.no_grad():
            layer.weight.mul_(p.eps)
            layer.bias.mul_(p.eps).add_(c)


def build_collapse(params: CollapseParams, ctx: BuildContext) -> CollapseInit:
    """Start at (eps = 0) or near (eps > 0) collapse: f(x) = eps * f0(x) + c."""
    return CollapseInit(params, ctx.seed)
