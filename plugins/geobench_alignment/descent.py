"""Similarity descent: the proxy dynamics of Theorem 1 run on the realised batches.

``Sigma`` is an N x N matrix over the N training samples.  It starts at the cosine
similarity matrix of the arm's embeddings before training (diagonal 1) and follows::

    Sigma_{t+1} = Sigma_t - eta_t * grad_Sigma l_{B_t}(Sigma_t)

with ``eta_t`` the scheduled learning rate of step t and ``B_t`` the batch the engine drew at
step t.  Reading of the Sigma-space loss: the arm's own loss (NT-Xent, NSCL or SupCon with
its tau) applied to the 2B x 2B view-similarity matrix in which both views of sample i are
identified with i -- entry (a, b) is ``Sigma[i(a), i(b)]``, so a positive pair reads the
diagonal ``Sigma_ii`` and each other sample enters the denominator through both its views.
Each off-diagonal entry is one variable shared by the pair (i, k): its gradient sums the
anchors of i and of k.  The update is not projected onto [-1, 1].

Reported on a fixed subset of training samples (``eval_size``, evenly spaced indices) and
their off-diagonal pairs: ``gap`` = ||Sigma_proxy - Sigma_net||_F, ``net_drift`` =
||Sigma_net - Sigma_0||_F, ``proxy_drift`` = ||Sigma_proxy - Sigma_0||_F, ``relative_gap`` =
gap / net_drift (< 1: the proxy is closer to the network than its starting point) and
``change_corr`` = Pearson correlation of the proxy's and the network's changes.

Against the reference arm (``ctx.reference``: the suite's first arm, CL; the arm itself when
the metric runs on it), on the same subset, with ``Sigma_ref`` the reference network's cosine
similarity matrix in the same space (eval mode): ``cka_reference`` =
kernel_cka(Sigma_proxy, Sigma_ref), the proxy's alignment with CL, and ``net_cka_reference``
= kernel_cka(Sigma_net, Sigma_ref), the network's own, for comparison.  Both use the
debiased estimator, which zeroes the diagonals: like the fields above they read only the
off-diagonal pairs (the proxy's moving diagonal does not enter).  NaN without a reference
or with fewer than 4 tracked samples.

Theorem 1's own object.  The theorem couples two similarity-descent runs from one Sigma_0 on
the same batches, one per loss.  Beside the arm's proxy the metric runs a second one under
the reference arm's objective (CL), from the same Sigma_0 and on this arm's batches:
``pair_gap`` = ||Sigma_proxy^arm - Sigma_proxy^ref||_F over all N x N training pairs, and
``pair_tightness`` = pair_gap / D with D the Theorem 1 bound after the steps taken (tau: this
arm's objective; B, C, delta as ``alignment_bound``), NaN where D is infinite; Corollary 1
on the pair: ``pair_cka`` = the (biased, centred) kernel CKA of the two proxies,
``pair_cka_lower`` = (1 − ρ)/(1 + ρ) with ρ = D / ‖H Σ_proxy^ref H‖_F and
``pair_cka_excess`` = pair_cka − pair_cka_lower where that bound is > 0 (else NaN).  Proxies are
not projected onto [-1, 1], so the ceiling 2 sqrt(N (N - 1)) of two cosine similarity
matrices does not bound them and is not used.  Not reported where there is no pair: on the
reference arm itself, for an arm with the same loss (CL'), for an arm or a reference without
a Sigma-space form, and beyond ``max_train``.

Arms whose objective has no Sigma-space form (``ce``), and training sets beyond
``max_train``, get NaN in every field but ``net_cka_reference``, which needs no proxy.

The metric observes training (``Metric.observe``): the engine hands it the batch of every
step after the update, so the proxy folds in exactly the realised sequence between two
evaluations, whatever the schedule.
"""

from __future__ import annotations

import math

import torch
from pydantic import Field
from torch import Tensor

