"""``orbit_manifold``: data whose augmentations are an exact, known group action.

Generating process (all random draws from generators seeded by ``ctx.seed``):

- latent u = (a, s) in R^(c + 2m): class part a in R^c, nuisance part s in R^(2m) made of
  m coordinate pairs s_j in R^2;
- class prototypes p_y = separation * e_y, e_y uniform on the unit sphere S^(c-1);
  a = p_y + class_noise * xi, xi ~ N(0, I_c);
- s_j = radius * (cos phi_j, sin phi_j), phi_j ~ U[0, 2 pi) (a random point of the orbit);
- x = phi(u) = W2 tanh(W1 u + b1) / sqrt(hidden), with W1 ~ N(0, gain^2 / (c + 2m)),
  b1 ~ N(0, 1/4), W2 ~ N(0, 1): a fixed random smooth embedding into R^D.

Group: the torus G = SO(2)^m acting on the latent by rotating each pair,
g_theta . (a, s) = (a, R(theta_1) s_1, ..., R(theta_m) s_m); it leaves the class part, hence
the label, unchanged.  An augmentation ("view") is x' = phi(g_theta . u) with
theta_j ~ U[-max_angle, max_angle] (max_angle = pi: the uniform Haar measure).  Orbit tangents
at x are d/dt phi(g_(t e_j) . u) at t = 0 = J_phi(u) A_j u with A_j the generator of the
j-th rotation, (s_j1, s_j2) -> (-s_j2, s_j1), computed exactly by ``torch.func.jvp``.
"""

from __future__ import annotations

import math

import torch
from pydantic import Field
from torch import Tensor

from geobench.api import BuildContext, Data, DataParams
from geobench_data.common import assemble, pick_classes, reference_index, relabel, seeded
from geobench_data.synthetic import balanced_labels

SPLITS = ("train", "test", "reference")


class OrbitStructure:
    """Latents of every split, the group action and the embedding map of ``orbit_manifold``.

    ``latent[split]`` is (N, c + 2m), indexed like the split's samples in ``Data``
    (``"reference"`` like ``Data.reference_x``).  All methods return CPU tensors.
    """

    def __init__(self, latent: dict[str, Tensor], class_dim: int, pairs: int, w1: Tensor,
                 b1: Tensor, w2: Tensor, max_angle: float) -> None:
        self.latent = latent
        self.class_dim = class_dim
        self.pairs = pairs
        self.w1, self.b1, self.w2 = w1, b1, w2
        self.max_angle = max_angle

    def map(self, u: Tensor) -> Tensor:
        """phi(u) = W2 tanh(W1 u + b1) / sqrt(hidden), for u (..., c + 2m) in u's dtype."""
        w1, b1, w2 = (t.to(u.dtype) for t in (self.w1, self.b1, self.w2))
        return torch.tanh(u @ w1.T + b1) @ w2.T / w2.shape[1] ** 0.5

    def act(self, u: Tensor, theta: Tensor) -> Tensor:
        """g_theta . u: rotate pair j of the nuisance part by angle theta[..., j]."""
        a, s = u[..., : self.class_dim], u[..., self.class_dim :]
        s = s.unflatten(-1, (self.pairs, 2))
        cos, sin = torch.cos(theta).to(u.dtype), torch.sin(theta).to(u.dtype)
        rotated = torch.stack((cos * s[..., 0] - sin * s[..., 1],
                               sin * s[..., 0] + cos * s[..., 1]), dim=-1)
        return torch.cat((a, rotated.flatten(-2)), dim=-1)

    def generator_field(self, u: Tensor, j: int) -> Tensor:
        """A_j u: the velocity of u under the j-th rotation at the identity."""
        v = torch.zeros_like(u)
        k = self.class_dim + 2 * j
        v[..., k], v[..., k + 1] = -u[..., k + 1], u[..., k]
        return v

    def _latent(self, split: str, index: Tensor) -> Tensor:
        if split not in self.latent:
            raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
        return self.latent[split][index.cpu().long()]

    def _angles(self, shape: tuple[int, ...], generator: torch.Generator) -> Tensor:
        return (2.0 * torch.rand(*shape, self.pairs, generator=generator) - 1.0) * self.max_angle

    def views(self, split: str, index: Tensor, generator: torch.Generator) -> Tensor:
        """(N, D): one random group element (from ``generator``) applied to each sample."""
        u = self._latent(split, index)
        return self.map(self.act(u, self._angles((len(u),), generator)))

    def orbit(self, split: str, index: Tensor, k: int, generator: torch.Generator) -> Tensor:
        """(N, k, D): k independent random views of each sample."""
        u = self._latent(split, index)
        theta = self._angles((len(u), k), generator)
        return self.map(self.act(u[:, None, :].expand(-1, k, -1), theta))

    def tangents(self, split: str, index: Tensor) -> Tensor:
        """(N, m, D): exact tangents J_phi(u) A_j u of the orbit at each sample, j = 1..m."""
        u = self._latent(split, index)
        return torch.stack([torch.func.jvp(self.map, (u,), (self.generator_field(u, j),))[1]
                            for j in range(self.pairs)], dim=1)


