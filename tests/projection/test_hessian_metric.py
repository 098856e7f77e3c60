"""effective_hessian against dense references built with torch.func.hessian / jacrev."""

import math

import pytest
import torch
from geobench_projection.metrics.hessian import EffectiveHessianMetric, EffectiveHessianParams
from geobench_projection.objectives import redundancy, stopgrad

from geobench.components import heads

from .helpers import build_arm, build_data, metric_context


def _dense_reference(problem):
    """(H, G, K) from torch.func: H = hessian of z -> L(h(z)); G = J^T H_L J; K = H - G."""
    z = problem.z
    n = z.numel()
    f = lambda zz: problem.loss(problem.head(zz))  # noqa: E731
    hess = torch.func.hessian(f)(z).reshape(n, n)
    h = problem.head(z)
    jac = torch.func.jacrev(problem.head)(z).reshape(h.numel(), n)
    hl = torch.func.hessian(problem.loss)(h).reshape(h.numel(), h.numel())
    gn = jac.T @ hl @ jac
    return hess, gn, hess - gn


def _views(n=4, d=6, seed=1):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(n, d, generator=gen) for _ in range(2)]


@pytest.mark.parametrize("activation", ["gelu", "relu", "identity"])
def test_fields_match_dense_eigenvalues(activation):
    head = heads.MLPHeadParams(depth=2, hidden=7, out=4, activation=activation,
                               predictor=heads.PredictorParams(hidden=6))
    arm = build_arm(stopgrad.build_simsiam, stopgrad.SimSiamParams(), head)
    data = build_data()
    views = _views()
    metric = EffectiveHessianMetric(EffectiveHessianParams(samples=None))
    out = metric(metric_context(arm, data, views))
    problem = arm.objective.loss_of_h(arm, views).to(torch.float64)
    hess, gn, k = _dense_reference(problem)
    for prefix, mat in (("", hess), ("G_", gn), ("K_", k)):
        ev = torch.linalg.eigvalsh((mat + mat.T) / 2)
        scale = float(torch.linalg.eigvalsh((hess + hess.T) / 2).abs().max())
        if prefix == "K_" and activation != "gelu":
            assert out["K_lambda_min"] == 0.0 and out["K_lambda_max"] == 0.0
            assert out["K_neg_count"] == 0.0
            continue
        assert math.isclose(out[prefix + "lambda_min"], float(ev[0]), rel_tol=1e-6,
                            abs_tol=1e-9 * scale)
        assert math.isclose(out[prefix + "lambda_max"], float(ev[-1]), rel_tol=1e-6,
                            abs_tol=1e-9 * scale)
        assert out[prefix + "neg_count"] == float((ev < -1e-9 * scale).sum())
    if activation == "gelu":
        assert out["K_lambda_min"] < 0
    k_norm = float(torch.linalg.eigvalsh((k + k.T) / 2).abs().max())
    expected = k_norm / scale if activation == "gelu" else 0.0  # ReLU / linear: K = 0
    assert math.isclose(out["K_rel_norm"], expected, rel_tol=1e-6, abs_tol=1e-12)
    z = problem.z.clone().requires_grad_(True)
    h = problem.head(z)
    (g,) = torch.autograd.grad(problem.loss(h), h)
    assert math.isclose(out["grad_norm"], float(g.norm()), rel_tol=1e-9)


def test_lanczos_path_matches_dense_extremes():
    head = heads.MLPHeadParams(depth=2, hidden=9, out=5, activation="silu")
    arm = build_arm(redundancy.build_vicreg, redundancy.VICRegParams(), head)
    views = _views(n=6)
    dense = EffectiveHessianMetric(EffectiveHessianParams(samples=None))
    sparse = EffectiveHessianMetric(EffectiveHessianParams(samples=None, dense_threshold=10,
                                                           probes=2, slq_steps=20))
    ctx = metric_context(arm, build_data(), views)
    a, b = dense(ctx), sparse(ctx)
    for key in ("lambda_min", "lambda_max", "G_lambda_max", "K_lambda_min"):
        assert math.isclose(a[key], b[key], rel_tol=1e-4), key


def test_samples_takes_the_first_rows_of_each_view():
    arm = build_arm(stopgrad.build_simsiam, stopgrad.SimSiamParams())
    views = _views(n=8)
    short = [v[:3] for v in views]
    data = build_data()
    a = EffectiveHessianMetric(EffectiveHessianParams(samples=3))(
        metric_context(arm, data, views))
    b = EffectiveHessianMetric(EffectiveHessianParams(samples=None))(
        metric_context(arm, data, short))
    assert a == b


@pytest.mark.parametrize("dense_threshold", [0, 4096])
def test_relu_head_k_is_zero_with_nothing_unresolved_on_both_paths(dense_threshold):
    # a ReLU MLP head is piecewise linear in z, so K = 0 exactly (closed form); the dense
    # path leaves nothing unresolved for any operator
    head = heads.MLPHeadParams(depth=2, hidden=9, out=5, activation="relu")
    arm = build_arm(redundancy.build_vicreg, redundancy.VICRegParams(), head)
    metric = EffectiveHessianMetric(EffectiveHessianParams(samples=None,
                                                           dense_threshold=dense_threshold))
    out = metric(metric_context(arm, build_data(), _views(n=6)))
    assert out["K_lambda_min"] == out["K_lambda_max"] == out["K_rel_norm"] == 0.0
    assert out["K_neg_count"] == out["K_neg_unresolved"] == 0.0
    if dense_threshold:
        assert out["neg_unresolved"] == out["G_neg_unresolved"] == 0.0
