"""Sparse versus dense features (Thm 4.9): active neurons, sparsity, magnitude pruning.

Effective weight of hidden unit k between consecutive weight tensors W_l (unit k's
incoming weights W_l[k]) and W_{l+1} (its outgoing weights W_{l+1}[:, k]):

    e_k = ||W_l[k]||_2 · ||W_{l+1}[:, k]||_2

— for a two-layer net f(x) = Σ_k a_k relu(w_k·x) this is |a_k|·||w_k||, the quantity left
unchanged by the rescaling w_k → c w_k, a_k → a_k / c.  The weight tensors are the trained
parameters with ndim ≥ 2 in registration order; a convolution's channel k feeding a
linear layer through a flatten takes the block of input columns belonging to channel k.
"""

from __future__ import annotations

import math

import torch
from pydantic import Field
from torch import Tensor, nn
from torch.func import functional_call

from geobench.api import FieldDoc, Metric, MetricContext, MetricParams
from geobench.params import Need
from geobench_mirror.evaluate import arm_maps, device_of
from geobench_mirror.objectives import predictions


def chain_problem(shapes: list[tuple[str, tuple[int, ...]]]) -> str | None:
    """Why the weight tensors among the trained parameters ``(name, shape)``, in order, do
    not chain layer to layer (each one's rows feeding the next one's columns, or a block of
    them through a flatten); None when they do."""
    weights = [(name, tuple(shape)) for name, shape in shapes if len(shape) >= 2]
    if len(weights) < 2:
        return "neuron metrics need at least two weight tensors (one hidden layer)"
    for (a, w), (b, v) in zip(weights, weights[1:], strict=False):
        if not (v[1] == w[0] or (len(v) == 2 and v[1] % w[0] == 0)):
            return f"weights {a} {w} and {b} {v} are not consecutive"
    return None


def chained(wants: str) -> Need:
    """The arm's trained weights, as built for the data, chain layer to layer (an arm
    whose network cannot be built is ``BUILDS``'s or the head's to refuse)."""
    return Need(("layout",), lambda lay: lay.error is not None or
                chain_problem(lay.shapes()) is None, wants,
                says=lambda lay: chain_problem(lay.shapes()))


def effective_weights(weights: list[Tensor]) -> list[Tensor]:
    """Per hidden layer, the effective weights e_k of its units (see module docstring)."""
    problem = chain_problem([(f"[{i}]", w.shape) for i, w in enumerate(weights)])
    if problem is not None:
        raise ValueError(problem)
    layers = []
    for w, v in zip(weights, weights[1:], strict=False):
        n = w.shape[0]
        if v.shape[1] == n:
            out = v.transpose(0, 1).reshape(n, -1)
        else:
            out = v.reshape(v.shape[0], n, -1).transpose(0, 1).reshape(n, -1)
        layers.append(w.reshape(n, -1).norm(dim=1) * out.norm(dim=1))
    return layers


def _layer_weights(ctx: MetricContext) -> list[Tensor]:
    return effective_weights([p.detach().to(torch.float64) for _, p, _ in arm_maps(ctx)
                              if p.ndim >= 2])


def hoyer(e: Tensor) -> float:
    """Hoyer sparsity (sqrt(n) − ||e||_1/||e||_2) / (sqrt(n) − 1): 0 dense, 1 one-hot."""
    n = e.numel()
    return float((math.sqrt(n) - e.abs().sum() / e.norm()) / (math.sqrt(n) - 1.0))


def gini(e: Tensor) -> float:
    """Gini index of |e| (Hurley & Rickard): 1 − 2 Σ_k (c_(k)/||c||_1)(n − k + ½)/n,
    c sorted ascending: 0 for equal entries, → 1 for one non-zero entry."""
    c = e.abs().sort().values
    n = c.numel()
    k = torch.arange(1, n + 1, dtype=c.dtype, device=c.device)
    return float(1.0 - 2.0 * ((c / c.sum()) * (n - k + 0.5) / n).sum())


class ActiveParams(MetricParams):
    threshold: float = Field(
        0.1, gt=0, lt=1, description="active: effective weight > threshold × the layer's max"
    )


class ActiveNeurons(Metric):
    """Hidden units whose effective weight exceeds ``threshold`` × the largest in their
    layer.  Fields: ``active`` (count over all hidden layers), ``fraction`` (of units)."""

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        layers = _layer_weights(ctx)
        active = sum(int((e > self.params.threshold * e.max()).sum()) for e in layers)
        total = sum(e.numel() for e in layers)
        return {"active": float(active), "fraction": active / total}


ACTIVE_NEURONS_FIELDS = {
    "active": FieldDoc("hidden units whose effective weight exceeds threshold x their layer's "
                       "largest, over all hidden layers", "count"),
    "fraction": FieldDoc("active hidden units over all hidden units", "fraction"),
}


