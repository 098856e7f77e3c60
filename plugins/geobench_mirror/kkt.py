"""KKT residual of the normalised direction for min φ_α(θ)²/2 s.t. y_i f(x_i; θ) ≥ 1,
as a curve over the active-set tolerance δ and its minimum over δ.

Reading chosen (Thm 4.7/4.8 characterise the limit direction as a KKT point):

1. Normalise θ̃ = θ / s with s = (min_i y_i f_i(θ))^{1/L}, so the normalised margins
   m_i = y_i f_i(θ̃) satisfy min_i m_i = 1 (primal feasibility holds by construction).
2. Active set at tolerance δ: A_δ = the samples with m_i ≤ 1 + δ, i.e. within a factor
   1 + δ of the minimum margin (at most ``max_active`` of them, smallest margins first, so
   the sets are nested prefixes of the samples sorted by margin).  A finite-time iterate is
   only approximately a KKT point: constraints that carry multipliers in the limit have
   margins 1 + o(1), not 1, so a δ too small misses them (the stationarity residual stays
   large); a δ too large lets slack constraints absorb the objective's gradient.
3. Multipliers at δ: the least-squares multipliers of the working set A_δ,
   μ(δ) = argmin_{μ ≥ 0, supp μ ⊆ A_δ} ||b − Σ_i μ_i g_i|| (scipy ``nnls``; dual
   feasibility μ ≥ 0 by construction), with b = ∇(φ²/2)(θ̃) and g_i = ∇_θ(y_i f_i)(θ̃).
4. Residual at δ: the KKT residual of the primal-dual pair (θ̃, μ(δ)), stationarity plus
   complementary slackness, relative to ||b||::

       r(δ) = sqrt( ||b − Σ_i μ_i g_i||² + Σ_{i ∈ A_δ} (μ_i ||g_i|| (m_i − 1))² ) / ||b||

   The slackness term μ_i (m_i − 1) is made a gradient-sized quantity by ||g_i||: the
   force μ_i g_i a constraint with relative slack m_i − 1 may not exert, weighted by that
   slack.  r = 0 exactly at a KKT point (once A_δ covers its active set); r = 1 when no
   multiplier helps; r > 1 is possible when the fit leans on constraints with large
   slack.  When only exactly-active constraints (m_i = 1) are in A_δ the slackness term
   vanishes and r(δ) is the plain relative stationarity residual of the single-δ reading
   (otherwise the slackness term is at most δ·||(μ_i ||g_i||)_i|| / ||b||).
5. Reported: r(δ) for every δ in ``deltas`` and ``residual_min`` = min_δ r(δ) with its
   argmin ``delta_min``.  Why a minimum and why it is not trivially the largest δ: the
   stationarity part alone is non-increasing in δ (more columns can only lower a
   least-squares residual, and so would a slackness term minimised jointly with μ, since
   μ_i = 0 is always allowed), so it would just select the largest δ.  With the
   least-squares multipliers of step 3 the slackness term grows as soon as the fit leans
   on slack constraints, so r(δ) trades missing constraints (small δ) against
   illegitimate multipliers (large δ); min_δ r(δ) is the KKT residual under the best
   working set of the nested family, not the value at one hand-picked δ.

Homogeneity makes step 1 free: ∇_θ f(θ/s) = s^{1−L} ∇_θ f(θ) and ∇(φ²/2)(θ/s) =
∇(φ²/2)(θ)/s, so all gradients are taken at the trained θ.  The gradients g_i are
computed once per evaluation, for the largest active set, and reused for every δ (each δ
is one NNLS solve).  For α = 1 (ℓ1-like horizons, non-smooth at 0) coordinates with
|θ_j| ≤ ``zero_tol``·max|θ| take the subdifferential: they are left out of the least
squares (and of ||b||) and contribute max(0, |(Σ μ_i g_i)_j| − φ(θ̃)) to the stationarity
part (the distance to the interval φ·[−1, 1]).  When the columns g_i of A_δ are linearly
dependent the least-squares multipliers are not unique; the residual then uses the
solution scipy's Lawson–Hanson solver returns.
"""

from __future__ import annotations

import math

import torch
from pydantic import Field, field_validator

from geobench.api import FieldDoc, Metric, MetricContext, MetricParams
from geobench_mirror.evaluate import arm_maps, device_of, homogeneity_degree, subset
from geobench_mirror.horizon import common_alpha, horizon
from geobench_mirror.objectives import signed_margins

DEFAULT_DELTAS = [1e-4, 3.16e-4, 1e-3, 3.16e-3, 1e-2, 3.16e-2, 0.1, 0.316, 1.0]


def delta_field(delta: float) -> str:
    """The result field of the residual at tolerance ``delta``: ``residual_<δ:.2g>``."""
    return f"residual_{delta:.2g}"


