"""A test-local plugin of small real components, so that the core's tests need none of the
bundled plugins (geobench_data, geobench_timm, the paper plugins).

=============  ============  ============================================================
datasets       toy_mixture   Gaussian classes, means on a sphere, drawn from ``ctx.seed``
augmentations  toy_none      views equal the inputs
               toy_noise     additive Gaussian noise of std ``sigma``
backbones      toy_mlp       MLP over the flattened inputs, ``feature_dim = width``
objectives     toy_ce        cross-entropy of its own linear classifier (one view)
               toy_nt_xent   NT-Xent (SimCLR) between two views' head outputs
metrics        toy_cka       cross-arm linear CKA to the reference arm (reference set)
               toy_event     first step at which the mean feature norm passes a threshold
=============  ============  ============================================================

tests/core/conftest.py makes it one of the core's built-ins in the test process;
tests/conftest.py installs this file as the distribution ``geobench-toy`` (module
``geobench_toy``, entry point ``toy``) for CLI subprocesses. It imports only geobench,
torch and pydantic, so that the installed copy works on its own.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import ClassVar, Literal

import torch
import torch.nn.functional as F
from pydantic import Field
from torch import Tensor, nn

from geobench.contract.hooks import hookimpl
from geobench.contract.interfaces import (
    Arm,
    Batch,
    BuildContext,
    Data,
    DataParams,
    FieldDoc,
    Metric,
    MetricContext,
    MetricParams,
    Objective,
    Params,
)
from geobench.contract.manager import BUILTINS
from geobench.contract.registry import EmptyParams

BUILTIN_ENV = "GEOBENCH_TOY_BUILTIN"
if os.environ.get(BUILTIN_ENV) == "1":  # a worker process of the test process (pool, ray)
    BUILTINS.setdefault("toy", __name__)  # imports this module as it unpickles a toy cell


class ToyMixtureParams(DataParams):
    n_train: int = Field(256, ge=1, description="training samples generated")
    n_test: int = Field(128, ge=1, description="held-out samples generated")
    num_classes: int = Field(3, ge=2, description="mixture components")
    dim: int = Field(8, ge=1, description="dimension")
    separation: float = Field(3.0, ge=0.0, description="norm of every class mean")


def build_toy_mixture(params: ToyMixtureParams, ctx: BuildContext) -> Data:
    """x = separation * u_y + eps, eps ~ N(0, I), u_c uniform on the sphere; balanced labels.
    ``classes`` keeps a subset (a count: drawn from the seed), relabelled 0..C'-1."""
    g = torch.Generator().manual_seed(ctx.seed)
    picked = list(range(params.num_classes))
    if isinstance(params.classes, int):
        picked = sorted(torch.randperm(params.num_classes, generator=g)[:params.classes].tolist())
    elif isinstance(params.classes, list):
        picked = list(params.classes)
    directions = torch.randn(params.num_classes, params.dim, generator=g)
    means = params.separation * directions / directions.norm(dim=1, keepdim=True)
    splits = []
    for n in (params.n_train, params.n_test):
        y = torch.randperm(n, generator=g) % len(picked)
        x = means[torch.as_tensor(picked)[y]] + torch.randn(n, params.dim, generator=g)
        splits += [x, y]
    train_x, train_y, test_x, test_y = splits
    ref = slice(0, min(params.reference_size, params.n_test))
    return Data(train_x, train_y, test_x, test_y, test_x[ref], test_y[ref], len(picked),
                params.batch_size, {"means": means})


def identity(x: Tensor, index: Tensor, generator: torch.Generator, view: int = 0) -> Tensor:
    return x


class ToyNoiseParams(Params):
    sigma: float = Field(0.1, ge=0.0, description="std of the additive noise")


@dataclass(frozen=True)
class ToyNoise:
    sigma: float

    def __call__(self, x: Tensor, index: Tensor, generator: torch.Generator,
                 view: int = 0) -> Tensor:
        eps = torch.randn(x.shape, generator=generator, dtype=torch.float32)
        return x + self.sigma * eps.to(x.device, x.dtype)


class ToyMLPParams(Params):
    depth: int = Field(2, ge=1, description="linear layers")
    width: int = Field(16, ge=1, description="width of every layer")
    activation: Literal["relu", "gelu", "tanh", "identity"] = Field("relu")
    bias: bool = Field(True, description="biases in the linear layers")


class ToyMLP(nn.Module):
    """x.flatten(1) -> (linear -> activation) x depth; PyTorch's default initialisation."""

    def __init__(self, in_dim: int, params: ToyMLPParams) -> None:
        super().__init__()
        dims = [in_dim] + [params.width] * params.depth
        self.layers = nn.ModuleList(nn.Linear(a, b, bias=params.bias)
                                    for a, b in zip(dims[:-1], dims[1:]))
        self.act = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh,
                    "identity": nn.Identity}[params.activation]()
        self.feature_dim = params.width

    def forward(self, x: Tensor) -> Tensor:
        h = x.flatten(1)
        for layer in self.layers:
            h = self.act(layer(h))
        return h


def build_toy_mlp(params: ToyMLPParams, ctx: BuildContext) -> ToyMLP:
    if ctx.data is None:
        raise ValueError("toy_mlp needs the dataset to size its input")
    return ToyMLP(ctx.data.train_x[0].numel(), params)


class ToyCE(Objective):
    """Cross-entropy of a linear classifier on the embedding of the first view."""

    n_views: ClassVar[int] = 1

    def __init__(self, embed_dim: int, num_classes: int) -> None:
        super().__init__()
        self.classifier = nn.Linear(embed_dim, num_classes)

    def forward(self, arm: Arm, batch: Batch, views: list[Tensor]) -> Tensor:
        return F.cross_entropy(self.classifier(arm.embed(views[0])), batch.y)


