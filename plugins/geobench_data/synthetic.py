"""Synthetic vector datasets: a Gaussian mixture, a student-teacher task and a sparse linear
teacher.

Both are generated from generators seeded by ``ctx.seed`` (same seed, same tensors).
``n_train`` / ``n_test`` are the sizes generated; a class subset restricts which classes
the samples are drawn from (class geometry does not depend on the subset).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from pydantic import Field
from torch import Tensor

from geobench.api import BuildContext, Data, DataParams
from geobench_data.common import assemble, pick_classes, relabel, seeded


def balanced_labels(n: int, picked: list[int], generator: torch.Generator) -> Tensor:
    """``n`` labels cycling through ``picked`` (class sizes differ by at most one), shuffled."""
    cycle = torch.as_tensor(picked, dtype=torch.int64).repeat(n // len(picked) + 1)[:n]
    return cycle[torch.randperm(n, generator=generator)]


class GaussianMixtureParams(DataParams):
    n_train: int | None = Field(1024, ge=1, description="training samples generated")
    n_test: int | None = Field(512, ge=1, description="held-out samples generated")
    num_classes: int = Field(10, ge=2, description="number of mixture components")
    dim: int = Field(32, ge=1, description="ambient dimension D")
    separation: float = Field(3.0, ge=0.0, description="norm of every class mean, in units "
                              "of the noise std")
    noise: float = Field(1.0, gt=0.0, description="isotropic noise std sigma")


def build_gaussian_mixture(params: GaussianMixtureParams, ctx: BuildContext) -> Data:
    """x = sigma * (separation * u_y + eps), eps ~ N(0, I_D), u_c = g_c / ||g_c||, g_c ~ N(0, I_D).

    Class means lie on the sphere of radius ``separation * sigma`` in uniformly random
    directions (drawn once per seed for all ``num_classes`` classes); labels are balanced.
    The means are in ``extras["means"]`` (rows indexed by the relabelled class).
    """
    picked = pick_classes(params.classes, params.num_classes, ctx.seed)
    g = seeded(ctx.seed, "gaussian_mixture")
    directions = torch.randn(params.num_classes, params.dim, generator=g)
    means = params.noise * params.separation * directions / directions.norm(dim=1, keepdim=True)
    splits = []
    for n in (params.n_train, params.n_test):
        y = balanced_labels(n, picked, g)
        x = means[y] + params.noise * torch.randn(n, params.dim, generator=g)
        splits += [x, relabel(y, picked, params.num_classes)]
    return assemble(*splits, num_classes=len(picked), params=params, seed=ctx.seed,
                    extras={"means": means[torch.as_tensor(picked)]})


@dataclass(frozen=True)
class Teacher:
    """teacher(x) = (1/sqrt(k)) * sum_j a_j relu(<w_j, x>), ||w_j|| = 1, a_j = (-1)^j."""

    w: Tensor
    a: Tensor

    def __call__(self, x: Tensor) -> Tensor:
        return torch.relu(x @ self.w.T) @ self.a / self.a.numel() ** 0.5


class StudentTeacherParams(DataParams):
    n_train: int | None = Field(512, ge=1, description="training samples generated")
    n_test: int | None = Field(512, ge=1, description="held-out samples generated")
    dim: int = Field(16, ge=1, description="input dimension D")
    teacher_width: int = Field(4, ge=1, description="teacher's hidden neurons k")
    margin: float = Field(0.0, ge=0.0, description="keep only samples with |teacher(x)| >= "
                          "margin (> 0 makes the data separable with that margin)")


def _draw(teacher: Callable[[Tensor], Tensor], n: int, dim: int, margin: float,
          keep_labels: Tensor, g: torch.Generator, name: str) -> tuple[Tensor, Tensor]:
    """``n`` samples x ~ N(0, I_dim) with label 1[teacher(x) > 0] among ``keep_labels`` and
    |teacher(x)| ≥ ``margin`` (rejection sampling)."""
    xs, ys, have, drawn = [], [], 0, 0
    while have < n:
        if drawn > 1000 * n + 100_000:
            raise ValueError(f"{name}: fewer than 1 in 1000 samples pass margin "
                             f"{margin}; lower the margin")
        x = torch.randn(max(n, 1024), dim, generator=g)
        drawn += len(x)
        out = teacher(x)
        y = (out > 0).long()
        ok = (out.abs() >= margin) & torch.isin(y, keep_labels)
        xs.append(x[ok])
        ys.append(y[ok])
        have += int(ok.sum())
    return torch.cat(xs)[:n], torch.cat(ys)[:n]


def _labelled_by(teacher: Callable[[Tensor], Tensor], extra: object,
                 params: StudentTeacherParams | LinearTeacherParams, picked: list[int],
                 g: torch.Generator, ctx: BuildContext, name: str) -> Data:
    """Training and test sets drawn by ``_draw`` with ``teacher``'s labels, ``extra`` kept as
    ``extras["teacher"]``."""
    splits = []
    for n in (params.n_train, params.n_test):
        x, y = _draw(teacher, n, params.dim, params.margin, torch.as_tensor(picked), g, name)
        splits += [x, relabel(y, picked, 2)]
    return assemble(*splits, num_classes=len(picked), params=params, seed=ctx.seed,
                    extras={"teacher": extra})


def build_student_teacher(params: StudentTeacherParams, ctx: BuildContext) -> Data:
    """x ~ N(0, I_D), label 1[teacher(x) > 0] (1 <-> y = +1, 0 <-> y = -1).

    The teacher is a random two-layer ReLU net (see ``Teacher``: unit-norm w_j drawn from
    the seed, alternating output signs so both labels occur).  Samples with
    |teacher(x)| < ``margin`` are rejected.  ``extras["teacher"]`` is the ``Teacher``.
    """
    if params.margin > 0 and params.teacher_width == 1:
        raise ValueError("student_teacher: with teacher_width 1 the teacher is >= 0, so "
                         "margin > 0 removes every label-0 sample; use teacher_width >= 2")
    picked = pick_classes(params.classes, 2, ctx.seed)
    g = seeded(ctx.seed, "student_teacher")
    w = torch.randn(params.teacher_width, params.dim, generator=g)
    a = torch.tensor([(-1.0) ** j for j in range(params.teacher_width)])
    teacher = Teacher(w / w.norm(dim=1, keepdim=True), a)
    return _labelled_by(teacher, teacher, params, picked, g, ctx, "student_teacher")


class LinearTeacherParams(DataParams):
    n_train: int | None = Field(32, ge=1, description="training samples generated")
    n_test: int | None = Field(1024, ge=1, description="held-out samples generated")
    dim: int = Field(64, ge=1, description="input dimension D")
    support: int = Field(4, ge=1, description="nonzero coordinates of the teacher (≤ dim)")
    margin: float = Field(0.0, ge=0.0, description="keep only samples with |<w*, x>| >= margin")


def build_linear_teacher(params: LinearTeacherParams, ctx: BuildContext) -> Data:
    """x ~ N(0, I_D), label 1[<w*, x> > 0] (1 <-> y = +1): separable by a hyperplane
    through the origin.  The unit teacher w* has ``support`` nonzero N(0, 1) coordinates
    at positions drawn from the seed; ``extras["teacher"]`` is w*.  With fewer samples
    than dimensions the L1, L2 and L3 max-margin directions differ (sparse against dense).
    """
    if params.support > params.dim:
        raise ValueError(f"linear_teacher: support {params.support} exceeds dim "
                         f"{params.dim}; use support <= dim")
    picked = pick_classes(params.classes, 2, ctx.seed)
    g = seeded(ctx.seed, "linear_teacher")
    w = torch.zeros(params.dim)
    w[torch.randperm(params.dim, generator=g)[: params.support]] = torch.randn(
        params.support, generator=g)
    w = w / w.norm()
    return _labelled_by(lambda v: v @ w, w, params, picked, g, ctx, "linear_teacher")