class KKTParams(MetricParams):
    deltas: list[float] = Field(
        DEFAULT_DELTAS,
        description="active-set tolerances δ (ascending, distinct, ≥ 0): a sample is active "
                    "when its normalised margin is ≤ 1 + δ",
    )
    max_active: int = Field(64, ge=1, description="at most this many near-active samples")
    zero_tol: float = Field(
        1e-3, ge=0, description="α = 1 maps: |θ_j| ≤ zero_tol·max|θ| counts as zero"
    )
    max_samples: int | None = Field(
        None, ge=1, description="use the first N training samples (None: all)"
    )

    @field_validator("deltas")
    @classmethod
    def _check_deltas(cls, deltas: list[float]) -> list[float]:
        if not deltas:
            raise ValueError("deltas must hold at least one tolerance")
        bad = [d for d in deltas if not (math.isfinite(d) and d >= 0)]
        if bad:
            raise ValueError(f"deltas must be finite and ≥ 0; got {bad}")
        if any(b <= a for a, b in zip(deltas, deltas[1:])):
            raise ValueError(f"deltas must be sorted ascending and distinct; got {deltas}")
        names = [delta_field(d) for d in deltas]
        clash = sorted({n for n in names if names.count(n) > 1})
        if clash:
            raise ValueError(f"deltas give colliding field names {clash} (fields are named "
                             "residual_<δ:.2g>); use tolerances that differ in 2 significant "
                             "digits")
        return deltas


def _sample_gradients(ctx: MetricContext, params: list[torch.Tensor], x: torch.Tensor,
                      y: torch.Tensor) -> torch.Tensor:
    """∇_θ(y_i f_i)(θ), one column per sample (double, CPU): one forward and backward per
    sample, so samples never interact (batch statistics or not)."""
    columns = []
    for i in range(len(x)):
        m_i = signed_margins(ctx.arm.embed(x[i : i + 1]), y[i : i + 1])[0]
        grads = torch.autograd.grad(m_i, params)
        columns.append(torch.cat([g.reshape(-1) for g in grads]).double().cpu())
    return torch.stack(columns, dim=1)


class KKTResidual(Metric):
    """KKT residual (stationarity + complementary slackness) of the margin-normalised
    direction, per active-set tolerance δ and minimised over δ (see module docstring).

    Fields: ``residual_min`` (NaN while the training set is not separated), ``delta_min``,
    ``n_active`` (at delta_min) and ``residual_<δ:.2g>`` per δ (e.g. ``residual_0.0001``).
    """

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        deltas = self.params.deltas
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
            out = {delta_field(d): math.nan for d in deltas}
            return {"residual_min": math.nan, "delta_min": math.nan, "n_active": 0.0, **out}
        s = low ** (1.0 / L)
        order = margins.argsort(stable=True)
        sorted_m = margins[order]
        # active set at δ: the first k(δ) samples by margin (margin ≤ low·(1 + δ), capped)
        counts = [min(int((sorted_m <= low * (1.0 + d)).sum()), self.params.max_active)
                  for d in deltas]
        top = order[: max(counts)]
        J = _sample_gradients(ctx, params, x[top], y[top]) / s ** (L - 1)  # g_i at θ̃
        slack = (sorted_m[: max(counts)].cpu() / low - 1.0).clamp(min=0.0)  # m_i − 1
        weight = torch.linalg.vector_norm(J, dim=0) * slack  # ||g_i|| (m_i − 1)

        theta = [p.detach().double().cpu().requires_grad_(True) for p in params]
        phi = horizon([(m, t) for (m, _), t in zip(pairs, theta, strict=True)], alpha)
        grads = torch.autograd.grad(0.5 * phi**2, theta)
        b = torch.cat([g.reshape(-1) for g in grads]) / s  # ∇(φ²/2)(θ̃)
        phi_t = float(phi.detach()) / s

        flat = torch.cat([t.detach().reshape(-1) for t in theta])
        zero = torch.zeros_like(flat, dtype=torch.bool)
        if alpha == 1.0:
            zero = flat.abs() <= self.params.zero_tol * flat.abs().max()
        A, target, A_zero = J[~zero].numpy(), b[~zero].numpy(), J[zero].numpy()
        scale = float(torch.linalg.vector_norm(b[~zero]))
        from scipy.optimize import nnls

        by_count: dict[int, float] = {}
        for k in sorted(set(counts)):
            mu, _ = nnls(A[:, :k], target)
            r_smooth = torch.as_tensor(A[:, :k] @ mu - target)
            r_zero = (torch.as_tensor(A_zero[:, :k] @ mu).abs() - phi_t).clamp(min=0.0)
            r_slack = torch.as_tensor(mu) * weight[:k]
            total = r_smooth.pow(2).sum() + r_zero.pow(2).sum() + r_slack.pow(2).sum()
            by_count[k] = math.sqrt(float(total)) / scale
        curve = [by_count[k] for k in counts]
        best = min(range(len(deltas)), key=lambda j: (curve[j], j))
        out = {delta_field(d): r for d, r in zip(deltas, curve, strict=True)}
        return {"residual_min": curve[best], "delta_min": float(deltas[best]),
                "n_active": float(counts[best]), **out}


KKT_RESIDUAL_FIELDS = {
    "residual_min": FieldDoc("relative KKT residual (stationarity + complementary slackness) "
                             "of the margin-normalised direction for min phi^2/2 s.t. "
                             "y_i f(x_i) >= 1, minimised over the active-set tolerances "
                             "delta (0: a KKT point)", "", "lower"),
    "delta_min": FieldDoc("active-set tolerance delta attaining residual_min (the smallest "
                          "on ties): active samples have normalised margin <= 1 + delta"),
    "n_active": FieldDoc("near-active training samples used as constraints at delta_min",
                         "count"),
    "residual_*": FieldDoc("relative KKT residual (stationarity + complementary slackness) "
                           "with the samples of normalised margin <= 1 + delta as the active "
                           "set, delta as in the field name (residual_<delta:.2g>)",
                           "", "lower"),
}
