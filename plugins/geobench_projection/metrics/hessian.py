"""``effective_hessian`` / ``hessian_tracking``: spectra of H_eff = G + K w.r.t. the
representation batch.

At the current batch (its first ``samples`` rows of each view), the objective supplies
z (the stacked online representations), the online head and the loss of the head outputs
with every stop-gradient target constant (``SSLObjective.loss_of_h``).  Then, over the flat
vector of the V*B*d representation entries,

  H_eff = d^2/dz^2 L(h(z)),   G = J_h^T (d^2 L/dh^2) J_h,   K = sum_i [dL/dh]_i d^2 h_i/dz^2,

computed matrix-free by ``geobench.geometry.EffectiveHessian`` and summarised by
``geobench.geometry.spectrum_summary``: lambda_min, lambda_max, cond_abs (ratio of the
ends' magnitudes), cond_pos (lambda_max over the smallest positive eigenvalue), neg_count
and neg_mass (number and summed |lambda| of negative eigenvalues) -- exact from the dense
matrix up to ``dense_threshold`` entries (default 4096: V*B*d up to 4096 is exact), Lanczos
/ stochastic Lanczos quadrature beyond, where ``neg_unresolved`` bounds what the estimate
could not sign (true count in [neg_count, neg_count + neg_unresolved] up to probe noise,
about sqrt(2 p (1 - p) size / probes) for a fraction p of negatives; the estimate is
low when negative eigenvalues lie closer to 0 than the quadrature resolves, e.g. a
train-mode BN head's G, whose negatives spread over ten decades).

Fields: the H_eff summary under its plain names (``lambda_min`` ...), G's prefixed ``G_``,
K's prefixed ``K_``; ``grad_norm`` = ||dL/dh|| (the factor that drives K: it vanishes at an
exactly collapsed state of a cosine loss whose branches coincide, so K does too) and
``loss``; ``K_rel_norm`` = max|lambda(K)| / max|lambda(H_eff)|.  G and K carry rounding
errors on the scale of H_eff, so eigenvalues of G and K below
``zero_tol * max|lambda(H_eff)|`` in magnitude (default 1000 machine epsilons of
``dtype``) count as zero: an exactly zero K (linear or ReLU heads) reports lambda = 0 and
no negatives rather than rounding noise.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from pydantic import Field

from geobench.api import FieldDoc, Metric, MetricContext, MetricParams
from geobench.geometry import EffectiveHessian, LinearOperator, spectrum_summary
from geobench_projection.metrics.common import finite_or_nan

SUMMARY_FIELDS = ("lambda_min", "lambda_max", "cond_abs", "cond_pos", "neg_count", "neg_mass",
                  "neg_unresolved")
OPERATORS = (("", "full"), ("G_", "gauss_newton"), ("K_", "interaction"))


class EffectiveHessianParams(MetricParams):
    samples: int | None = Field(16, ge=2, description="rows of each view used (None: the batch)")
    k: int = Field(1, ge=1, description="extreme eigenvalues per end resolved by Lanczos")
    dense_threshold: int = Field(4096, ge=0, description="exact eigvalsh up to this size")
    tol: float = Field(1e-6, gt=0, description="Lanczos relative residual tolerance")
    max_iter: int | None = Field(None, ge=1, description="Lanczos steps cap (None: 300)")
    probes: int = Field(4, ge=1, description="SLQ probes for the negative count / mass")
    slq_steps: int = Field(400, ge=2, description="Lanczos steps per SLQ probe (at most: a "
                           "probe stops once its count is resolved)")
    dtype: Literal["float32", "float64"] = Field("float64", description="arithmetic precision")
    zero_tol: float | None = Field(None, gt=0, description="|lambda| <= zero_tol * "
                                   "max|lambda(H)| counts as zero for G, K (None: 1000 eps)")


class HessianTrackingParams(EffectiveHessianParams):
    every: int | None = Field(10, ge=1, description="evaluate at steps 0, every, 2*every, ...")


def _summary(op: LinearOperator, p: EffectiveHessianParams, floor: float | None, seed: int
             ) -> dict[str, float]:
    """spectrum_summary of ``op`` where |lambda| <= ``floor`` (absolute) counts as zero;
    ``seed`` seeds the Lanczos start vector and the SLQ probes."""
    kwargs = dict(k=p.k, tol=p.tol, max_iter=p.max_iter, seed=seed, probes=p.probes,
                  steps=p.slq_steps)
    if op.size <= p.dense_threshold:
        m = op.dense().to(torch.float64)
        ev = torch.linalg.eigvalsh((m + m.T) / 2)
        top = float(ev.abs().max())
        if floor is not None and top <= floor:
            ev = torch.zeros_like(ev)
            return spectrum_summary(ev, rtol=1.0)
        rtol = max(floor / top, ev.numel() * torch.finfo(op.dtype).eps) if floor else None
        return spectrum_summary(ev, rtol=rtol)
    # zero = max(floor, size * eps * max|lambda|): one pass (Lanczos extremes, then SLQ)
    out = spectrum_summary(op, dense_threshold=0, atol=floor or 0.0, **kwargs)
    if floor is not None and max(abs(out["lambda_min"]), abs(out["lambda_max"])) <= floor:
        return spectrum_summary(torch.zeros(op.size, dtype=torch.float64), rtol=1.0)
    return out


def _relative_norm(out: dict[str, float], prefix: str) -> float:
    """max|lambda| of the ``prefix`` operator over max|lambda(H_eff)| (NaN when H_eff = 0)."""
    ends = [out[prefix + "lambda_min"], out[prefix + "lambda_max"], out["lambda_min"],
            out["lambda_max"]]
    if any(math.isnan(x) for x in ends):
        return math.nan
    norm, scale = max(abs(ends[0]), abs(ends[1])), max(abs(ends[2]), abs(ends[3]))
    return finite_or_nan(norm / scale) if scale > 0 else math.nan


class EffectiveHessianMetric(Metric):
    """Spectral summaries of H_eff, G and K at the current batch (module docstring)."""

    params: EffectiveHessianParams

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        objective = ctx.arm.objective
        if not hasattr(objective, "loss_of_h"):
            raise TypeError(f"{type(objective).__name__} does not expose loss_of_h; the "
                            "effective Hessian needs simsiam, byol, vicreg, barlow_twins or dino")
        n = self.params.samples
        views = [v if n is None else v[:n] for v in ctx.views[: objective.n_views]]
        dtype = getattr(torch, self.params.dtype)
        problem = objective.loss_of_h(ctx.arm, views, step=ctx.step).to(dtype)
        hess = EffectiveHessian(problem.head, problem.loss, problem.z)
        out: dict[str, float] = {}
        floor = None
        seed = int(torch.randint(0, 2**62, (1,), generator=ctx.generator))
        for prefix, name in OPERATORS:
            summary = _summary(getattr(hess, name), self.params, floor, seed)
            if floor is None:
                scale = max(abs(summary["lambda_min"]), abs(summary["lambda_max"]))
                tol = self.params.zero_tol or 1e3 * torch.finfo(dtype).eps
                floor = tol * scale
            out.update({prefix + f: finite_or_nan(summary[f]) for f in SUMMARY_FIELDS})
        out["K_rel_norm"] = _relative_norm(out, "K_")
        z = problem.z.clone()
        with torch.enable_grad():
            h = problem.head(z).detach().requires_grad_(True)
            loss = problem.loss(h)
            (grad,) = torch.autograd.grad(loss, h)
        out["grad_norm"] = float(grad.norm())
        out["loss"] = float(loss.detach())
        return out


def build_effective_hessian(params: EffectiveHessianParams, ctx) -> EffectiveHessianMetric:
    """Spectra of H_eff, G, K w.r.t. the representation (at the end unless ``every``)."""
    return EffectiveHessianMetric(params)


def build_hessian_tracking(params: HessianTrackingParams, ctx) -> EffectiveHessianMetric:
    """The effective_hessian spectra tracked along training (every 10 steps by default)."""
    return EffectiveHessianMetric(params)


def _spectrum_docs(prefix: str, op: str) -> dict[str, FieldDoc]:
    """FieldDocs of one operator's spectrum_summary fields (``prefix`` as in OPERATORS)."""
    return {
        f"{prefix}lambda_min": FieldDoc(f"smallest eigenvalue of {op} at the representation"),
        f"{prefix}lambda_max": FieldDoc(f"largest eigenvalue of {op} at the representation"),
        f"{prefix}cond_abs": FieldDoc(f"ratio of the magnitudes of the spectrum's ends of {op} "
                                      "(the condition number when definite)"),
        f"{prefix}cond_pos": FieldDoc(f"largest over smallest positive eigenvalue of {op}"),
        f"{prefix}neg_count": FieldDoc(f"number of negative eigenvalues of {op}", "count"),
        f"{prefix}neg_mass": FieldDoc(f"summed |lambda| of the negative eigenvalues of {op}"),
        f"{prefix}neg_unresolved": FieldDoc(
            f"eigenvalues of {op} the quadrature estimate could not sign (0 when exact): the "
            "true negative count lies in [neg_count, neg_count + neg_unresolved], up to "
            "probe noise", "count"),
    }


EFFECTIVE_HESSIAN_FIELDS = {
    **_spectrum_docs("", "H_eff = d^2 L(h(z))/dz^2"),
    **_spectrum_docs("G_", "G (Gauss-Newton / pull-back part of H_eff)"),
    **_spectrum_docs("K_", "K (interaction term of H_eff, the head's curvature)"),
    "K_rel_norm": FieldDoc("max|lambda(K)| / max|lambda(H_eff)| (0: K vanishes within the "
                           "zero tolerance, as for ReLU and linear heads without BN)"),
    "grad_norm": FieldDoc("norm of dL/dh at the head outputs (the factor that scales K)"),
    "loss": FieldDoc("the objective of the measured sub-batch, stop-gradient targets constant"),
}