from geobench.api import (
    Arm,
    BuildContext,
    FieldDoc,
    Metric,
    MetricContext,
    MetricParams,
    Objective,
    StepEvent,
)
from geobench.geometry import similarity_matrix
from geobench.geometry.similarity import kernel_cka
from geobench_alignment.bound import (
    centred_norm,
    excess,
    log_theorem1_bound,
    lower_bound,
    tightness,
)
from geobench_alignment.metrics import Space, representations
from geobench_alignment.objectives import NSCL, NTXent, SupCon

_NAN = float("nan")
FIELDS = ("gap", "net_drift", "proxy_drift", "relative_gap", "change_corr", "cka_reference",
          "net_cka_reference")


def has_sigma_form(objective: Objective) -> bool:
    """Whether the objective is a function of cosine similarities (CL, NSCL, SupCon)."""
    return isinstance(objective, NTXent | NSCL | SupCon)


def sigma_loss(objective: Objective, block: Tensor, labels: Tensor) -> Tensor:
    """The objective's batch loss as a function of the (B, B) similarity block ``S``.

    With both views of sample i identified with i, anchor i sees its positive through
    ``S_ii`` and every other sample k through both of k's views, i.e. logits
    ``L_ii = S_ii / tau`` and ``L_ik = S_ik / tau + log 2`` (k != i); the loss is the mean
    over anchors of the objective's per-anchor term on these logits (NT-Xent: all k; NSCL:
    only k of another class, the positive kept or not; SupCon: positives ``S_ii`` and the
    two views of each same-class k, so weights 1 and 2 over ``1 + 2 m_i``).  This equals the
    objective's own loss applied to the 2B x 2B view matrix ``[[S, S], [S, S]]``.
    """
    if not has_sigma_form(objective):
        raise TypeError(f"{type(objective).__name__} has no similarity-space form")
    b = block.shape[0]
    eye = torch.eye(b, dtype=torch.bool, device=block.device)
    logits = block / objective.tau + (~eye).to(block.dtype) * math.log(2.0)
    positive = block.diagonal() / objective.tau
    if isinstance(objective, NTXent):
        return (torch.logsumexp(logits, dim=1) - positive).mean()
    same = labels[:, None] == labels[None, :]
    if isinstance(objective, NSCL):
        keep = ~same | eye if objective.positive_in_denominator else ~same
        rows = keep.any(dim=1)  # without the positive: anchors with no negative drop out
        if not rows.any():
            return block.sum() * 0.0
        terms = torch.logsumexp(logits.masked_fill(~keep, float("-inf")), dim=1) - positive
        return terms[rows].mean()
    weights = same.to(block.dtype) * (1.0 + (~eye).to(block.dtype))  # 1 on the diagonal, 2 off
    pos = (weights * block).sum(1) / objective.tau / weights.sum(1)
    return (torch.logsumexp(logits, dim=1) - pos).mean()


def sigma_gradient(objective: Objective, block: Tensor, labels: Tensor) -> Tensor:
    """Gradient w.r.t. the symmetric variables of the block: G + G^T off the diagonal."""
    leaf = block.detach().clone().requires_grad_(True)
    with torch.enable_grad():
        (grad,) = torch.autograd.grad(sigma_loss(objective, leaf, labels), leaf)
    return grad + grad.T - torch.diag(grad.diagonal())


def proxy_step(sigma: Tensor, objective: Objective, index: Tensor, labels: Tensor,
               lr: float) -> None:
    """One in-place similarity-descent step on the rows/columns ``index`` (no repeats)."""
    rows, cols = index[:, None], index[None, :]
    sigma[rows, cols] -= lr * sigma_gradient(objective, sigma[rows, cols], labels)


class DescentParams(MetricParams):
    every: int | None = Field(
        1, ge=1, description="evaluate at steps 0, every, 2*every, ...; always at the end"
    )
    space: Space = Field("head", description="embeddings whose similarities are tracked")
    max_train: int = Field(
        4096, ge=2, description="largest training set tracked (Sigma is N x N float64); "
        "beyond it the proxy's fields are NaN"
    )
    eval_size: int = Field(256, ge=2, description="training samples the gap is measured on")
    delta: float = Field(0.05, gt=0, lt=1, description="failure probability of the bound")


