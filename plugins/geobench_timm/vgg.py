"""``homogeneous_vgg16``: VGG-16 without biases and without BatchNorm."""

from __future__ import annotations

from typing import Literal

import torch.nn.functional as F
from pydantic import Field
from torch import Tensor, nn

from geobench.api import BuildContext, Params

# VGG-16 (configuration D): conv widths, "M" = 2x2 pooling.
CONFIG_D = (64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
            512, 512, 512, "M")


class VGGParams(Params):
    width: float = Field(1.0, gt=0, description="multiplier of the conv widths (64..512)")
    hidden: int | None = Field(None, ge=1, description="width of the two hidden linear "
                               "layers (None: the last conv width, 512 * width)")
    out_dim: int | None = Field(None, ge=1, description="outputs (None: the data's classes)")
    pool: Literal["max", "avg"] = Field("max", description="2x2 pooling between blocks")


class HomogeneousVGG16(nn.Module):
    """13 bias-free 3x3 convs + 3 bias-free linear layers, ReLU, no BN, no dropout.

    Parameters are ``layers.<i>.weight``, i = 0..15 (0..12 convs, 13..15 linear).  A 2x2
    pooling is applied after each conv block while the feature map is at least 2x2 (pools
    that would shrink it below one pixel are dropped); a global average pool then reduces
    what is left to 1x1.  ReLU, max/avg pooling and averaging are positively 1-homogeneous
    and every layer is linear in its weight, so f(x; c theta) = c^16 f(x; theta) for c > 0
    (``homogeneity_degree = 16``).  Kaiming-normal (fan-in) initialisation.
    """

    homogeneity_degree = 16

    def __init__(self, in_chans: int, size: int, out_dim: int, params: VGGParams) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        self.pool_after: list[bool] = []
        channels = in_chans
        for item in CONFIG_D:
            if item == "M":
                self.pool_after[-1] = size >= 2
                size = size // 2 if size >= 2 else size
                continue
            width = max(1, round(item * params.width))
            layers.append(nn.Conv2d(channels, width, 3, padding=1, bias=False))
            self.pool_after.append(False)
            channels = width
        hidden = params.hidden or channels
        layers += [nn.Linear(channels, hidden, bias=False), nn.Linear(hidden, hidden, bias=False),
                   nn.Linear(hidden, out_dim, bias=False)]
        self.layers = nn.ModuleList(layers)
        self.pool = F.max_pool2d if params.pool == "max" else F.avg_pool2d
        self.feature_dim = out_dim
        for layer in self.layers:
            nn.init.kaiming_normal_(layer.weight, mode="fan_in", nonlinearity="relu")

    def forward(self, x: Tensor) -> Tensor:
        h = x
        for layer, pool in zip(self.layers[:13], self.pool_after, strict=True):
            h = F.relu(layer(h))
            if pool:
                h = self.pool(h, 2)
        h = h.mean(dim=(2, 3))
        h = F.relu(self.layers[13](h))
        h = F.relu(self.layers[14](h))
        return self.layers[15](h)


def build_homogeneous_vgg16(params: VGGParams, ctx: BuildContext) -> HomogeneousVGG16:
    """VGG-16 (bias-free, BN-free) sized to the data's channels and classes."""
    shape = ctx.data.input_shape if ctx.data is not None else None
    if shape is None or len(shape) != 3:
        raise ValueError(f"backbone homogeneous_vgg16 needs image data (C, H, W); the "
                         f"dataset gives samples of shape {shape}")
    return HomogeneousVGG16(shape[0], min(shape[1:]), params.out_dim or ctx.data.num_classes,
                            params)
