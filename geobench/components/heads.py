"""Projection heads: ``identity``, ``linear`` and ``mlp``, each with an optional predictor.

A head maps the backbone representation z (``(B, ctx.feature_dim)``) to the embedding
h(z) (``(B, out_dim)``).  The optional ``predictor`` (BYOL / SimSiam style) maps the
embedding to a prediction of the same width; it is a submodule ``head.predictor`` that the
stop-gradient objectives apply on the online branch only (``head.forward`` never applies it).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from torch import Tensor, nn

from geobench.contract.interfaces import BuildContext, Params
from geobench.contract.needs import Need, batch_norm_if

Activation = Literal["relu", "gelu", "silu", "softplus", "tanh", "leaky_relu", "identity"]
Norm = Literal["none", "batch", "layer"]
PLAIN_PREDICTOR = (512, "relu", "batch")  # predictor defaults for identity / linear heads


class PredictorParams(Params):
    """A predictor MLP ``out -> hidden -> ... -> out``; unset options follow the mlp head's
    (for ``identity`` / ``linear`` heads: hidden 512, relu, batch norm)."""

    depth: int = Field(2, ge=1, le=4, description="number of linear layers")
    hidden: int | None = Field(None, ge=1, description="hidden width (None: the head's hidden)")
    activation: Activation | None = Field(None, description="None: the head's activation")
    norm: Norm | None = Field(None, description="None: the head's norm")


class _ActivationOptions(Params):
    softplus_beta: float = Field(1.0, gt=0, description="beta of softplus(beta x) / beta")
    leaky_slope: float = Field(0.01, ge=0, description="negative slope of leaky_relu")


class IdentityHeadParams(Params):
    predictor: PredictorParams | None = Field(None, description="optional predictor MLP")


class LinearHeadParams(Params):
    out: int | None = Field(None, ge=1, description="output width (None: feature_dim)")
    bias: bool = Field(False, description="learn a bias (h(z) = Wz + b)")
    predictor: PredictorParams | None = Field(None, description="optional predictor MLP")


class MLPHeadParams(_ActivationOptions):
    depth: int = Field(2, ge=1, le=4, description="number of linear layers (1: linear map)")
    hidden: int = Field(512, ge=1, description="hidden width")
    out: int = Field(128, ge=1, description="output width (embedding dimension)")
    activation: Activation = Field("relu", description="activation between layers")
    norm: Norm = Field("none", description="normalisation after each hidden linear layer")
    bias: bool = Field(True, description="linear layers learn a bias")
    predictor: PredictorParams | None = Field(None, description="optional predictor MLP")


def gives(params: IdentityHeadParams | LinearHeadParams | MLPHeadParams) -> dict[str, object]:
    """What a head gives its arm (``geobench.params``): whether it has parameters and a
    predictor, and its output width when it sets one."""
    out = getattr(params, "out", None)
    own = not isinstance(params, IdentityHeadParams) or params.predictor is not None
    return {"extra_params": own, "predictor": params.predictor is not None} | (
        {"outputs": out} if out else {})


def needs(params: IdentityHeadParams | LinearHeadParams | MLPHeadParams) -> list[Need]:
    """Batches of at least 2 where the head or its predictor normalises by batch."""
    head_norm = getattr(params, "norm", None)  # the mlp head's; None: identity or linear
    uses = head_norm == "batch" and getattr(params, "depth", 1) >= 2
    pred = params.predictor
    if pred is not None and pred.depth >= 2:
        uses |= (pred.norm or head_norm or PLAIN_PREDICTOR[2]) == "batch"
    return batch_norm_if(uses)


def make_activation(name: str, softplus_beta: float = 1.0, leaky_slope: float = 0.01
                    ) -> nn.Module:
    """The activation module of ``name`` (``identity`` makes the MLP a linear map)."""
    if name == "softplus":
        return nn.Softplus(beta=softplus_beta)
    if name == "leaky_relu":
        return nn.LeakyReLU(leaky_slope)
    return {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU, "tanh": nn.Tanh,
            "identity": nn.Identity}[name]()


def make_norm(name: str, width: int) -> nn.Module:
    if name == "batch":
        return nn.BatchNorm1d(width)
    if name == "layer":
        return nn.LayerNorm(width)
    return nn.Identity()


def mlp(widths: list[int], activation: str, norm: str, bias: bool = True,
        softplus_beta: float = 1.0, leaky_slope: float = 0.01) -> nn.Sequential:
    """Linear layers ``widths[0] -> ... -> widths[-1]``; norm + activation after every
    layer but the last."""
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
        layers.append(nn.Linear(a, b, bias=bias))
        if i < len(widths) - 2:
            layers.append(make_norm(norm, b))
            layers.append(make_activation(activation, softplus_beta, leaky_slope))
    return nn.Sequential(*layers)


class Head(nn.Module):
    """``forward(z) = projector(z)``; ``predictor`` (or None) is applied by the objective."""

    def __init__(self, projector: nn.Module, out_dim: int,
                 predictor: nn.Module | None = None) -> None:
        super().__init__()
        self.projector = projector
        self.predictor = predictor
        self.out_dim = out_dim

    def forward(self, z: Tensor) -> Tensor:
        return self.projector(z)


def _predictor(spec: PredictorParams | None, width: int, hidden: int, activation: str,
               norm: str, options: _ActivationOptions | None = None) -> nn.Module | None:
    if spec is None:
        return None
    opts = options or _ActivationOptions()
    widths = [width] + [spec.hidden or hidden] * (spec.depth - 1) + [width]
    return mlp(widths, spec.activation or activation, spec.norm or norm, True,
               opts.softplus_beta, opts.leaky_slope)


def _feature_dim(ctx: BuildContext) -> int:
    if ctx.feature_dim is None:
        raise ValueError("a head needs ctx.feature_dim (build the backbone first)")
    return ctx.feature_dim


def build_identity_head(params: IdentityHeadParams, ctx: BuildContext) -> Head:
    """h(z) = z (no head: the SSL loss acts on the backbone output directly)."""
    d = _feature_dim(ctx)
    return Head(nn.Identity(), d, _predictor(params.predictor, d, *PLAIN_PREDICTOR))


def build_linear_head(params: LinearHeadParams, ctx: BuildContext) -> Head:
    """h(z) = W z (+ b): its Hessian term K is exactly zero."""
    d = _feature_dim(ctx)
    out = params.out or d
    pred = _predictor(params.predictor, out, *PLAIN_PREDICTOR)
    return Head(nn.Linear(d, out, bias=params.bias), out, pred)


def build_mlp_head(params: MLPHeadParams, ctx: BuildContext) -> Head:
    """``depth`` linear layers with norm + activation between them (depth 1: linear)."""
    d = _feature_dim(ctx)
    widths = [d] + [params.hidden] * (params.depth - 1) + [params.out]
    projector = mlp(widths, params.activation, params.norm, params.bias,
                    params.softplus_beta, params.leaky_slope)
    pred = _predictor(params.predictor, params.out, params.hidden, params.activation,
                      params.norm, params)
    return Head(projector, params.out, pred)