def _same_loss(a: Objective, b: Objective) -> bool:
    """Whether two contrastive objectives are the same loss (class, tau, NSCL's convention)."""
    return type(a) is type(b) and a.tau == b.tau and getattr(
        a, "positive_in_denominator", None) == getattr(b, "positive_in_denominator", None)


def _offdiag(m: Tensor) -> Tensor:
    return m[~torch.eye(m.shape[0], dtype=torch.bool, device=m.device)]


def _corr(a: Tensor, b: Tensor) -> float:
    a, b = a - a.mean(), b - b.mean()
    den = float(a.norm() * b.norm())
    return float((a * b).sum()) / den if den > 0 else _NAN


def _cka(sigma: Tensor, ref: Tensor | None) -> float:
    """Debiased kernel CKA; NaN without a reference or below the estimator's 4 samples."""
    if ref is None or sigma.shape[0] < 4:
        return _NAN
    return kernel_cka(sigma, ref.to(sigma.device))


def _corollary(sigma: Tensor, reference: Tensor, log_d: float) -> dict[str, float]:
    """Corollary 1 on the two proxies: their (biased) kernel CKA, its lower bound
    (1 − ρ)/(1 + ρ) with ρ = D / ‖H Σ_ref H‖_F, and the excess over an informative bound."""
    norm = centred_norm(reference.to(torch.float64))
    lower = _NAN if math.isnan(log_d) or norm == 0 else lower_bound(log_d - math.log(norm))
    cka = kernel_cka(sigma, reference, debiased=False)
    return {"pair_cka": cka, "pair_cka_lower": lower, "pair_cka_excess": excess(cka, lower)}


class SimilarityDescent(Metric):
    """Similarity-descent proxy vs the network's own similarity matrix (per arm)."""

    def __init__(self, params: DescentParams) -> None:
        super().__init__(params)
        self.sigma: Tensor | None = None
        self.paired: Tensor | None = None  # the proxy under the reference arm's objective
        self.paired_objective: Objective | None = None  # kept: that arm may diverge later
        self.start: Tensor | None = None
        self.subset: Tensor | None = None
        self.applied = 0  # steps folded into sigma
        self.queue: dict[int, Tensor] = {}  # step -> index of its batch, as trained

    def _init(self, ctx: MetricContext, subset: Tensor) -> None:
        z = representations(ctx.arm, ctx.data.train_x, self.params.space)
        self.sigma = similarity_matrix(z)
        ref = ctx.reference
        if ref is not None and has_sigma_form(ref.objective) \
                and not _same_loss(ref.objective, ctx.arm.objective):
            self.paired, self.paired_objective = self.sigma.clone(), ref.objective
        self.start = self.sigma[subset][:, subset].clone()
        self.applied = ctx.step

    def _net_sigma(self, the_arm: Arm, ctx: MetricContext, subset: Tensor) -> Tensor:
        """The arm's cosine similarity matrix over the tracked samples."""
        z = representations(the_arm, ctx.data.train_x[subset], self.params.space)
        return similarity_matrix(z)

    def observe(self, event: StepEvent) -> None:
        """Remember the batch each training step used, from the first evaluation on."""
        if self.sigma is not None and event.step >= self.applied:
            self.queue[event.step] = event.batch.index

    def _catch_up(self, ctx: MetricContext) -> None:
        """Fold the observed steps since the last evaluation into sigma."""
        assert self.sigma is not None
        labels = ctx.data.train_y.to(self.sigma.device)
        while self.applied < ctx.step:
            t = self.applied
            if t not in self.queue:
                raise RuntimeError(f"similarity_descent: training step {t} was not observed "
                                   "(the metric follows training through Metric.observe)")
            index = self.queue.pop(t).to(self.sigma.device)
            proxy_step(self.sigma, ctx.arm.objective, index, labels[index], ctx.lrs[t])
            if self.paired is not None:
                proxy_step(self.paired, self.paired_objective, index, labels[index],
                           ctx.lrs[t])
            self.applied += 1

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        n = ctx.data.train_x.shape[0]
        if self.subset is None:
            m = min(self.params.eval_size, n)
            self.subset = torch.linspace(0, n - 1, m, dtype=torch.float64).round().long()
        subset = self.subset.to(ctx.data.train_x.device)
        net_sigma = self._net_sigma(ctx.arm, ctx, subset)
        ref_sigma = None
        if ctx.reference is not None:
            ref_sigma = (net_sigma if ctx.reference is ctx.arm
                         else self._net_sigma(ctx.reference, ctx, subset))
        out = dict.fromkeys(FIELDS, _NAN)
        out["net_cka_reference"] = _cka(net_sigma, ref_sigma)
        if n > self.params.max_train or not has_sigma_form(ctx.arm.objective):
            return out
        if self.sigma is None:
            self._init(ctx, subset)
        self._catch_up(ctx)
        assert self.sigma is not None and self.start is not None
        subset = subset.to(self.sigma.device)
        proxy_sigma = self.sigma[subset][:, subset]
        net = _offdiag(net_sigma.to(self.sigma.device))
        proxy = _offdiag(proxy_sigma)
        start = _offdiag(self.start)
        gap, drift = float((proxy - net).norm()), float((net - start).norm())
        out.update({
            "gap": gap,
            "net_drift": drift,
            "proxy_drift": float((proxy - start).norm()),
            "relative_gap": gap / drift if drift > 0 else _NAN,
            "change_corr": _corr(proxy - start, net - start),
            "cka_reference": _cka(proxy_sigma, ref_sigma),
        })
        if self.paired is not None:
            out["pair_gap"] = float((self.sigma - self.paired).norm())
            log_d = log_theorem1_bound(ctx.lrs, ctx.arm.objective.tau, ctx.data.batch_size,
                                       ctx.data.num_classes, self.params.delta)
            out["pair_tightness"] = tightness(out["pair_gap"], log_d, math.inf)
            out.update(_corollary(self.sigma, self.paired, log_d))
        return out


