"""Augmentations without image operations: identity, group action, additive noise."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import torch
from pydantic import Field
from torch import Tensor

from geobench.api import BuildContext, Params, host_to_device


def identity(x: Tensor, index: Tensor, generator: torch.Generator, view: int = 0) -> Tensor:
    """Every view is the sample itself."""
    return x


def build_none(params: Params, ctx: BuildContext) -> Any:
    """No augmentation: views equal the inputs."""
    return identity


@dataclass(frozen=True)
class OrbitAction:
    """A random group element applied to each sample of ``split`` (training unless made
    ``on`` another), via the dataset's orbit.

    The view is ``orbit.views(split, index, generator)`` (the batch's values are not used:
    the action works on the latent coordinates looked up by ``index``).
    """

    orbit: Any
    split: str = "train"

    def __call__(self, x: Tensor, index: Tensor, generator: torch.Generator,
                 view: int = 0) -> Tensor:
        return host_to_device(self.orbit.views(self.split, index, generator).to(x.dtype),
                              x.device)

    def on(self, split: str) -> OrbitAction:
        """The same action on samples indexed into ``split`` (``test``, ``reference``)."""
        return replace(self, split=split)


def build_orbit_action(params: Params, ctx: BuildContext) -> OrbitAction:
    """Exact group-action views of a dataset with orbit structure (``orbit_manifold``)."""
    extras = ctx.data.extras if ctx.data is not None else {}
    if "orbit" not in extras:
        have = ", ".join(sorted(extras)) or "none"
        raise ValueError("augmentation orbit_action needs a dataset with orbit structure "
                         f"(extras['orbit'], e.g. orbit_manifold); this dataset's extras: {have}")
    return OrbitAction(extras["orbit"])


class GaussianNoiseParams(Params):
    sigma: float = Field(0.1, ge=0.0, description="std of the additive noise")


@dataclass(frozen=True)
class GaussianNoise:
    """x + sigma * eps, eps ~ N(0, I) drawn on the CPU generator (any input shape)."""

    sigma: float

    def __call__(self, x: Tensor, index: Tensor, generator: torch.Generator,
                 view: int = 0) -> Tensor:
        eps = torch.randn(x.shape, generator=generator, dtype=torch.float32)
        return x + self.sigma * host_to_device(eps.to(x.dtype), x.device)


def build_gaussian_noise(params: GaussianNoiseParams, ctx: BuildContext) -> GaussianNoise:
    """Additive isotropic Gaussian noise (vectors or images)."""
    return GaussianNoise(params.sigma)