class Sparsity(Metric):
    """Hoyer and Gini sparsity of the effective weights, averaged over hidden layers
    (fields ``hoyer``, ``gini``; 0 = all units equal, 1 = a single unit)."""

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        layers = _layer_weights(ctx)
        return {
            "hoyer": sum(hoyer(e) for e in layers) / len(layers),
            "gini": sum(gini(e) for e in layers) / len(layers),
        }


SPARSITY_FIELDS = {
    "hoyer": FieldDoc("Hoyer sparsity of the hidden units' effective weights, mean over "
                      "layers (0: all equal, 1: one unit)"),
    "gini": FieldDoc("Gini index of the hidden units' effective weights, mean over layers "
                     "(0: all equal, 1: one unit)"),
}


class HistogramParams(MetricParams):
    bins: int = Field(8, ge=2, description="log-spaced bins of e / max e over [low, 1]")
    low: float = Field(1e-4, gt=0, lt=1, description="lower edge; smaller values go to bin 0")


class NeuronHistogram(Metric):
    """Histogram of the effective weights relative to their layer's largest, e / max e,
    over all hidden units: ``bins`` log-spaced bins with edges low·(1/low)^{i/bins};
    bin 0 also holds everything below ``low``.  Fields ``bin_<i>`` (fractions of units)."""

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        rel = torch.cat([e / e.max() for e in _layer_weights(ctx)])
        n, low = self.params.bins, self.params.low
        position = (torch.log10(rel.clamp(min=low)) - math.log10(low)) / -math.log10(low)
        index = (position * n).floor().clamp(0, n - 1).long()
        counts = torch.bincount(index, minlength=n).double() / rel.numel()
        return {f"bin_{i}": float(c) for i, c in enumerate(counts)}


NEURON_HISTOGRAM_FIELDS = {
    "bin_*": FieldDoc("share of hidden units whose effective weight over their layer's "
                      "largest falls in log-spaced bin i (bin 0 includes all below low)",
                      "fraction"),
}


class PruningParams(MetricParams):
    fractions: list[float] = Field(
        [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99],
        description="fractions of the trained weights set to zero (default: 0-90% by 10, "
                    "95%, 99%)",
    )


class _Embed(nn.Module):
    def __init__(self, arm: nn.Module) -> None:
        super().__init__()
        self.arm = arm

    def forward(self, x: Tensor) -> Tensor:
        return self.arm.embed(x)


def magnitude_order(params: dict[str, Tensor]) -> Tensor:
    """Positions of all entries over the tensors (flattened in order), smallest |θ| first,
    ties broken by position: what ``pruned`` removes from the front."""
    return torch.cat([p.reshape(-1) for p in params.values()]).abs().argsort(stable=True)


def pruned(params: dict[str, Tensor], fraction: float, order: Tensor | None = None
           ) -> dict[str, Tensor]:
    """Global magnitude pruning: the ⌊fraction·N⌋ entries of smallest |θ| over all
    tensors set to zero (ties broken by position); ``order`` is ``magnitude_order(params)``
    when already computed (one sort serves every fraction)."""
    order = magnitude_order(params) if order is None else order
    k = int(math.floor(fraction * order.numel()))
    keep = torch.ones(order.numel(), dtype=torch.bool, device=order.device)
    keep[order[:k]] = False
    masks = keep.split([p.numel() for p in params.values()])
    return {n: p * m.view_as(p) for (n, p), m in zip(params.items(), masks, strict=True)}


class PruningCurve(Metric):
    """Test accuracy after global magnitude pruning of the trained parameters.

    Fields ``acc_<percent>`` (e.g. ``acc_50``), evaluated on the held-out test split with
    the pruned values substituted functionally (the arm itself is not modified).
    """

    @torch.no_grad()
    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        params = {f"arm.{n}": p.detach() for n, p, _ in arm_maps(ctx)}
        model = _Embed(ctx.arm)
        device = device_of(ctx.arm)
        x, y = ctx.data.test_x, ctx.data.test_y.to(device)
        out, order = {}, magnitude_order(params)
        for fraction in self.params.fractions:
            values = pruned(params, fraction, order)
            preds = torch.cat([
                predictions(functional_call(model, values, (x[i : i + 1024].to(device),)))
                for i in range(0, len(x), 1024)
            ])
            out[f"acc_{round(100 * fraction)}"] = float((preds == y).double().mean())
        return out


PRUNING_CURVE_FIELDS = {
    "acc_*": FieldDoc("held-out test accuracy after global magnitude pruning of the given "
                      "percentage of trained weights", "fraction", "higher"),
}
