"""KKT residual of the normalised direction for min φ_α(θ)²/2 s.t. y_i f(x_i; θ) ≥ 1.

Reading chosen (Thm 4.7/4.8 characterise the limit direction as a KKT point):

1. Normalise θ̃ = θ / s with s = (min_i y_i f_i(θ))^{1/L}, so min_i y_i f_i(θ̃) = 1.
2. Near-active constraints: the training samples with y_i f_i(θ̃) ≤ 1 + ``delta`` (at most
   ``max_active`` of the smallest).
3. Stationarity: find μ ≥ 0 minimising ||∇(φ²/2)(θ̃) − Σ_i μ_i ∇_θ(y_i f_i)(θ̃)|| by
   non-negative least squares (scipy ``nnls``); the residual is that distance divided by
   ||∇(φ²/2)(θ̃)|| over the non-zero coordinates (0 at an exact KKT point, 1 when no
   multiplier helps).

Homogeneity makes step 1 free: ∇_θ f(θ/s) = s^{1−L} ∇_θ f(θ) and ∇(φ²/2)(θ/s) =
∇(φ²/2)(θ)/s, so all gradients are taken at the trained θ.  For α = 1 (ℓ1-like horizons,
non-smooth at 0) coordinates with |θ_j| ≤ ``zero_tol``·max|θ| take the subdifferential:
they are left out of the least squares and contribute max(0, |(Σ μ_i ∇(y_i f_i))_j| − φ)
to the residual (the distance to the interval φ·[−1, 1]).
"""

from __future__ import annotations

import math

import torch
from pydantic import Field

from geobench.api import FieldDoc, Metric, MetricContext, MetricParams
from geobench_mirror.evaluate import arm_maps, device_of, homogeneity_degree, subset
from geobench_mirror.horizon import common_alpha, horizon
from geobench_mirror.objectives import signed_margins


class KKTParams(MetricParams):
    delta: float = Field(0.1, ge=0, description="near-active: normalised margin ≤ 1 + delta")
    max_active: int = Field(64, ge=1, description="at most this many near-active samples")
    zero_tol: float = Field(
        1e-3, ge=0, description="α = 1 maps: |θ_j| ≤ zero_tol·max|θ| counts as zero"
    )
    max_samples: int | None = Field(
        None, ge=1, description="use the first N training samples (None: all)"
    )


class KKTResidual(Metric):
    """Relative stationarity residual of the normalised direction (see module docstring).

    Fields: ``residual`` (NaN while the training set is not separated), ``n_active``.
    """

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        triples = arm_maps(ctx)
        pairs = [(m, p) for _, p, m in triples]
        alpha = common_alpha(pairs, "kkt_residual")
        L = homogeneity_degree(ctx.arm, "kkt_residual")
        params = [p for _, p, _ in triples]
        device = device_of(ctx.arm)
        x, y = subset(ctx.data.train_x, ctx.data.train_y, self.params.max_samples)
        x, y = x.to(device), y.to(device)
        with torch.no_grad():
            margins = signed_margins(ctx.arm.embed(x), y).double()
        low = float(margins.min())
        if not low > 0:
            return {"residual": math.nan, "n_active": 0.0}
        s = low ** (1.0 / L)
        near = torch.nonzero(margins <= low * (1.0 + self.params.delta))[:, 0]
        near = near[margins[near].argsort()[: self.params.max_active]]

        columns = []
        for i in near.tolist():
            m_i = signed_margins(ctx.arm.embed(x[i : i + 1]), y[i : i + 1])[0]
            grads = torch.autograd.grad(m_i, params)
            columns.append(torch.cat([g.reshape(-1) for g in grads]).double().cpu())
        J = torch.stack(columns, dim=1) / s ** (L - 1)  # ∇(y_i f_i)(θ̃), one column each

        theta = [p.detach().double().cpu().requires_grad_(True) for p in params]
        phi = horizon([(m, t) for (m, _), t in zip(pairs, theta, strict=True)], alpha)
        grads = torch.autograd.grad(0.5 * phi**2, theta)
        b = torch.cat([g.reshape(-1) for g in grads]) / s  # ∇(φ²/2)(θ̃)
        phi_t = float(phi.detach()) / s

        flat = torch.cat([t.detach().reshape(-1) for t in theta])
        zero = torch.zeros_like(flat, dtype=torch.bool)
        if alpha == 1.0:
            zero = flat.abs() <= self.params.zero_tol * flat.abs().max()
        A, target = J[~zero].numpy(), b[~zero].numpy()
        from scipy.optimize import nnls

        mu, _ = nnls(A, target)
        r_smooth = torch.as_tensor(A @ mu - target)
        combo = torch.as_tensor(J[zero].numpy() @ mu)
        r_zero = (combo.abs() - phi_t).clamp(min=0.0)
        residual = math.sqrt(float(r_smooth.pow(2).sum() + r_zero.pow(2).sum()))
        scale = float(torch.linalg.vector_norm(b[~zero]))
        return {"residual": residual / scale, "n_active": float(len(near))}


KKT_RESIDUAL_FIELDS = {
    "residual": FieldDoc("relative KKT stationarity residual of the margin-normalised "
                         "direction for min phi^2/2 s.t. y_i f(x_i) >= 1 (0: a KKT point)",
                         "", "lower"),
    "n_active": FieldDoc("near-active training samples used as constraints", "count"),
}
