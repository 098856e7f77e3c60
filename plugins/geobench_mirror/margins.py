"""Q-margin, horizon function and alignment time of a homogeneous classifier.

All three read the arm's mirror map(s) from its optimizer spec (any optimizer other than
``mirror_descent`` counts as euclidean) and the homogeneity degree L from the backbone.
Margins are taken on the training set (the set the implicit bias acts on), as the paper
does; ``max_samples`` limits them to its first samples.
"""

from __future__ import annotations

import math

import torch
from pydantic import Field

from geobench.api import FieldDoc, Metric, MetricContext, MetricParams
from geobench_mirror.evaluate import arm_maps, homogeneity_degree, outputs, subset
from geobench_mirror.horizon import (
    common_alpha,
    dual_potential,
    horizon,
    horizon_closed,
    horizon_limit,
)
from geobench_mirror.objectives import signed_margins


class MarginParams(MetricParams):
    max_samples: int | None = Field(
        None, ge=1, description="use the first N training samples (None: all)"
    )
    late: float = Field(0.5, ge=0, lt=1, description="the late phase: steps from this "
                                                      "fraction of training on (drawdown)")


def _pairs(ctx: MetricContext) -> list:
    return [(m, p) for _, p, m in arm_maps(ctx)]


class QMargin(Metric):
    """γ_Q(θ) = min_i y_i f(x_i; θ) / (α Q(∇R(θ)))^{L/α} on the training set.

    Q(∇R(θ)) = Σ_j Q(∇R(θ_j)) over all trained parameters; α is the maps' common horizon
    degree (an error if the maps' degrees differ); y_i f(x_i) is the signed margin
    (f_y − max_{j≠y} f_j for multiclass outputs).  For R = θ²/2 this is the normalised L2
    margin min_i y_i f_i / ||θ||_2^L.  Also reported: ``gamma_phi`` = min y f / φ_α(θ)^L
    (the horizon-normalised margin, equal to γ_Q for homogeneous potentials),
    ``gamma_l2`` = min y f / ||θ||_2^L and ``min_margin`` = min y f.

    ``drawdown`` = (max_{s ≤ t} γ_Q(s) − γ_Q(t)) / max_{s ≤ t} γ_Q(s), the maximum over the
    evaluations s of the late phase (steps ≥ ``late`` × total steps) up to now: how far γ_Q
    has fallen below its best late value (0 while it does not fall; NaN before the late
    phase and while that maximum is not positive, i.e. the training set is not separated).
    Its ``max`` over a run is the largest fall of the late phase: under mirror flow γ_Q
    is (eventually) non-decreasing; finite steps may break that.
    """

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        pairs = _pairs(ctx)
        alpha = common_alpha(pairs, "q_margin")
        L = homogeneity_degree(ctx.arm, "q_margin")
        x, y = subset(ctx.data.train_x, ctx.data.train_y, self.params.max_samples)
        out = outputs(ctx.arm, x)
        margin = float(signed_margins(out, y.to(out.device)).min())
        with torch.no_grad():
            q = float(dual_potential(pairs))
            phi = float(horizon(pairs, alpha))
        l2 = math.sqrt(sum(float(p.detach().double().pow(2).sum()) for _, p in pairs))
        gamma = margin / (alpha * q) ** (L / alpha)
        return {
            "gamma": gamma,
            "gamma_phi": margin / phi**L,
            "gamma_l2": margin / l2**L,
            "min_margin": margin,
            "drawdown": self._drawdown(ctx, gamma),
        }

    def _drawdown(self, ctx: MetricContext, gamma: float) -> float:
        start = self.params.late * ctx.total_steps
        if ctx.step < start:
            return math.nan
        late = [v for step, v in ctx.history.get("gamma", []) if step >= start] + [gamma]
        best = max((v for v in late if not math.isnan(v)), default=math.nan)
        return (best - gamma) / best if best > 0 else math.nan