def build_toy_ce(params: EmptyParams, ctx: BuildContext) -> ToyCE:
    if ctx.embed_dim is None or ctx.data is None:
        raise ValueError("toy_ce needs the embedding dimension and the class count")
    return ToyCE(ctx.embed_dim, ctx.data.num_classes)


class ToyNanAtParams(Params):
    at: int = Field(ge=0, description="the first step whose loss is NaN")


class ToyCENanAt(ToyCE):
    """ToyCE whose loss is NaN from step ``at`` on (and so are the gradients and weights):
    an arm driven to diverge at a known step."""

    def __init__(self, embed_dim: int, num_classes: int, at: int) -> None:
        super().__init__(embed_dim, num_classes)
        self.at = at

    def forward(self, arm: Arm, batch: Batch, views: list[Tensor]) -> Tensor:
        loss = super().forward(arm, batch, views)
        return loss * math.nan if batch.step >= self.at else loss


def build_toy_ce_nan_at(params: ToyNanAtParams, ctx: BuildContext) -> ToyCENanAt:
    if ctx.embed_dim is None or ctx.data is None:
        raise ValueError("toy_ce_nan_at needs the embedding dimension and the class count")
    return ToyCENanAt(ctx.embed_dim, ctx.data.num_classes, params.at)


class ToyNTXentParams(Params):
    tau: float = Field(0.5, gt=0, description="temperature of the cosine similarities")


class ToyNTXent(Objective):
    """NT-Xent over the 2B head outputs: each view's positive is the other view of its sample."""

    def __init__(self, tau: float) -> None:
        super().__init__()
        self.tau = tau

    def forward(self, arm: Arm, batch: Batch, views: list[Tensor]) -> Tensor:
        z = F.normalize(torch.cat([arm.embed(views[0]), arm.embed(views[1])]), dim=1)
        n = len(views[0])
        eye = torch.eye(2 * n, dtype=torch.bool, device=z.device)
        logits = (z @ z.T / self.tau).masked_fill(eye, float("-inf"))
        positive = (torch.arange(2 * n, device=z.device) + n) % (2 * n)
        return F.cross_entropy(logits, positive)


class ToyCKAParams(MetricParams):
    space: Literal["backbone", "head"] = Field("backbone", description="features compared")


class ToyCKA(Metric):
    """Linear CKA (biased and debiased) between the reference arm's and this arm's features
    of the reference set."""

    cross_arm: ClassVar[bool] = True

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        from geobench.components.metrics import features
        from geobench.geometry import linear_cka

        x = ctx.data.reference_x
        a = features(ctx.reference, x, self.params.space).double()
        b = features(ctx.arm, x, self.params.space).double()
        debiased = linear_cka(a, b, debiased=True)
        return {"debiased": debiased, "biased": linear_cka(a, b),
                "similar": float(debiased > 0.5)}


TOY_CKA_FIELDS = {
    "debiased": FieldDoc("linear CKA to the reference arm, unbiased HSIC"),
    "biased": FieldDoc("linear CKA to the reference arm, biased HSIC"),
    "similar": FieldDoc("1 when the debiased CKA exceeds 0.5, else 0", "0/1"),
}


class ToyEventParams(MetricParams):
    threshold: float = Field(1.0, description="the mean feature norm that is the event")


class ToyEvent(Metric):
    """A time to an event: the first evaluated step at which the mean backbone feature norm
    of the reference set reaches ``threshold`` (NaN before)."""

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        from geobench.components.metrics import features

        norm = float(features(ctx.arm, ctx.data.reference_x, "backbone").norm(dim=1).mean())
        previous = ctx.history.get("step", [])
        if previous and previous[-1][1] == previous[-1][1]:  # already happened (not NaN)
            return {"norm": norm, "step": previous[-1][1]}
        return {"norm": norm, "step": float(ctx.step) if norm >= self.params.threshold
                else float("nan")}


TOY_EVENT_FIELDS = {
    "norm": FieldDoc("mean backbone feature norm of the reference set"),
    "step": FieldDoc("first evaluated step at which the norm reached the threshold (NaN "
                     "before)", "steps", censored=True),
}


@hookimpl
def register_datasets(register):
    register("toy_mixture", build_toy_mixture, params=ToyMixtureParams,
             doc="Gaussian classes with means on a sphere (test plugin)")


@hookimpl
def register_augmentations(register):
    register("toy_none", lambda p, ctx: identity, doc="identity (test plugin)")
    register("toy_noise", lambda p, ctx: ToyNoise(p.sigma), params=ToyNoiseParams,
             doc="additive Gaussian noise (test plugin)")


@hookimpl
def register_backbones(register):
    register("toy_mlp", build_toy_mlp, params=ToyMLPParams, doc="MLP (test plugin)")


@hookimpl
def register_objectives(register):
    register("toy_ce", build_toy_ce, doc="cross-entropy of a linear classifier (test plugin)")
    register("toy_nt_xent", lambda p, ctx: ToyNTXent(p.tau), params=ToyNTXentParams,
             doc="NT-Xent between two views (test plugin)")
    register("toy_ce_nan_at", build_toy_ce_nan_at, params=ToyNanAtParams,
             doc="toy_ce, NaN from step `at` on (test plugin)")


@hookimpl
def register_metrics(register):
    register("toy_cka", lambda p, ctx: ToyCKA(p), params=ToyCKAParams,
             doc="cross-arm linear CKA (test plugin)", fields=TOY_CKA_FIELDS)
    register("toy_event", lambda p, ctx: ToyEvent(p), params=ToyEventParams,
             doc="time to a feature norm (test plugin)", fields=TOY_EVENT_FIELDS)
