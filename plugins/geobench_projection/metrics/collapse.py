"""``collapse`` and ``escape_step``: is the representation collapsed, and when did it leave?

Both read the fixed reference set (``data.reference_x``, its first ``samples`` rows) with
the arm in evaluation mode.  For a matrix Z (N, d) of backbone representations or head
outputs:

- effective rank (Roy & Vetterli 2007) of the uncentred Z: exp(H(p)), p_k = s_k / sum s,
  s the singular values (``geobench.geometry.effective_rank(Z, center=False)``).  A
  complete collapse (every row the same vector c) gives 1, and a near collapse
  (rows c + small spread) stays close to 1, because the spread is measured against the
  shared vector; the centred effective rank would instead read the shape of the tiny
  spread (high from the start) and, at exact collapse, 0.
- std of l2-normalised embeddings (``geobench.geometry.embedding_std``): the per-dimension
  std over samples of z / ||z||, averaged over dimensions -- 0 at collapse, about
  1/sqrt(d) for isotropic embeddings.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field

from geobench.api import FieldDoc, Metric, MetricContext, MetricParams
from geobench.geometry import effective_rank, embedding_std
from geobench_projection.metrics.common import features


class CollapseParams(MetricParams):
    samples: int = Field(256, ge=2, description="reference samples used")


class EscapeParams(CollapseParams):
    every: int | None = Field(5, ge=1, description="check at steps 0, every, 2*every, ...")
    space: Literal["backbone", "head"] = Field("backbone", description="whose outputs")
    criterion: Literal["erank", "std"] = Field(
        "erank", description="effective rank, or sqrt(d) * std of l2-normalised outputs")
    threshold: float = Field(2.0, gt=0, description="escaped once the criterion exceeds it")


def _stats(ctx: MetricContext, samples: int) -> dict[str, float]:
    z, h = features(ctx.arm, ctx.data.reference_x[:samples])
    return {"backbone_erank": effective_rank(z, center=False),
            "head_erank": effective_rank(h, center=False),
            "backbone_std": float(embedding_std(z)), "head_std": float(embedding_std(h)),
            "backbone_dim": z.shape[1], "head_dim": h.shape[1]}


class Collapse(Metric):
    """Effective rank and normalised-embedding std of backbone and head outputs."""

    params: CollapseParams

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        stats = _stats(ctx, self.params.samples)
        return {k: v for k, v in stats.items() if not k.endswith("_dim")}


COLLAPSE_FIELDS = {
    "backbone_erank": FieldDoc("effective rank of the uncentred backbone representations of "
                               "the reference set (1: complete collapse)"),
    "head_erank": FieldDoc("effective rank of the uncentred head outputs of the reference set "
                           "(1: complete collapse)"),
    "backbone_std": FieldDoc("per-dimension std of l2-normalised backbone representations, "
                             "averaged (0: collapse, about 1/sqrt(d) isotropic)"),
    "head_std": FieldDoc("per-dimension std of l2-normalised head outputs, averaged "
                         "(0: collapse, about 1/sqrt(d) isotropic)"),
}


class EscapeStep(Metric):
    """The first evaluated step at which the criterion exceeds ``threshold``.

    Fields: ``escaped`` (1.0 once it has, else 0.0), ``step`` (that step, NaN before),
    ``value`` (the criterion now).  The state lives in this object (one per arm and run)
    and restarts at step 0.  With ``every`` = N the step is known to within N; a run that
    starts above the threshold (not collapsed) reports step 0.
    """

    params: EscapeParams

    def __init__(self, params: EscapeParams) -> None:
        super().__init__(params)
        self.first: dict[str, int] = {}

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        p = self.params
        if ctx.step == 0:
            self.first.pop(ctx.arm_name, None)
        stats = _stats(ctx, p.samples)
        if p.criterion == "erank":
            value = stats[f"{p.space}_erank"]
        else:
            value = stats[f"{p.space}_std"] * math.sqrt(stats[f"{p.space}_dim"])
        if value > p.threshold and ctx.arm_name not in self.first:
            self.first[ctx.arm_name] = ctx.step
        step = self.first.get(ctx.arm_name)
        return {"escaped": float(step is not None),
                "step": math.nan if step is None else float(step), "value": value}


ESCAPE_STEP_FIELDS = {
    "escaped": FieldDoc("1 once the criterion (effective rank or sqrt(d)·std) has exceeded "
                        "the threshold, else 0", "0/1"),
    "step": FieldDoc("first evaluated step at which the criterion exceeded the threshold "
                     "(NaN before)", "steps", censored=True),
    "value": FieldDoc("the escape criterion now (effective rank, or sqrt(d)·std of "
                      "l2-normalised outputs)"),
}


def build_collapse_metric(params: CollapseParams, ctx) -> Collapse:
    """Effective rank and normalised std of backbone and head outputs (reference set)."""
    return Collapse(params)


def build_escape_step(params: EscapeParams, ctx) -> EscapeStep:
    """First step at which the effective rank (or normalised std) exceeds a threshold."""
    return EscapeStep(params)
