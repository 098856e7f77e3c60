import math

import numpy as np
import torch
from geobench_projection import inits
from geobench_projection.metrics.collapse import Collapse, CollapseParams, EscapeParams, EscapeStep
from geobench_projection.objectives import redundancy

from geobench.contract.interfaces import BuildContext

from .helpers import build_arm, build_data, metric_context


def _erank(m: np.ndarray) -> float:
    s = np.linalg.svd(m, compute_uv=False)
    p = s[s > 1e-12 * s.max()] / s.sum()
    return float(np.exp(-(p * np.log(p)).sum()))


def _nstd(m: np.ndarray) -> float:
    n = m / np.linalg.norm(m, axis=1, keepdims=True)
    return float(n.std(axis=0, ddof=1).mean())


def test_collapse_fields_against_numpy():
    arm = build_arm(redundancy.build_vicreg, redundancy.VICRegParams()).eval()
    data = build_data()
    out = Collapse(CollapseParams(samples=6))(metric_context(arm, data, [data.train_x[:2]] * 2))
    with torch.no_grad():
        z = arm.backbone(data.reference_x[:6]).double().numpy()
        h = arm.head(arm.backbone(data.reference_x[:6])).double().numpy()
    assert math.isclose(out["backbone_erank"], _erank(z), rel_tol=1e-9)
    assert math.isclose(out["head_erank"], _erank(h), rel_tol=1e-9)
    assert math.isclose(out["backbone_std"], _nstd(z), rel_tol=1e-9)
    assert math.isclose(out["head_std"], _nstd(h), rel_tol=1e-9)


def test_escape_step_records_the_first_crossing_per_arm():
    arm = build_arm(redundancy.build_vicreg, redundancy.VICRegParams()).eval()
    data = build_data()
    last = arm.backbone[-1]
    weight = last.weight.detach().clone()
    inits.build_collapse(inits.CollapseParams(eps=0.0),
                         BuildContext(seed=0, device=torch.device("cpu")))(arm, data)
    metric = EscapeStep(EscapeParams(samples=8, threshold=1.5))
    views = [data.train_x[:2]] * 2
    first = metric(metric_context(arm, data, views, step=0))
    assert first["escaped"] == 0.0 and math.isnan(first["step"])
    assert math.isclose(first["value"], 1.0, rel_tol=1e-6)
    other = metric(metric_context(arm, data, views, step=0, arm_name="other"))
    assert other["escaped"] == 0.0
    with torch.no_grad():
        last.weight.copy_(weight * 50)
    out = metric(metric_context(arm, data, views, step=10))
    assert out == {"escaped": 1.0, "step": 10.0, "value": out["value"]} and out["value"] > 1.5
    with torch.no_grad():
        last.weight.zero_()
    again = metric(metric_context(arm, data, views, step=20))
    assert again["escaped"] == 1.0 and again["step"] == 10.0
    assert metric(metric_context(arm, data, views, step=20, arm_name="other"))["escaped"] == 0.0
    restarted = metric(metric_context(arm, data, views, step=0))
    assert restarted["escaped"] == 0.0


def test_escape_step_std_criterion_is_scaled_by_sqrt_d():
    arm = build_arm(redundancy.build_vicreg, redundancy.VICRegParams()).eval()
    data = build_data()
    out = EscapeStep(EscapeParams(samples=8, criterion="std", threshold=1e-6))(
        metric_context(arm, data, [data.train_x[:2]] * 2))
    with torch.no_grad():
        z = arm.backbone(data.reference_x[:8]).double().numpy()
    assert math.isclose(out["value"], _nstd(z) * math.sqrt(z.shape[1]), rel_tol=1e-9)
    assert out["step"] == 0.0
