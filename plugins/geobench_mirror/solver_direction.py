"""How close a trained linear classifier's direction is to the L_p max-margin directions that
scipy computes independently (``geobench_mirror.maxmargin``).

For a 1-homogeneous (linear, bias-free, one output) classifier f(x) = ⟨θ, x⟩ trained on
separable data, Theorems 4.7/4.8 say θ/||θ|| converges to the max-margin direction of its
map's horizon function φ_α: the L1 one for hypentropy (α = 1), the L2 one (hard-margin SVM)
for gradient descent, the L_p one for the p-norm map (α = p).  This metric compares θ with
each solver direction w_p on the training set:

    cos_l<p> = ⟨θ, w_p⟩ / ||θ||₂            (w_p a unit vector)
    cos_own  = cos_l<α>                      (α the arm's horizon degree)
    lead     = cos_own − max_{p ≠ α} cos_l<p> (> 0: closer to its own geometry's solution)
    margin_ratio = γ_α(θ) / γ_α(w_α),  γ_α(w) = min_i y_i⟨x_i, w⟩ / ||w||_α

margin_ratio is 1 exactly at a max-margin solution (also where the L1 solution is not
unique, which a cosine would miss) and negative while θ does not separate the samples.
"""

from __future__ import annotations

import math

import numpy as np
import torch
from pydantic import Field, field_validator

from geobench.api import FieldDoc, Metric, MetricContext, MetricParams
from geobench_mirror.evaluate import arm_maps, homogeneity_degree, subset
from geobench_mirror.horizon import common_alpha
from geobench_mirror.maxmargin import max_margin, normalised_margin


def cosine_field(p: float) -> str:
    """The field of the cosine with the L_p solution: ``cos_l<p:g>``."""
    return f"cos_l{p:g}"


class SolverDirectionParams(MetricParams):
    norms: list[float] = Field([1.0, 2.0, 3.0], description="the p of every L_p max-margin "
                               "direction compared with (each ≥ 1); the arm's own α is added")
    max_samples: int | None = Field(None, ge=1, description="use the first N training "
                                    "samples (None: all)")

    @field_validator("norms")
    @classmethod
    def _check_norms(cls, norms: list[float]) -> list[float]:
        if not norms or any(not (math.isfinite(p) and p >= 1) for p in norms):
            raise ValueError(f"norms must be one or more finite p >= 1; got {norms}")
        if len({cosine_field(p) for p in norms}) != len(norms):
            raise ValueError(f"norms must be distinct; got {norms}")
        return norms


class SolverDirection(Metric):
    """Cosines of a linear classifier's direction with the L_p max-margin directions solved
    by scipy, its lead for its own geometry and its normalised-margin ratio (module
    docstring).  Fields: ``cos_l<p>`` per p, ``cos_own``, ``lead``, ``margin_ratio``."""

    def __init__(self, params: SolverDirectionParams) -> None:
        super().__init__(params)
        self._solved: dict[tuple[float, int, tuple[int, ...]], np.ndarray] = {}

    def _solution(self, x: np.ndarray, y: np.ndarray, p: float, key: tuple) -> np.ndarray:
        if (p, *key) not in self._solved:
            self._solved[(p, *key)] = max_margin(x, y, p)
        return self._solved[(p, *key)]

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        triples = arm_maps(ctx)
        alpha = common_alpha([(m, p) for _, p, m in triples], "max_margin_direction")
        degree = homogeneity_degree(ctx.arm, "max_margin_direction")
        x, labels = subset(ctx.data.train_x, ctx.data.train_y, self.params.max_samples)
        theta = torch.cat([p.detach().reshape(-1) for _, p, _ in triples]).double().cpu()
        features = x.flatten(1)
        if degree != 1 or theta.numel() != features.shape[1]:
            raise ValueError(
                "max_margin_direction needs a linear classifier with one output (mlp depth 1, "
                f"out_dim 1, bias false): {theta.numel()} trained weights for "
                f"{features.shape[1]} input features, homogeneity degree {degree}")
        xs = features.double().cpu().numpy()
        ys = 2.0 * labels.double().cpu().numpy() - 1.0
        key = (features.data_ptr(), tuple(features.shape))
        norms = list(dict.fromkeys([*self.params.norms, alpha]))
        w = theta.numpy()
        unit = w / np.linalg.norm(w)
        cosines = {p: float(unit @ self._solution(xs, ys, p, key)) for p in norms}
        others = [c for p, c in cosines.items() if p != alpha and p in self.params.norms]
        own = self._solution(xs, ys, alpha, key)
        ratio = normalised_margin(xs, ys, w, alpha) / normalised_margin(xs, ys, own, alpha)
        return {**{cosine_field(p): cosines[p] for p in self.params.norms},
                "cos_own": cosines[alpha],
                "lead": cosines[alpha] - max(others) if others else math.nan,
                "margin_ratio": ratio}


SOLVER_DIRECTION_FIELDS = {
    "cos_l*": FieldDoc("cosine of the trained linear direction with the L_p max-margin "
                       "direction scipy solves on the training set, p as in the name "
                       "(cos_l<p>)", "", "higher"),
    "cos_own": FieldDoc("cosine with the max-margin direction of the arm's own horizon "
                        "degree alpha (hypentropy: L1, gd: L2, pnorm p: Lp)", "", "higher"),
    "lead": FieldDoc("cos_own minus the largest cosine with another norm's solution "
                     "(> 0: closer to its own geometry's solution)", "", "higher"),
    "margin_ratio": FieldDoc("normalised margin min_i y_i <x_i, theta> / ||theta||_alpha over "
                             "that of the L_alpha max-margin solution (1: a max-margin "
                             "direction)", "", "higher"),
}