class OrbitManifoldParams(DataParams):
    n_train: int | None = Field(1024, ge=1, description="training samples generated")
    n_test: int | None = Field(512, ge=1, description="held-out samples generated")
    num_classes: int = Field(10, ge=2, description="number of classes")
    dim: int = Field(32, ge=1, description="ambient dimension D")
    class_dim: int = Field(3, ge=1, description="dimension c of the class (invariant) latent")
    pairs: int = Field(2, ge=1, description="number m of rotated latent pairs (group generators)")
    separation: float = Field(2.0, ge=0.0, description="norm of the class prototypes in latent")
    class_noise: float = Field(0.3, ge=0.0, description="within-class latent std")
    radius: float = Field(1.0, gt=0.0, description="radius of each rotated pair")
    hidden: int = Field(64, ge=1, description="hidden width of the random tanh embedding")
    gain: float = Field(1.5, gt=0.0, description="input gain of the embedding (nonlinearity)")
    max_angle: float = Field(math.pi, ge=0.0, le=math.pi,
                             description="views rotate each pair by U[-max_angle, max_angle]")


def build_orbit_manifold(params: OrbitManifoldParams, ctx: BuildContext) -> Data:
    """Classes on a latent manifold embedded in R^D; augmentations are a torus action.

    ``extras["orbit"]`` is the ``OrbitStructure`` (views, orbit, tangents);
    ``extras["latent"]`` the training latents.  See the module docstring for the process.
    """
    picked = pick_classes(params.classes, params.num_classes, ctx.seed)
    g = seeded(ctx.seed, "orbit_manifold")
    c, m = params.class_dim, params.pairs
    protos = torch.randn(params.num_classes, c, generator=g)
    protos = params.separation * protos / protos.norm(dim=1, keepdim=True)
    w1 = torch.randn(params.hidden, c + 2 * m, generator=g) * params.gain / (c + 2 * m) ** 0.5
    b1 = 0.5 * torch.randn(params.hidden, generator=g)
    w2 = torch.randn(params.dim, params.hidden, generator=g)
    latent, splits = {}, []
    for split, n in (("train", params.n_train), ("test", params.n_test)):
        y = balanced_labels(n, picked, g)
        a = protos[y] + params.class_noise * torch.randn(n, c, generator=g)
        phase = 2 * math.pi * torch.rand(n, m, generator=g)
        s = params.radius * torch.stack((torch.cos(phase), torch.sin(phase)), dim=-1)
        latent[split] = torch.cat((a, s.flatten(1)), dim=1)
        splits.append(y)
    latent["reference"] = latent["test"][reference_index(params.n_test, params.reference_size,
                                                         ctx.seed)]
    orbit = OrbitStructure(latent, c, m, w1, b1, w2, params.max_angle)
    return assemble(
        orbit.map(latent["train"]), relabel(splits[0], picked, params.num_classes),
        orbit.map(latent["test"]), relabel(splits[1], picked, params.num_classes),
        num_classes=len(picked), params=params, seed=ctx.seed,
        extras={"orbit": orbit, "latent": latent["train"]},
    )
