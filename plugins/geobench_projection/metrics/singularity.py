"""``metric_singularity``: is the pull-back metric G degenerate along augmentation orbits?

P1's Prop. 5.2: an invariant head needs v^T G(z) v = 0 for v tangent to the augmentation
orbit of z.  On the first ``samples`` samples of the current batch, two views x_v each, the
objective's ``loss_of_h`` gives z (stacked representations), the online head h and the loss;
G = J_h^T (d^2 L / dh^2) J_h is the Gauss-Newton part of the effective Hessian over the
stacked representation vector.  For directions v of that space the Rayleigh quotient is
RQ(v) = v^T G v / v^T v (``geobench.geometry.EffectiveHessian(...).gauss_newton``).

Orbit directions (one per generator, all samples moving together):

- exact, on datasets with an orbit structure (``orbit_manifold``): views
  x_v = phi(g_theta_v . u) with theta_v drawn here, input tangents t = J_phi A_j (g . u) of
  the j-th one-parameter subgroup, pushed to the representation: v = J_f(x_v) t;
- otherwise a finite-difference (secant) direction along the augmentation: for a sample's
  two views, v = (z_1 - z_0 on view 0's rows; z_0 - z_1 on view 1's rows).

Reference directions: ``random`` isotropic Gaussians in representation space, and
``input_random`` Gaussians in input space pushed through J_f (directions the backbone can
actually produce).  G is indefinite for normalised losses, so quotients may be negative:
``tangent_rq``, ``random_rq``, ``input_random_rq`` are signed means of the quotients, and
``ratio`` = mean |RQ(tangent)| / mean |RQ(random)|, ``input_ratio`` the same against
``input_random`` (0: G is exactly singular along the orbit).  ``head_tangent_gain``,
``head_random_gain``, ``head_ratio``: the same with the loss-free pull-back J_h^T J_h
(||J_h v||^2 / ||v||^2).  ``exact``: 1 with exact tangents, 0 with secants.
"""

from __future__ import annotations

import math
from typing import Literal

import torch
from pydantic import Field
from torch import Tensor, nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from geobench.api import FieldDoc, Metric, MetricContext, MetricParams
from geobench.geometry import EffectiveHessian
from geobench_projection.metrics.common import finite_or_nan
from geobench_projection.objectives.common import functional_copy


class SingularityParams(MetricParams):
    samples: int = Field(16, ge=2, description="samples of the current batch used")
    random: int = Field(8, ge=1, description="random directions of each kind")
    dtype: Literal["float32", "float64"] = Field("float64", description="arithmetic precision")


def _jvp(fn, x: Tensor, t: Tensor) -> Tensor:
    """J_fn(x) t by forward-mode AD; attention runs on its plain math kernel, as fused CPU
    attention kernels have no forward-mode derivative."""
    with sdpa_kernel([SDPBackend.MATH]):
        return torch.func.jvp(fn, (x,), (t,))[1]


def _per_view_jvp(backbone: nn.Module, xs: list[Tensor], ts: list[Tensor]) -> Tensor:
    """Stacked J_f(x_v) t_v over views (each view a batch of its own, as in training)."""
    return torch.cat([_jvp(backbone, x, t) for x, t in zip(xs, ts)])


def _exact_views(orbit, index: Tensor, gen: torch.Generator, device, dtype
                 ) -> tuple[list[Tensor], list[list[Tensor]]]:
    """Two group-action views of the samples and, per generator j, their input tangents."""
    u = orbit.latent["train"][index.cpu()]
    xs, tangents = [], []
    for _ in range(2):
        theta = (2 * torch.rand(len(u), orbit.pairs, generator=gen) - 1) * orbit.max_angle
        moved = orbit.act(u, theta)
        xs.append(orbit.map(moved).to(device, dtype))
        tangents.append([_jvp(orbit.map, moved, orbit.generator_field(moved, j)).to(device, dtype)
                         for j in range(orbit.pairs)])
    per_generator = [[tangents[v][j] for v in range(2)] for j in range(orbit.pairs)]
    return xs, per_generator


def _has_exact_orbits(data) -> bool:
    orbit = data.extras.get("orbit")
    return orbit is not None and all(
        hasattr(orbit, a) for a in ("latent", "act", "map", "generator_field", "pairs"))


def _quotients(op_matvec, dirs: list[Tensor]) -> list[float]:
    """v^T A v / v^T v for each direction v (NaN for v = 0: a backbone whose features do not
    move along the orbit has no tangent direction)."""
    values = []
    for v in dirs:
        flat = v.flatten()
        norm = float(flat @ flat)
        values.append(float(flat @ op_matvec(flat)) / norm if norm else math.nan)
    return values


