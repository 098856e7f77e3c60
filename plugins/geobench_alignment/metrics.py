"""Cross-arm alignment metrics on the fixed reference set: CKA, RSA, similarity gap,
weight distance.

Each is called once per non-reference arm with ``ctx.reference`` (the suite's first arm,
CL in the alignment suite) and ``ctx.arm``, and stored under ``<reference>~<arm>/``.
Representations are computed in eval mode without gradients on
``ctx.data.reference_x``; ``space`` picks the backbone features f(x) (default: the
representation a downstream task uses) or the head outputs h(f(x)) (where the loss acts).
"""

from __future__ import annotations

from typing import ClassVar, Literal

import torch
from pydantic import Field
from torch import Tensor

from geobench.api import Arm, BuildContext, FieldDoc, Metric, MetricContext, MetricParams
from geobench.geometry import frobenius_gap, linear_cka, rsa, similarity_matrix

Space = Literal["backbone", "head"]


def representations(arm: Arm, x: Tensor, space: Space, chunk: int = 1024) -> Tensor:
    """``arm.represent(x)`` (backbone) or ``arm.embed(x)`` (head) in eval mode, no grad."""
    fn = arm.represent if space == "backbone" else arm.embed
    was_training = arm.training
    arm.eval()
    try:
        with torch.no_grad():
            out = [fn(x[s : s + chunk]) for s in range(0, x.shape[0], chunk)]
    finally:
        arm.train(was_training)
    return torch.cat(out).reshape(x.shape[0], -1)


def _pair(ctx: MetricContext, space: Space) -> tuple[Tensor, Tensor]:
    if ctx.reference is None:
        raise ValueError("a cross-arm metric needs ctx.reference")
    x = ctx.data.reference_x
    return representations(ctx.reference, x, space), representations(ctx.arm, x, space)


class SpaceParams(MetricParams):
    space: Space = Field("backbone", description="representation compared: backbone | head")


class CKA(Metric):
    """Linear CKA between the reference arm and this arm on the reference set, in feature
    space: ``HSIC(X, Y) / sqrt(HSIC(X, X) HSIC(Y, Y))`` of the centred representations.

    ``debiased`` (the default the suite, leaderboard and claims read) uses the unbiased HSIC
    of Song et al. (2012): about 0 for unrelated representations, possibly negative.
    ``biased`` is the Kornblith et al. (2019) estimator ``||Xc^T Yc||_F^2 / (||Xc^T Xc||_F
    ||Yc^T Yc||_F)``, kept as a named variant: its floor for unrelated features is high at
    small n (about 0.2 for independent Gaussians at n = 256, d = 64).
    """

    cross_arm: ClassVar[bool] = True

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        a, b = _pair(ctx, self.params.space)
        return {"debiased": linear_cka(a, b, debiased=True), "biased": linear_cka(a, b)}


CKA_FIELDS = {
    "debiased": FieldDoc("linear CKA with the unbiased HSIC estimator (~0 for unrelated "
                         "representations, may be negative) between the reference arm's and "
                         "this arm's representations of the reference set; the default"),
    "biased": FieldDoc("linear CKA with the biased HSIC estimator (Kornblith et al. 2019); "
                       "inflated at small n (about 0.2 for unrelated features at n = 256, "
                       "d = 64)"),
}


class RSAParams(SpaceParams):
    rdm: Literal["correlation", "cosine", "euclidean"] = Field(
        "correlation", description="dissimilarity: 1 - Pearson, 1 - cosine, or euclidean"
    )
    compare: Literal["pearson", "spearman"] = Field(
        "pearson", description="correlation of the RDMs' off-diagonal entries"
    )


class RSA(Metric):
    """RSA: correlation of the two arms' representational (dis)similarity matrices over the
    reference set's off-diagonal pairs i < j.

    ``value``: ours, per the params -- RDM ``rdm`` (default correlation, 1 - Pearson(x_i,
    x_j)) compared with ``compare`` (default Pearson).  ``authors_pearson`` /
    ``authors_spearman``: the paper authors' form -- the cosine similarity matrices
    ``Sigma_ij = cos(z_i, z_j)`` of the two representations, correlated (Pearson / Spearman)
    over their entries i < j.  (Both correlations are unchanged by ``Sigma -> 1 - Sigma``,
    so these are the cosine-RDM RSA.)
    """

    cross_arm: ClassVar[bool] = True

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        a, b = _pair(ctx, self.params.space)
        return {
            "value": rsa(a, b, rdm=self.params.rdm, compare=self.params.compare),
            "authors_pearson": rsa(a, b, rdm="cosine", compare="pearson"),
            "authors_spearman": rsa(a, b, rdm="cosine", compare="spearman"),
        }