def build_similarity_descent(params: DescentParams, ctx: BuildContext) -> SimilarityDescent:
    return SimilarityDescent(params)


SIMILARITY_DESCENT_FIELDS = {
    "gap": FieldDoc("‖Sigma_proxy - Sigma_net‖_F over the tracked samples' off-diagonal "
                    "pairs"),
    "net_drift": FieldDoc("‖Sigma_net - Sigma_0‖_F: how far the network's similarities "
                          "moved from the start"),
    "proxy_drift": FieldDoc("‖Sigma_proxy - Sigma_0‖_F: how far the similarity-descent "
                            "proxy moved from the start"),
    "relative_gap": FieldDoc("gap over net_drift (< 1: the proxy is closer to the network "
                             "than its starting point)"),
    "change_corr": FieldDoc("Pearson correlation of the proxy's and the network's changes "
                            "since the start"),
    "pair_gap": FieldDoc("‖Sigma_proxy^arm - Sigma_proxy^ref‖_F over all training pairs: "
                         "two similarity-descent runs from one Sigma_0 on the same batches, "
                         "one per loss (Theorem 1's own object)"),
    "pair_tightness": FieldDoc("pair_gap over Theorem 1's bound (<= 1: it holds); NaN where "
                               "the bound is infinite"),
    "pair_cka": FieldDoc("kernel CKA (biased, centred) of the two proxies over all training "
                         "pairs: Corollary 1's CKA on Theorem 1's own object"),
    "pair_cka_lower": FieldDoc("Corollary 1's lower bound (1 - rho)/(1 + rho) on pair_cka, "
                               "rho = D / ‖H Sigma_proxy^ref H‖_F"),
    "pair_cka_excess": FieldDoc("pair_cka - pair_cka_lower where the bound is > 0, else NaN "
                                "(>= 0: the corollary holds where it says something)"),
    "cka_reference": FieldDoc("debiased kernel CKA of Sigma_proxy and the reference (CL) arm's "
                              "network Sigma on the tracked samples (off-diagonal entries): "
                              "the proxy's alignment with CL"),
    "net_cka_reference": FieldDoc("debiased kernel CKA of this arm's and the reference (CL) "
                                  "arm's network Sigma on the same samples: the network's own "
                                  "alignment with CL, beside cka_reference"),
}
