import math

import numpy as np
import pytest
import torch
from geobench_projection.metrics.common import fixed_indices
from geobench_projection.metrics.orbit import (
    OrbitCompression,
    OrbitParams,
    class_separation,
    orbit_spread,
)
from geobench_projection.metrics.singularity import MetricSingularity, SingularityParams
from geobench_projection.objectives import redundancy
from torch import nn

from geobench.components import heads
from geobench.contract.interfaces import Arm, BuildContext

from .helpers import metric_context, orbit_data


class Identity(nn.Identity):
    def __init__(self, d):
        super().__init__()
        self.feature_dim = d


def _arm(d=6, class_dim=2, nuisance_gain=0.1):
    """Identity backbone; linear head scaling the nuisance coordinates by ``nuisance_gain``."""
    ctx = BuildContext(seed=0, device=torch.device("cpu"), feature_dim=d)
    head = heads.build_linear_head(heads.LinearHeadParams(out=d), ctx)
    with torch.no_grad():
        head.projector.weight.copy_(torch.diag(torch.tensor(
            [1.0] * class_dim + [nuisance_gain] * (d - class_dim))))
    ctx.embed_dim = d
    return Arm(Identity(d), head, redundancy.build_vicreg(redundancy.VICRegParams(), ctx))


def test_spread_and_separation_against_loops():
    gen = torch.Generator().manual_seed(0)
    p = torch.randn(5, 3, 4, generator=gen, dtype=torch.float64).numpy()
    within = np.mean([np.sum((p[i, k] - p[i].mean(0)) ** 2) for i in range(5) for k in range(3)])
    grand = p.reshape(-1, 4).mean(0)
    total = np.mean([np.sum((p[i, k] - grand) ** 2) for i in range(5) for k in range(3)])
    w, t = orbit_spread(torch.from_numpy(p))
    assert math.isclose(w, within, rel_tol=1e-12) and math.isclose(t, total, rel_tol=1e-12)
    x = p.reshape(-1, 4)
    y = np.array([0, 1, 1, 2, 0, 2, 1, 0, 0, 2, 1, 1, 2, 0, 2])
    mu = {c: x[y == c].mean(0) for c in set(y)}
    between = np.mean([np.sum((mu[c] - grand) ** 2) for c in y])
    wc = np.mean([np.sum((x[i] - mu[y[i]]) ** 2) for i in range(len(y))])
    got = class_separation(torch.from_numpy(x), torch.from_numpy(y))
    assert math.isclose(got, between / wc, rel_tol=1e-12)


def test_orbit_compression_on_exact_orbits():
    data = orbit_data()
    arm = _arm().eval()
    params = OrbitParams(samples=12, views=5)
    out = OrbitCompression(params)(metric_context(arm, data, [data.train_x[:2]] * 2, seed=7))
    index = fixed_indices(len(data.train_x), 12, 7)  # the sample set comes from ctx.seed
    views = data.extras["orbit"].orbit("train", index, 5, torch.Generator().manual_seed(7))
    scale = torch.tensor([1.0, 1.0, 0.1, 0.1, 0.1, 0.1])
    wb, tb = orbit_spread(views)
    wh, th = orbit_spread(views * scale)
    # orbits move only the nuisance coordinates, which the head shrinks 10x
    assert math.isclose(wh, wb / 100, rel_tol=1e-6)
    assert math.isclose(out["normalised_ratio"], (wb / tb) / (wh / th), rel_tol=1e-6)
    assert math.isclose(out["raw_ratio"], 100.0, rel_tol=1e-5)
    assert math.isclose(out["scale_ratio"], tb / th, rel_tol=1e-6)
    assert out["normalised_ratio"] > 1
    assert out["head_class_sep"] > out["backbone_class_sep"]


def test_metric_singularity_vanishes_on_orbit_tangents_of_an_invariant_head():
    data = orbit_data()
    arm = _arm(nuisance_gain=0.0).eval()
    ctx = metric_context(arm, data, [data.train_x[:8]] * 2)
    out = MetricSingularity(SingularityParams(samples=8, random=3))(ctx)
    assert out["exact"] == 1.0
    assert out["tangent_rq"] == 0.0 and out["head_tangent_gain"] == 0.0
    assert out["ratio"] == 0.0 and out["head_ratio"] == 0.0
    assert out["head_random_gain"] > 0 and out["random_rq"] != 0


