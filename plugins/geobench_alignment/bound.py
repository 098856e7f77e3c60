"""Theorem 1 of Luthra, Mishra & Galanti (2025) and its CKA / RSA corollaries, next to the
measured alignment.

Theorem 1 (with probability >= 1 - delta, for any step sizes eta_0..eta_{T-1})::

    ||Sigma^CL_T - Sigma^NSCL_T||_F <= D = exp(S / (2 tau^2 B)) * S / (tau sqrt(B)) * Delta
    Delta   = 2 e^{2/tau} (1/C + eps) / (1 - 1/C - eps),   S = sum_t eta_t
    eps     = sqrt( log(T B / delta) / (2B) )

When ``1 - 1/C - eps <= 0`` the bound is infinite.  It is evaluated in log space: for small
tau and many steps it is astronomically large (1e28 and beyond).

Vacuity.  Two n x n cosine similarity matrices have unit diagonals and entries in [-1, 1],
so ``||Sigma^a - Sigma^b||_F <= 2 sqrt(n (n - 1))`` always.  The bound says nothing on a set
of n inputs when ``D = inf`` or ``D >= 2 sqrt(n (n - 1))``: it is *vacuous* there.  Its
*tightness* is the measured gap over the bound (<= 1: the bound holds), reported only where
it is not vacuous, and computed as ``exp(log gap - log D)``.

Reading of the corollaries used here.  Let ``D`` be the bound, ``Sigma`` the cosine
similarity matrix of the reference arm's embeddings on the reference set and ``H`` the
centring matrix.  Centring is non-expansive, so ``||H Sigma^a H - H Sigma^b H||_F <= D``; with
``rho_T = D / ||H Sigma^ref H||_F`` the linear CKA of the l2-normalised embeddings (= the
kernel CKA of the two Sigma) satisfies ``CKA_T >= (1 - rho_T) / (1 + rho_T)``.  Likewise
with ``u`` the off-diagonal entries of Sigma minus their mean, ``r_T = D / ||u^ref||_2``
gives ``RSA_T >= (1 - r_T) / (1 + r_T)`` for the Pearson RSA of the cosine RDMs
``1 - Sigma``.  ``(1 - x) / (1 + x) = -tanh(log(x) / 2)`` keeps both finite for any x.
"""

from __future__ import annotations

import math
import sys
from typing import ClassVar

import torch
from pydantic import Field

from geobench.api import BuildContext, FieldDoc, Metric, MetricContext
from geobench.geometry import frobenius_gap, linear_cka, rsa, similarity_matrix
from geobench_alignment.metrics import Space, SpaceParams, representations

_NAN = float("nan")
_LOG_MAX = math.log(sys.float_info.max)


def log_theorem1_bound(
    lrs: list[float], tau: float, batch_size: int, num_classes: int, delta: float
) -> float:
    """Natural log of the Theorem 1 bound (``inf`` when vacuous, ``-inf`` when S = 0)."""
    steps, total = len(lrs), float(sum(lrs))
    if steps == 0 or total <= 0.0:
        return -math.inf
    b, c = batch_size, num_classes
    eps = math.sqrt(math.log(steps * b / delta) / (2 * b))
    den = 1.0 - 1.0 / c - eps
    if den <= 0.0:
        return math.inf
    log_delta = math.log(2.0) + 2.0 / tau + math.log(1.0 / c + eps) - math.log(den)
    return total / (2 * tau**2 * b) + math.log(total / (tau * math.sqrt(b))) + log_delta


def log_trivial_bound(n: int) -> float:
    """Natural log of ``2 sqrt(n (n - 1))``, the largest possible ``||Sigma^a - Sigma^b||_F``
    of two n x n cosine similarity matrices (``-inf`` for n <= 1)."""
    return math.log(2.0) + 0.5 * math.log(n * (n - 1)) if n > 1 else -math.inf


def tightness(gap: float, log_bound: float, log_trivial: float) -> float:
    """``gap / D`` as ``exp(log gap - log D)``; NaN when D is unknown (NaN), vacuous
    (``log D >= log_trivial``, infinite included) or when gap = D = 0."""
    if math.isnan(log_bound) or log_bound >= log_trivial:
        return _NAN
    log_t = _log(gap) - log_bound
    if math.isnan(log_t):
        return _NAN
    return math.inf if log_t > _LOG_MAX else math.exp(log_t)


