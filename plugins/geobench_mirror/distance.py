"""Distance of an arm's parameters to the reference arm's (Lemma 4.10: large λ stays near GD).

A cross-arm metric: at each evaluation it compares this arm's trained parameters θ with
the reference arm's θ_ref (the suite's first arm, e.g. gradient descent) at the same step.
Arms of one cell start from the same weights and see the same data, so the comparison is
paired by trial seed; "matched time" is the suite's choice of step sizes (hypentropy with
step η/λ is gradient descent with step η while |θ| ≪ λ, see docs/mirror_flow.md).

    relative  = ||θ − θ_ref||₂ / ||θ_ref||₂
    direction = || θ/||θ||₂ − θ_ref/||θ_ref||₂ ||₂      (0: same direction, 2: opposite)
    agreement = share of test samples on which the two networks predict the same class

θ is the concatenation of the trainable parameters in registration order; both arms must
have the same parameter names and shapes.
"""

from __future__ import annotations

from typing import ClassVar

import torch
from torch import Tensor

from geobench.api import Arm, FieldDoc, Metric, MetricContext, trainable
from geobench_mirror.evaluate import outputs
from geobench_mirror.objectives import predictions


def flat_parameters(arm: Arm) -> tuple[list[tuple[str, tuple[int, ...]]], Tensor]:
    """(name, shape) of every trainable parameter and their concatenation in float64."""
    named = trainable(arm)
    layout = [(name, tuple(p.shape)) for name, p in named]
    flat = torch.cat([p.detach().to(torch.float64).reshape(-1).cpu() for _, p in named])
    return layout, flat


class ReferenceDistance(Metric):
    """Distance of this arm's parameters, direction and predictions to the reference arm's
    (see the module docstring for the formulas)."""

    cross_arm: ClassVar[bool] = True

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        if ctx.reference is None:
            raise ValueError("distance_to_reference is a cross-arm metric: it needs a reference "
                             "arm (a suite with arms)")
        layout, theta = flat_parameters(ctx.arm)
        ref_layout, ref = flat_parameters(ctx.reference)
        if layout != ref_layout:
            raise ValueError(f"distance_to_reference: arm {ctx.arm_name!r} and the reference "
                             f"{ctx.reference_name!r} have different parameters")
        norm, ref_norm = theta.norm(), ref.norm()
        x = ctx.data.test_x
        same = predictions(outputs(ctx.arm, x)) == predictions(outputs(ctx.reference, x))
        return {
            "relative": float((theta - ref).norm() / ref_norm),
            "direction": float((theta / norm - ref / ref_norm).norm()),
            "agreement": float(same.double().mean()),
        }


DISTANCE_FIELDS = {
    "relative": FieldDoc("‖theta - theta_ref‖_2 / ‖theta_ref‖_2: distance of the "
                         "parameters to the reference arm's at the same step", "", "lower"),
    "direction": FieldDoc("‖ theta/‖theta‖ - theta_ref/‖theta_ref‖ ‖_2: distance of the "
                          "normalised directions (0 same, 2 opposite)", "", "lower"),
    "agreement": FieldDoc("share of test samples on which this arm and the reference arm "
                          "predict the same class", "fraction", "higher"),
}
