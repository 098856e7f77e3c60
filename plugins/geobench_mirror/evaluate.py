"""Shared pieces of the mirror-flow metrics: the homogeneity degree, outputs, the maps."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from geobench.api import Arm, MetricContext, trainable
from geobench.params import Layout, Need
from geobench_mirror import maps
from geobench_mirror.assign import optimizer_maps
from geobench_mirror.maps import MirrorMap


def homogeneity_degree(arm: Arm, what: str) -> int:
    """L such that f(x; cθ) = c^L f(x; θ) for the arm's output f = head ∘ backbone.

    Read from ``arm.backbone.homogeneity_degree``; the head and the objective must own no
    parameters (an ``identity`` head), otherwise the output is not L-homogeneous in the
    trained parameters.
    """
    degree = getattr(arm.backbone, "homogeneity_degree", None)
    if degree is None:
        raise ValueError(
            f"{what} needs a homogeneous backbone (one with attribute homogeneity_degree, "
            f"e.g. mlp with bias: false, norm: none, activation: relu); "
            f"{type(arm.backbone).__name__} has none"
        )
    extra = [n for n, _ in arm.named_parameters() if not n.startswith("backbone.")]
    if extra:
        raise ValueError(
            f"{what} needs the output to be the backbone's own (head identity, no "
            f"objective parameters); found parameters {extra[:3]}"
        )
    return int(degree)


def outside_backbone(layout: Layout) -> str | None:
    """The first trained parameter of the arm built for the data outside its backbone, as
    ``homogeneity_degree`` finds it, in words; None when there is none (or no build)."""
    extra = [n for n in layout.names() if not n.startswith("backbone.")]
    return f"{extra[0]} is trained" if extra and layout.error is None else None


def backbone_only(wants: str) -> Need:
    """No trained parameter outside the backbone, on the arm built for the data (a plugin
    head that does not declare ``extra_params`` included)."""
    return Need(("layout",), lambda layout: outside_backbone(layout) is None, wants,
                says=outside_backbone)


def device_of(module: nn.Module) -> torch.device:
    return next(module.parameters()).device


@torch.no_grad()
def outputs(arm: Arm, x: Tensor, chunk: int = 1024) -> Tensor:
    """The network output f(x) = arm.embed(x), computed in chunks on the arm's device."""
    device = device_of(arm)
    parts = [arm.embed(x[i : i + chunk].to(device)) for i in range(0, len(x), chunk)]
    return torch.cat(parts)


def subset(x: Tensor, y: Tensor, max_samples: int | None) -> tuple[Tensor, Tensor]:
    """The first ``max_samples`` samples (all when None)."""
    if max_samples is None:
        return x, y
    return x[:max_samples], y[:max_samples]


def arm_maps(ctx: MetricContext) -> list[tuple[str, Tensor, MirrorMap]]:
    """(name, parameter, map) of the arm's trainable parameters: the maps of the optimizer
    the engine trains with (``mirror_map`` of its param groups; euclidean for a gradient
    optimizer). A context built outside the engine (no optimizer) resolves the spec's."""
    if ctx.optimizer is None:
        spec: dict[str, Any] = ctx.spec.get("optimizer") or {"name": "sgd"}
        if ctx.registry is None:
            raise ValueError("a context without an optimizer needs ctx.registry to build maps")
        return optimizer_maps(ctx.arm, spec, device_of(ctx.arm), registry=ctx.registry)
    of_param = {id(p): group.get("mirror_map") for group in ctx.optimizer.param_groups
                for p in group["params"]}
    euclidean = maps.euclidean()
    return [(name, p, of_param.get(id(p)) or euclidean) for name, p in trainable(ctx.arm)]
