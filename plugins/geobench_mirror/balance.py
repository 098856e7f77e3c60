"""Balance equation of mirror flow (Lemma 3.1) and its drift under discrete steps.

Under mirror flow d/dt ∇R(θ) = −∇L(θ), each layer l with its own separable map satisfies
d/dt Q_l(∇R_l(W_l)) = −⟨W_l, ∇_{W_l} L⟩.  For a network that is 1-homogeneous in each
layer's weights (bias-free ReLU nets without normalisation) ⟨W_l, ∇_{W_l} L⟩ is the same
for every layer, so the differences Q_l − Q_k are conserved; mirror descent with a finite
step (or weight decay, which adds −wd||W_l||²) breaks this.

Layers are the trained parameter tensors (in a bias-free homogeneous net each is one
layer's weight).
"""

from __future__ import annotations

import math

import torch

from geobench.api import FieldDoc, Metric, MetricContext
from geobench_mirror.evaluate import arm_maps


class Balance(Metric):
    """Per-layer dual potentials and the drift of their pairwise differences.

    Fields: ``q_<l>`` = Q_l(∇R_l(W_l)) = Σ_j Q_l(∇R_l(W_lj)) for layer l (0, 1, ...);
    with ΔQ_l = Q_l(now) − Q_l(first evaluation, normally step 0):
    ``drift`` = max_{l,k} |ΔQ_l − ΔQ_k| = max_l ΔQ_l − min_l ΔQ_l (0 under exact flow);
    ``rel_drift`` = drift / max_l |ΔQ_l| (drift relative to how far the potentials moved;
    NaN before they move); ``path`` = Σ_t (max_l δ_l(t) − min_l δ_l(t)) over the evaluations
    so far, δ_l(t) the change of Q_l since the previous evaluation: the path length of the
    differences ΔQ_l − ΔQ_k (for two layers, Σ_t |Δ(ΔQ₀ − ΔQ₁)|), which a sign change of
    the drift cannot cancel; it counts what happens between evaluations only through its
    net effect, so compare it at the same evaluation times.  All three are NaN when the
    metric was not evaluated at step 0 (give it an ``every``).
    """

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        with torch.no_grad():
            qs = [
                float(m.Q(m.grad_R(p.detach().to(torch.float64))).sum())
                for _, p, m in arm_maps(ctx)
            ]
        out = {f"q_{i}": q for i, q in enumerate(qs)}
        if "q_0" not in ctx.history and ctx.step > 0:
            return {**out, "drift": math.nan, "rel_drift": math.nan, "path": math.nan}
        first = [ctx.history.get(f"q_{i}", [(ctx.step, q)])[0][1] for i, q in enumerate(qs)]
        last = [ctx.history.get(f"q_{i}", [(ctx.step, q)])[-1][1] for i, q in enumerate(qs)]
        delta = [q - q0 for q, q0 in zip(qs, first, strict=True)]
        step = [q - q1 for q, q1 in zip(qs, last, strict=True)]
        drift = max(delta) - min(delta)
        moved = max(abs(d) for d in delta)
        out["drift"] = drift
        out["rel_drift"] = drift / moved if moved > 0 else math.nan
        path = ctx.history.get("path", [(ctx.step, 0.0)])[-1][1]
        out["path"] = path + max(step) - min(step)
        return out


BALANCE_FIELDS = {
    "q_*": FieldDoc("dual potential Q_l(grad R_l(W_l)) of trained parameter tensor (layer) l"),
    "drift": FieldDoc("max_l dQ_l - min_l dQ_l, dQ_l the change since the first evaluation "
                      "(0 under exact mirror flow)"),
    "path": FieldDoc("path length of the differences dQ_l - dQ_k over the evaluations: the "
                     "sum of the spread of the layers' changes between evaluations (0 under "
                     "exact mirror flow; cannot cancel)"),
    "rel_drift": FieldDoc("drift over max_l |dQ_l|: balance drift relative to how far the "
                          "potentials moved"),
}