def _mean(values: list[float]) -> float:
    return sum(values) / len(values)


def _abs_ratio(a: list[float], b: list[float]) -> float:
    """mean |a| / mean |b| (NaN when the reference is 0)."""
    den = _mean([abs(v) for v in b])
    return finite_or_nan(_mean([abs(v) for v in a]) / den if den else float("nan"))


class MetricSingularity(Metric):
    """Rayleigh quotients of G along orbit tangents vs random directions."""

    params: SingularityParams

    def __call__(self, ctx: MetricContext) -> dict[str, float]:
        p = self.params
        objective = ctx.arm.objective
        if not hasattr(objective, "loss_of_h"):
            raise TypeError(f"{type(objective).__name__} does not expose loss_of_h")
        dtype = getattr(torch, p.dtype)
        index = ctx.batch.index[: p.samples]
        x = ctx.batch.x[: p.samples]
        backbone = functional_copy(ctx.arm.backbone)
        exact = _has_exact_orbits(ctx.data)
        if exact:
            xs, tangents = _exact_views(ctx.data.extras["orbit"], index, ctx.generator,
                                        x.device, x.dtype)
            dirs = [_per_view_jvp(backbone, xs, t) for t in tangents]
        else:
            xs = [ctx.augmentation(x, index, ctx.generator, view=v) for v in range(2)]
            with torch.no_grad():
                z0, z1 = (backbone(v) for v in xs)
            dirs = [torch.cat((z1 - z0, z0 - z1))]
        problem = objective.loss_of_h(ctx.arm, xs, step=ctx.step).to(dtype)
        dirs = [d.to(problem.z.dtype) for d in dirs]
        shape = problem.z.shape
        randoms = [torch.randn(shape, generator=ctx.generator, dtype=torch.float64).to(
            problem.z.device, problem.z.dtype) for _ in range(p.random)]
        pushed = [_per_view_jvp(backbone, xs, [torch.randn(v.shape, generator=ctx.generator)
                                               .to(v.device, v.dtype) for v in xs]
                                ).to(problem.z.dtype) for _ in range(p.random)]
        gn = EffectiveHessian(problem.head, problem.loss, problem.z).gauss_newton

        def head_gain(v: Tensor) -> Tensor:
            return _jvp(problem.head, problem.z, v.view(shape)).flatten()

        tangent, random_, input_random = (_quotients(gn.matvec, d) for d in (dirs, randoms,
                                                                              pushed))
        gain_t = [float(head_gain(v).pow(2).sum() / v.pow(2).sum()) for v in dirs]
        gain_r = [float(head_gain(v).pow(2).sum() / v.pow(2).sum()) for v in randoms]
        return {"tangent_rq": _mean(tangent), "random_rq": _mean(random_),
                "ratio": _abs_ratio(tangent, random_),
                "input_random_rq": _mean(input_random),
                "input_ratio": _abs_ratio(tangent, input_random),
                "head_tangent_gain": _mean(gain_t), "head_random_gain": _mean(gain_r),
                "head_ratio": _abs_ratio(gain_t, gain_r), "exact": float(exact)}


METRIC_SINGULARITY_FIELDS = {
    "tangent_rq": FieldDoc("mean signed Rayleigh quotient v'Gv/v'v of the pull-back metric G "
                           "along augmentation-orbit directions"),
    "random_rq": FieldDoc("mean signed Rayleigh quotient of G along random Gaussian "
                          "directions of representation space"),
    "ratio": FieldDoc("mean |RQ(G)| along orbit directions over that along random "
                      "representation directions (0: G singular along the orbit)"),
    "input_random_rq": FieldDoc("mean signed Rayleigh quotient of G along random input "
                                "directions pushed through the backbone's Jacobian"),
    "input_ratio": FieldDoc("mean |RQ(G)| along orbit directions over that along pushed-"
                            "forward random input directions"),
    "head_tangent_gain": FieldDoc("mean ||J_h v||^2/||v||^2 of the head along orbit "
                                  "directions"),
    "head_random_gain": FieldDoc("mean ||J_h v||^2/||v||^2 of the head along random "
                                 "representation directions"),
    "head_ratio": FieldDoc("head gain along orbit directions over that along random "
                           "directions (loss-free pull-back J_h'J_h)"),
    "exact": FieldDoc("1 with exact group-orbit tangents, 0 with finite-difference secants "
                      "between two views"),
}


def build_metric_singularity(params: SingularityParams, ctx) -> MetricSingularity:
    """Rayleigh quotient of G along augmentation tangents vs random directions."""
    return MetricSingularity(params)
