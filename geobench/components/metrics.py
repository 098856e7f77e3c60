"""Harness-level metrics: held-out loss and read-out accuracies of backbone or head features."""

from __future__ import annotations

import abc
from typing import Literal

import torch
from pydantic import Field
from torch import Tensor

from geobench.contract.interfaces import (
    Arm,
    Batch,
    FieldDoc,
    Metric,
    MetricContext,
    MetricParams,
    augmentation_on,
)
from geobench.geometry.probes import knn_accuracy, linear_probe_accuracy, nccc_accuracy
from geobench.geometry.rank import effective_rank


@torch.no_grad()
def features(arm: Arm, x: Tensor, space: str, chunk: int = 512) -> Tensor:
    """Backbone (``space='backbone'``) or head outputs of ``x``, computed in chunks."""
    fn = arm.represent if space == "backbone" else arm.embed
    return torch.cat([fn(x[i:i + chunk]).flatten(1) for i in range(0, len(x), chunk)]).cpu()


class ReadoutParams(MetricParams):
    space: Literal["backbone", "head"] = Field("backbone", description="features read out")
    max_train: int = Field(2048, ge=1, description="training samples used to fit the read-out")


class _Readout(Metric):
    """Fit on (up to ``max_train``) training features, score on the held-out split."""

    @abc.abstractmethod
    def score(self, xtr: Tensor, ytr: Tensor, xte: Tensor, yte: Tensor) -> float:
        """Accuracy on (xte, yte) of a read-out fitted on (xtr, ytr)."""

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        n = min(self.params.max_train, len(ctx.data.train_x))
        xtr = features(ctx.arm, ctx.data.train_x[:n], self.params.space)
        xte = features(ctx.arm, ctx.data.test_x, self.params.space)
        ytr, yte = ctx.data.train_y[:n].cpu(), ctx.data.test_y.cpu()
        return {"accuracy": self.score(xtr, ytr, xte, yte)}


class LinearProbeParams(ReadoutParams):
    max_iter: int = Field(200, ge=1, description="L-BFGS iterations of the probe's fit")


class LinearProbe(_Readout):
    """Linear-probe test accuracy (multinomial logistic regression, L-BFGS)."""

    def score(self, xtr, ytr, xte, yte):
        return linear_probe_accuracy(xtr, ytr, xte, yte, max_iter=self.params.max_iter)


LINEAR_PROBE_FIELDS = {
    "accuracy": FieldDoc("held-out accuracy of a multinomial logistic-regression probe fitted "
                         "on training features", "fraction", "higher"),
}


class KnnParams(ReadoutParams):
    k: int = Field(20, ge=1, description="neighbours (cosine similarity)")


class Knn(_Readout):
    """k-nearest-neighbour test accuracy under cosine similarity."""

    def score(self, xtr, ytr, xte, yte):
        return knn_accuracy(xtr, ytr, xte, yte, k=self.params.k)


KNN_FIELDS = {
    "accuracy": FieldDoc("held-out accuracy of a k-nearest-neighbour (cosine) classifier on "
                         "training features", "fraction", "higher"),
}


class Nccc(_Readout):
    """Nearest class-centre test accuracy."""

    def score(self, xtr, ytr, xte, yte):
        return nccc_accuracy(xtr, ytr, xte, yte)


NCCC_FIELDS = {
    "accuracy": FieldDoc("held-out accuracy of the nearest class-centre classifier built from "
                         "training features", "fraction", "higher"),
}


class EvalLossParams(MetricParams):
    max_batches: int = Field(8, ge=1, description="held-out batches averaged")


class EvalLoss(Metric):
    """The arm's objective on held-out batches (views of the test samples, from the metric's
    own generator)."""

    @torch.no_grad()
    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        size = min(ctx.data.batch_size, len(ctx.data.test_x))
        n_views = type(ctx.arm.objective).n_views
        augment = augmentation_on(ctx.augmentation, "test")
        losses = []
        for b, start in enumerate(range(0, len(ctx.data.test_x) - size + 1, size)):
            if b >= self.params.max_batches:
                break
            index = torch.arange(start, start + size, device=ctx.data.test_x.device)
            batch = Batch(ctx.data.test_x[index], ctx.data.test_y[index], index, ctx.step)
            views = [augment(batch.x, index, ctx.generator, view=v) for v in range(n_views)]
            losses.append(float(ctx.arm.objective(ctx.arm, batch, views)))
        return {"value": sum(losses) / len(losses)}


EVAL_LOSS_FIELDS = {
    "value": FieldDoc("the arm's training objective averaged over held-out batches", "",
                      "lower"),
}


class EffectiveRankParams(MetricParams):
    space: Literal["backbone", "head"] = Field("backbone", description="features measured")
    samples: int = Field(256, ge=2, description="reference samples used")
    center: bool = Field(True, description="subtract the mean feature first")


class EffectiveRank(Metric):
    """Effective rank (Roy & Vetterli 2007) exp(-Σ p_k log p_k), p_k = s_k / Σ s, of the
    reference set's features (s: singular values; centred unless ``center: false``)."""

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        x = ctx.data.reference_x[: self.params.samples]
        z = features(ctx.arm, x, self.params.space)
        return {"erank": effective_rank(z, center=self.params.center)}


EFFECTIVE_RANK_FIELDS = {
    "erank": FieldDoc("effective rank of the features on the reference set (centred: 0 when "
                      "every sample has the same features; at most the feature width)",
                      "dimensions", "diagnostic"),
}