RSA_FIELDS = {
    "value": FieldDoc("ours: correlation (params compare, default Pearson) of the reference "
                      "arm's and this arm's RDMs (params rdm, default 1 - Pearson "
                      "correlation) over off-diagonal pairs of the reference set"),
    "authors_pearson": FieldDoc("the authors' RSA: Pearson correlation of the two arms' cosine "
                                "similarity matrices over their off-diagonal (i < j) entries"),
    "authors_spearman": FieldDoc("the authors' RSA with Spearman correlation of the two arms' "
                                 "cosine similarity matrices over their off-diagonal entries"),
}


class SimilarityGap(Metric):
    """``||Sigma^ref - Sigma^arm||_F`` of the cosine similarity matrices on the reference set.

    ``frobenius`` is the raw gap (the quantity Theorem 1 bounds), ``relative`` divides it by
    ``||Sigma^ref||_F`` and ``per_entry`` by n (the RMS entry difference).
    """

    cross_arm: ClassVar[bool] = True

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        a, b = _pair(ctx, self.params.space)
        sa, sb = similarity_matrix(a), similarity_matrix(b)
        gap = frobenius_gap(sa, sb)
        return {
            "frobenius": gap,
            "relative": gap / float(torch.linalg.norm(sa)),
            "per_entry": gap / sa.shape[0],
        }


SIMILARITY_GAP_FIELDS = {
    "frobenius": FieldDoc("‖Sigma_ref - Sigma_arm‖_F of the cosine similarity matrices on "
                          "the reference set (the quantity Theorem 1 bounds)"),
    "relative": FieldDoc("the Frobenius gap over ‖Sigma_ref‖_F"),
    "per_entry": FieldDoc("the Frobenius gap over n: RMS difference of similarity entries"),
}


def _flat(module: torch.nn.Module) -> Tensor:
    params = [p.detach().reshape(-1).to(torch.float64) for p in module.parameters()]
    return torch.cat(params) if params else torch.zeros(0, dtype=torch.float64)


def _relative(a: Tensor, b: Tensor) -> float:
    ref = float(a.norm())
    return float((a - b).norm()) / ref if ref > 0 else float("nan")


class WeightDistance(Metric):
    """Relative parameter-space distance ``||theta^ref - theta^arm|| / ||theta^ref||``.

    Over the shared network (``network``: backbone and head), and per part (``backbone``,
    ``head``).  Objective-owned modules (a CE classifier) are not shared and are excluded.
    """

    cross_arm: ClassVar[bool] = True

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        if ctx.reference is None:
            raise ValueError("weight_distance needs ctx.reference")
        out = {}
        for part in ("backbone", "head"):
            out[part] = (_flat(getattr(ctx.reference, part)), _flat(getattr(ctx.arm, part)))
        ref = torch.cat([out["backbone"][0], out["head"][0]])
        arm = torch.cat([out["backbone"][1], out["head"][1]])
        result = {"network": _relative(ref, arm)}
        result.update({part: _relative(*pair) for part, pair in out.items()})
        return result


WEIGHT_DISTANCE_FIELDS = {
    "network": FieldDoc("‖theta_ref - theta_arm‖ / ‖theta_ref‖ over backbone and head "
                        "parameters"),
    "backbone": FieldDoc("relative parameter distance to the reference arm, backbone only"),
    "head": FieldDoc("relative parameter distance to the reference arm, head only"),
}


def build_cka(params: SpaceParams, ctx: BuildContext) -> CKA:
    return CKA(params)


def build_rsa(params: RSAParams, ctx: BuildContext) -> RSA:
    return RSA(params)


def build_similarity_gap(params: SpaceParams, ctx: BuildContext) -> SimilarityGap:
    return SimilarityGap(params)


def build_weight_distance(params: MetricParams, ctx: BuildContext) -> WeightDistance:
    return WeightDistance(params)
