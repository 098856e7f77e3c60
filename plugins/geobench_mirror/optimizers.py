"""The ``mirror_descent`` optimizer factory: one param group per mirror map."""

from __future__ import annotations

from geobench.api import BuildContext, trainable
from geobench_mirror.assign import MirrorDescentParams, assign_maps
from geobench_mirror.mirror_descent import MirrorDescent


def build_mirror_descent(params: MirrorDescentParams, ctx: BuildContext) -> MirrorDescent:
    """Mirror descent; one param group per map (per pattern with ``maps``)."""
    if ctx.model is None:
        raise ValueError("an optimizer needs ctx.model")
    groups: dict[int, dict] = {}
    for _, p, mirror_map in assign_maps(trainable(ctx.model), params, ctx):
        group = groups.setdefault(id(mirror_map), {"params": [], "mirror_map": mirror_map})
        group["params"].append(p)
    return MirrorDescent(list(groups.values()), lr=params.lr, weight_decay=params.weight_decay,
                         compile=params.compile)