Q_MARGIN_FIELDS = {
    "gamma": FieldDoc("Q-margin: min_i y_i f(x_i) / (alpha Q(grad R(theta)))^(L/alpha) on the "
                      "training set"),
    "gamma_phi": FieldDoc("horizon-normalised margin min_i y_i f(x_i) / phi_alpha(theta)^L"),
    "gamma_l2": FieldDoc("L2-normalised margin min_i y_i f(x_i) / ||theta||_2^L"),
    "min_margin": FieldDoc("unnormalised smallest signed training margin min_i y_i f(x_i)"),
    "drawdown": FieldDoc("late phase: (best gamma_Q so far - gamma_Q) / best, the relative "
                         "fall below the running maximum (0: not falling)", "fraction", "lower"),
}


class HorizonMetric(Metric):
    """φ_α(θ) of the trained parameters, in closed form and as the η → 0 limit.

    Fields: ``closed`` (closed form; NaN when a map has no closed-form ``horizon``),
    ``numeric`` (η (α Q(∇R(θ/η)))^{1/α} at η → 0, see ``horizon_limit``) and their relative
    gap ``rel_gap`` = |closed − numeric| / |numeric|. Every map in use must give its
    horizon degree α (``geobench validate`` refuses a map that gives none)."""

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        pairs = _pairs(ctx)
        alpha = common_alpha(pairs, "horizon")
        with torch.no_grad():
            numeric = float(horizon_limit(pairs, alpha))
            try:
                closed = float(horizon_closed(pairs, alpha))
            except NotImplementedError:
                closed = math.nan
        return {"closed": closed, "numeric": numeric,
                "rel_gap": abs(closed - numeric) / abs(numeric)}


HORIZON_FIELDS = {
    "closed": FieldDoc("horizon function phi_alpha(theta) in closed form (NaN when a map has "
                       "no closed-form horizon)"),
    "numeric": FieldDoc("horizon function phi_alpha(theta) as the numerical eta -> 0 limit"),
    "rel_gap": FieldDoc("|closed - numeric| / |numeric|: disagreement of the two evaluations",
                        "", "lower"),
}


class AlignmentParams(MetricParams):
    eps: float = Field(0.05, gt=0, lt=1, description="relative tolerance of the alignment")


class AlignmentTime(Metric):
    """First step at which γ_Q is within relative ``eps`` of the horizon-normalised margin.

    Reading chosen: the target of the alignment is γ_φ = min y f / φ_α(θ)^L, the margin
    normalised by the horizon function that governs the limit direction.  Their ratio

        ratio = γ_Q / γ_φ = (φ_α(θ) / (α Q(∇R(θ)))^{1/α})^L

    does not depend on the data, only on how far θ is in the horizon regime; the arm is
    aligned once |ratio − 1| ≤ eps.  For homogeneous potentials (euclidean, pnorm) ratio
    is 1 from the start; for hypentropy Q(∇R(θ)) = Σ sqrt(θ² + λ²), so alignment needs
    ||θ||_1 ≫ λ·(number of weights) — the exponential delay for large λ (Lemma 4.10).
    Fields: ``ratio`` (now), ``aligned`` (1/0), ``step`` (first evaluated step at which the
    arm was aligned; NaN while it has not been, so resolution is the metric's ``every``).
    """

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        pairs = _pairs(ctx)
        alpha = common_alpha(pairs, "alignment_time")
        L = homogeneity_degree(ctx.arm, "alignment_time")
        with torch.no_grad():
            q = float(dual_potential(pairs))
            phi = float(horizon(pairs, alpha))
        ratio = (phi / (alpha * q) ** (1.0 / alpha)) ** L
        aligned = abs(ratio - 1.0) <= self.params.eps
        previous = ctx.history.get("step", [])
        if previous and math.isfinite(previous[-1][1]):
            step = float(previous[-1][1])
        else:
            step = float(ctx.step) if aligned else math.nan
        return {"ratio": ratio, "aligned": float(aligned), "step": step}


ALIGNMENT_TIME_FIELDS = {
    "ratio": FieldDoc("gamma_Q / gamma_phi = (phi_alpha(theta) / (alpha Q(grad R(theta)))"
                      "^(1/alpha))^L: how far theta is into the horizon regime (1: aligned)"),
    "aligned": FieldDoc("1 while |ratio - 1| <= eps, else 0", "0/1"),
    "step": FieldDoc("first evaluated step at which the arm was aligned (NaN before)",
                     "steps", censored=True),
}