def lower_bound(log_ratio: float) -> float:
    """``(1 - x) / (1 + x)`` for ``x = exp(log_ratio)`` (1 at x = 0, -1 as x -> inf)."""
    if log_ratio == -math.inf:
        return 1.0
    if log_ratio == math.inf:
        return -1.0
    return -math.tanh(log_ratio / 2.0)


def centred_norm(k: torch.Tensor) -> float:
    """``‖H K H‖_F`` with ``H = I - 11ᵀ/n``, in K's dtype: the norm the CKA corollary divides
    the bound by."""
    centred = k - k.mean(0, keepdim=True)  # one n x n buffer, the rest in place
    return float(torch.linalg.norm(centred.sub_(k.mean(1, keepdim=True)).add_(k.mean())))


def excess(measured: float, lower: float) -> float:
    """``measured - lower`` where the corollary's lower bound is informative (> 0), else NaN:
    a bound at or below 0 says nothing about an alignment that matters."""
    return measured - lower if lower > 0 else _NAN


def _log(x: float) -> float:
    return math.log(x) if x > 0 else -math.inf


def _finite(x: float) -> float:
    return x if math.isfinite(x) else _NAN


class BoundParams(SpaceParams):
    space: Space = Field("head", description="embeddings the similarity matrices use")
    delta: float = Field(0.05, gt=0, lt=1, description="failure probability delta")
    tau: float | None = Field(
        None, gt=0, description="temperature (default: the arm's objective tau, else the "
        "reference arm's)"
    )


class AlignmentBound(Metric):
    """Theorem 1 bound and the CKA / RSA lower bounds vs the measured values (cross-arm).

    Inputs: tau (param, else ``arm.objective.tau``, else the reference arm's), B =
    ``ctx.data.batch_size``, C = ``ctx.data.num_classes`` (the classes trained on), T and the
    step sizes = ``ctx.lrs`` (the scheduled learning rates of the steps taken so far).
    The theorem covers the CL-NSCL pair; for other arms the same bound is shown for
    comparison.  Both arms' embeddings (``space``) are computed in eval mode, on the
    reference set (n rows) and on the current training batch's views ``torch.cat(ctx.views)``
    (m = 2B rows: metrics run before the step's update, so these are the inputs the loss
    takes right after; the final evaluation's batch is drawn but not trained on).

    Fields: ``log10_bound`` (log10 D, NaN if infinite), ``gap`` = ||Sigma^ref - Sigma^arm||_F
    on the reference set, ``gap_batch`` the same on the batch, ``vacuous`` = 1 if D = inf or
    D >= 2 sqrt(n (n - 1)) else 0, ``tightness`` = gap / D (NaN if vacuous),
    ``tightness_batch`` = gap_batch / D (NaN if D = inf or D >= 2 sqrt(m (m - 1))),
    ``log10_rho``, ``cka_lower``, ``cka``, ``log10_r``, ``rsa_lower``, ``rsa`` (measured),
    ``cka_excess`` = cka − cka_lower and ``rsa_excess`` = rsa − rsa_lower where the lower
    bound is informative (> 0; NaN elsewhere): ≥ 0 wherever the corollary holds.
    Everything that depends on D is NaN when tau is unknown.
    """

    cross_arm: ClassVar[bool] = True

    def _tau(self, ctx: MetricContext) -> float | None:
        if self.params.tau is not None:
            return self.params.tau
        for arm in (ctx.arm, ctx.reference):
            tau = getattr(getattr(arm, "objective", None), "tau", None)
            if tau is not None:
                return float(tau)
        return None

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        if ctx.reference is None:
            raise ValueError("alignment_bound needs ctx.reference")
        x = ctx.data.reference_x
        za = representations(ctx.reference, x, self.params.space)
        zb = representations(ctx.arm, x, self.params.space)
        sa, sb = similarity_matrix(za), similarity_matrix(zb)
        gap = frobenius_gap(sa, sb)
        views = torch.cat(ctx.views)
        batch_gap = frobenius_gap(
            similarity_matrix(representations(ctx.reference, views, self.params.space)),
            similarity_matrix(representations(ctx.arm, views, self.params.space)),
        )
        n = sa.shape[0]
        off = sa[~torch.eye(n, dtype=torch.bool, device=sa.device)]
        off = off - off.mean()
        tau = self._tau(ctx)
        log_d = _NAN if tau is None else log_theorem1_bound(
            ctx.lrs, tau, ctx.data.batch_size, ctx.data.num_classes, self.params.delta
        )
        log_rho = log_d - _log(centred_norm(sa))
        log_r = log_d - _log(float(off.norm()))
        log_trivial = log_trivial_bound(n)
        ln10 = math.log(10.0)
        cka_lower = _NAN if math.isnan(log_rho) else lower_bound(log_rho)
        rsa_lower = _NAN if math.isnan(log_r) else lower_bound(log_r)
        cka = linear_cka(_unit(za), _unit(zb))
        rsa_value = rsa(za, zb, rdm="cosine", compare="pearson")
        return {
            "log10_bound": _finite(log_d / ln10),
            "gap": gap,
            "gap_batch": batch_gap,
            "vacuous": _NAN if math.isnan(log_d) else float(log_d >= log_trivial),
            "tightness": tightness(gap, log_d, log_trivial),
            "tightness_batch": tightness(batch_gap, log_d, log_trivial_bound(views.shape[0])),
            "log10_rho": _finite(log_rho / ln10),
            "cka_lower": cka_lower,
            "cka": cka,
            "cka_excess": excess(cka, cka_lower),
            "log10_r": _finite(log_r / ln10),
            "rsa_lower": rsa_lower,
            "rsa": rsa_value,
            "rsa_excess": excess(rsa_value, rsa_lower),
        }