def test_metric_singularity_tangent_quotient_against_dense_g():
    data = orbit_data()
    arm = _arm(nuisance_gain=0.5).eval()
    gen_seed = 11
    ctx = metric_context(arm, data, [data.train_x[:6]] * 2, seed=gen_seed)
    out = MetricSingularity(SingularityParams(samples=6, random=2))(ctx)
    # rebuild the views and tangents the metric drew, then G densely with torch.func
    orbit, gen = data.extras["orbit"], torch.Generator().manual_seed(gen_seed)
    u = orbit.latent["train"][:6]
    xs, tangents = [], []
    for _ in range(2):
        theta = (2 * torch.rand(6, orbit.pairs, generator=gen) - 1) * orbit.max_angle
        moved = orbit.act(u, theta)
        xs.append(moved)
        tangents.append([orbit.generator_field(moved, j) for j in range(orbit.pairs)])
    problem = arm.objective.loss_of_h(arm, xs).to(torch.float64)
    z = problem.z
    jac = torch.func.jacrev(problem.head)(z).reshape(z.numel(), z.numel())
    hl = torch.func.hessian(problem.loss)(problem.head(z)).reshape(z.numel(), z.numel())
    g = jac.T @ hl @ jac
    rq = []
    for j in range(orbit.pairs):
        v = torch.cat([tangents[0][j], tangents[1][j]]).double().flatten()
        rq.append(float(v @ g @ v / (v @ v)))
    assert math.isclose(out["tangent_rq"], sum(rq) / len(rq), rel_tol=1e-6)
    gains = []
    for j in range(orbit.pairs):
        v = torch.cat([tangents[0][j], tangents[1][j]]).double().flatten()
        gains.append(float((jac @ v).pow(2).sum() / (v @ v)))
    assert math.isclose(out["head_tangent_gain"], sum(gains) / len(gains), rel_tol=1e-6)


@pytest.mark.parametrize("sigma", [0.1])
def test_metric_singularity_secants_without_orbit_structure(sigma):
    data = orbit_data()
    data.extras.clear()
    arm = _arm(nuisance_gain=0.5).eval()

    def noise(x, index, generator, view=0):
        return x + sigma * torch.randn(x.shape, generator=generator)

    ctx = metric_context(arm, data, [data.train_x[:6]] * 2, augmentation=noise)
    out = MetricSingularity(SingularityParams(samples=6, random=2))(ctx)
    assert out["exact"] == 0.0
    assert all(math.isfinite(v) for v in out.values())


def test_metric_singularity_without_a_tangent_reads_nan():
    """Views the backbone maps to the same features (here: no augmentation) leave no tangent
    direction: its quotient is undefined, NaN, and the random ones are still measured."""
    data = orbit_data()
    data.extras.clear()
    arm = _arm(nuisance_gain=0.5).eval()
    ctx = metric_context(arm, data, [data.train_x[:6]] * 2,
                         augmentation=lambda x, index, generator, view=0: x)
    out = MetricSingularity(SingularityParams(samples=6, random=2))(ctx)
    assert math.isnan(out["tangent_rq"]) and math.isnan(out["ratio"])
    assert math.isfinite(out["random_rq"]) and out["random_rq"] != 0


class Attention(nn.Module):
    """Self-attention over 3 tokens of width 2 (fused CPU attention kernels have no
    forward-mode derivative; the metric must still push tangents through)."""

    feature_dim = 6

    def forward(self, x):
        t = x.view(-1, 3, 2)
        return torch.nn.functional.scaled_dot_product_attention(t, t, t).flatten(1)


def test_metric_singularity_through_attention():
    data = orbit_data()
    arm = _arm(nuisance_gain=0.5)
    arm.backbone = Attention()
    out = MetricSingularity(SingularityParams(samples=6, random=2))(
        metric_context(arm.eval(), data, [data.train_x[:6]] * 2))
    assert out["exact"] == 1.0 and all(math.isfinite(v) for v in out.values())
