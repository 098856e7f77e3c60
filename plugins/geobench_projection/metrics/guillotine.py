"""``guillotine``: read-out accuracy of backbone features vs head outputs.

The same probe (``geobench.geometry.probes``: linear probe, k-NN or nearest class
centre) is fitted on the first ``max_train`` training samples and scored on the held-out
split, once on backbone representations f(x) and once on head outputs h(f(x)), the arm in
evaluation mode.  ``gap`` = backbone_accuracy - head_accuracy (P1's guillotine effect:
positive when cutting the head off helps).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from geobench.api import FieldDoc, Metric, MetricContext, MetricParams
from geobench.geometry.probes import knn_accuracy, linear_probe_accuracy, nccc_accuracy
from geobench_projection.metrics.common import features


class GuillotineParams(MetricParams):
    probe: Literal["linear", "knn", "nccc"] = Field("linear", description="read-out")
    k: int = Field(20, ge=1, description="neighbours of the knn probe")
    max_train: int = Field(2048, ge=1, description="training samples the probe is fitted on")


class Guillotine(Metric):
    """Backbone and head read-out accuracies and their difference."""

    params: GuillotineParams

    def score(self, xtr, ytr, xte, yte) -> float:
        if self.params.probe == "linear":
            return linear_probe_accuracy(xtr, ytr, xte, yte)
        if self.params.probe == "knn":
            return knn_accuracy(xtr, ytr, xte, yte, k=self.params.k)
        return nccc_accuracy(xtr, ytr, xte, yte)

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        n = min(self.params.max_train, len(ctx.data.train_x))
        ztr, htr = (t.cpu() for t in features(ctx.arm, ctx.data.train_x[:n]))
        zte, hte = (t.cpu() for t in features(ctx.arm, ctx.data.test_x))
        ytr, yte = ctx.data.train_y[:n].cpu(), ctx.data.test_y.cpu()
        back = self.score(ztr, ytr, zte, yte)
        head = self.score(htr, ytr, hte, yte)
        return {"backbone_accuracy": back, "head_accuracy": head, "gap": back - head}


GUILLOTINE_FIELDS = {
    "backbone_accuracy": FieldDoc("held-out accuracy of the probe on backbone representations",
                                  "fraction", "higher"),
    "head_accuracy": FieldDoc("held-out accuracy of the probe on head outputs", "fraction",
                              "higher"),
    "gap": FieldDoc("backbone minus head probe accuracy (> 0: cutting the head off helps)",
                    "fraction"),
}


def build_guillotine(params: GuillotineParams, ctx) -> Guillotine:
    """Backbone minus head read-out accuracy (linear probe, k-NN or class centres)."""
    return Guillotine(params)
