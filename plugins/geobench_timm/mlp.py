"""``mlp``: a plain multilayer perceptron backbone over flattened inputs."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field
from torch import Tensor, nn

from geobench.api import BuildContext, Params
from geobench.params import Need, batch_norm_if

Activation = Literal["relu", "gelu", "silu", "tanh", "leaky_relu", "identity"]
HOMOGENEOUS = ("relu", "leaky_relu", "identity")


def activation(name: Activation, negative_slope: float = 0.01) -> nn.Module:
    """The activation module called ``name``."""
    return {
        "relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU, "tanh": nn.Tanh,
        "leaky_relu": lambda: nn.LeakyReLU(negative_slope), "identity": nn.Identity,
    }[name]()


class MLPParams(Params):
    depth: int = Field(2, ge=1, description="number of linear layers L")
    width: int = Field(256, ge=1, description="width of the hidden layers")
    out_dim: int | None = Field(None, ge=1, description="None: every layer is followed by "
                                "norm + activation and feature_dim = width; k: the last layer "
                                "is linear with k outputs (out_dim 1: a scalar f(x))")
    activation: Activation = Field("relu", description="nonlinearity")
    negative_slope: float = Field(0.01, description="slope of leaky_relu for x < 0")
    bias: bool = Field(True, description="biases in the linear layers")
    norm: Literal["none", "batch", "layer"] = Field("none", description="normalisation after "
                                                     "each hidden linear layer (affine)")


class MLP(nn.Module):
    """x.flatten(1) -> [layers.i -> norms.i -> act] ... -> layers.(L-1) [-> norms -> act].

    Parameters are named ``layers.<i>.weight`` / ``layers.<i>.bias`` for the L linear layers
    (i = 0..L-1, input to output) and ``norms.<i>.*`` for the normalisations.  Without
    ``out_dim`` the last layer is followed by norm and activation like the others; with it,
    the last layer is linear.  With no biases, no norm and a positively homogeneous
    activation (relu, leaky_relu, identity) f(x; c theta) = c^L f(x; theta) for c > 0, and
    ``homogeneity_degree = L`` is set.  Layers use PyTorch's default Linear initialisation.
    """

    def __init__(self, in_dim: int, params: MLPParams) -> None:
        super().__init__()
        dims = [in_dim] + [params.width] * params.depth
        if params.out_dim is not None:
            dims[-1] = params.out_dim
        self.layers = nn.ModuleList(
            nn.Linear(a, b, bias=params.bias) for a, b in zip(dims[:-1], dims[1:], strict=True)
        )
        self.n_activated = params.depth if params.out_dim is None else params.depth - 1
        norm = {"none": lambda d: nn.Identity(), "batch": nn.BatchNorm1d,
                "layer": nn.LayerNorm}[params.norm]
        self.norms = nn.ModuleList(norm(d) for d in dims[1 : self.n_activated + 1])
        self.act = activation(params.activation, params.negative_slope)
        self.feature_dim = dims[-1]
        if gives(params)["homogeneous"]:
            self.homogeneity_degree = params.depth

    def forward(self, x: Tensor) -> Tensor:
        h = x.flatten(1)
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i < self.n_activated:
                h = self.act(self.norms[i](h))
        return h


def gives(params: MLPParams) -> dict[str, object]:
    """What an MLP backbone gives its arm (``geobench.params``): its feature width, whether
    its layers chain (two or more), and homogeneity without biases, norm and with a
    homogeneous activation."""
    return {"features": params.out_dim or params.width, "layered": params.depth >= 2,
            "homogeneous": not params.bias and params.norm == "none"
            and params.activation in HOMOGENEOUS}


def needs(params: MLPParams) -> list[Need]:
    """Batches of 2 when a layer is batch-normalised (every layer without ``out_dim``, the
    hidden ones with it)."""
    normed = params.out_dim is None or params.depth >= 2
    return batch_norm_if(params.norm == "batch" and normed)


def build_mlp(params: MLPParams, ctx: BuildContext) -> MLP:
    """An MLP over the flattened samples of the run's data."""
    if ctx.data is None:
        raise ValueError("backbone mlp needs the dataset to size its input")
    return MLP(math.prod(ctx.data.input_shape), params)