ALIGNMENT_BOUND_FIELDS = {
    "log10_bound": FieldDoc("log10 of Theorem 1's bound on ‖Sigma_ref - Sigma_arm‖_F after "
                            "the steps taken (NaN if infinite or tau unknown)"),
    "gap": FieldDoc("measured ‖Sigma_ref - Sigma_arm‖_F of the cosine similarity matrices "
                    "of the reference set"),
    "gap_batch": FieldDoc("measured ‖Sigma_ref - Sigma_arm‖_F of the cosine similarity "
                          "matrices of the current training batch's 2B views (eval mode)"),
    "vacuous": FieldDoc("1 when the bound is infinite or >= 2 sqrt(n(n-1)), the largest "
                        "possible gap on the n reference inputs, else 0 (NaN: tau unknown)"),
    "tightness": FieldDoc("gap / bound on the reference set (<= 1: the bound holds); NaN when "
                          "vacuous"),
    "tightness_batch": FieldDoc("gap_batch / bound (<= 1: the bound holds); NaN when the bound "
                                "is infinite or >= 2 sqrt(m(m-1)), m = 2B batch rows"),
    "log10_rho": FieldDoc("log10 of the bound over ‖H Sigma_ref H‖_F (centred), CKA "
                          "corollary's rho_T"),
    "cka_lower": FieldDoc("Theorem 1's lower bound (1 - rho_T)/(1 + rho_T) on the CKA"),
    "cka": FieldDoc("measured linear CKA of the l2-normalised embeddings"),
    "log10_r": FieldDoc("log10 of the bound over the norm of the centred off-diagonal "
                        "similarities, RSA corollary's r_T"),
    "rsa_lower": FieldDoc("Theorem 1's lower bound (1 - r_T)/(1 + r_T) on the RSA"),
    "rsa": FieldDoc("measured Pearson RSA of the cosine RDMs"),
    "cka_excess": FieldDoc("cka - cka_lower where cka_lower > 0, else NaN (>= 0: Corollary 1 "
                           "holds where it says something)"),
    "rsa_excess": FieldDoc("rsa - rsa_lower where rsa_lower > 0, else NaN (>= 0: Corollary 2 "
                           "holds where it says something)"),
}


def _unit(z: torch.Tensor) -> torch.Tensor:
    z = z.to(torch.float64)
    return z / z.norm(dim=1, keepdim=True).clamp_min(1e-12)


def build_alignment_bound(params: BoundParams, ctx: BuildContext) -> AlignmentBound:
    return AlignmentBound(params)
