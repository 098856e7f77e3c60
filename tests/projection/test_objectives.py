"""Objectives: loss_of_h reproduces the training loss and its gradient w.r.t. the online
representation (stop-gradients included); EMA targets, momentum schedule, DINO centre."""

import math

import pytest
import torch
from geobench_projection.objectives import dino, redundancy, stopgrad
from geobench_projection.objectives.common import cosine_momentum
from geobench_projection.objectives.losses import negative_cosine

from geobench.components import heads
from geobench.contract.interfaces import Batch

from .helpers import build_arm

CASES = [
    (stopgrad.build_simsiam, stopgrad.SimSiamParams()),
    (stopgrad.build_byol, stopgrad.BYOLParams()),
    (redundancy.build_vicreg, redundancy.VICRegParams()),
    (redundancy.build_barlow_twins, redundancy.BarlowTwinsParams()),
    (dino.build_dino, dino.DINOParams(out_dim=9)),
]


def _views(seed=1, n=6, d=6):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(n, d, generator=gen) for _ in range(2)]


def _batch(n=6):
    return Batch(torch.zeros(n, 6), torch.zeros(n, dtype=torch.long), torch.arange(n), 0)


def _perturb_targets(arm):
    """Make EMA targets differ from the online network, so stop-gradients matter."""
    target = getattr(arm.objective, "target", None) or getattr(arm.objective, "teacher", None)
    if target is not None:
        with torch.no_grad():
            for p in target.parameters():
                p.add_(0.1 * torch.randn_like(p))


@pytest.mark.parametrize("norm", ["none", "batch"])
@pytest.mark.parametrize("builder,params", CASES)
def test_loss_of_h_matches_training_loss_and_gradient(builder, params, norm):
    head = heads.MLPHeadParams(depth=2, hidden=7, out=4, activation="gelu", norm=norm,
                               predictor=heads.PredictorParams(hidden=6))
    arm = build_arm(builder, params, head, norm=(norm == "batch"))
    _perturb_targets(arm)
    views = _views()
    problem = arm.objective.loss_of_h(arm, views)
    assert problem.z.shape == (12, 5)

    arm.train()
    reps = []
    handle = arm.backbone.register_forward_hook(lambda m, i, out: reps.append(out) or out)
    for r in reps:
        r.retain_grad()
    loss = arm.objective(arm, _batch(), views)
    handle.remove()
    online = reps[:2]
    for r in online:
        r.retain_grad()
    grads = torch.autograd.grad(loss, online, allow_unused=True)

    z = problem.z.clone().requires_grad_(True)
    ref = problem.loss(problem.head(z))
    (gz,) = torch.autograd.grad(ref, z)
    torch.testing.assert_close(ref, loss.detach(), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(gz, torch.cat(grads), rtol=1e-4, atol=1e-6)


def test_loss_of_h_has_no_side_effects_on_batch_norm():
    head = heads.MLPHeadParams(depth=2, hidden=7, out=4, norm="batch",
                               predictor=heads.PredictorParams(hidden=6))
    arm = build_arm(stopgrad.build_byol, stopgrad.BYOLParams(), head, norm=True)
    before = {k: v.clone() for k, v in arm.state_dict().items()}
    arm.eval()
    arm.objective.loss_of_h(arm, _views())
    after = arm.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before)
    assert not arm.training


def test_simsiam_formula_and_missing_predictor():
    arm = build_arm(stopgrad.build_simsiam, stopgrad.SimSiamParams())
    v1, v2 = _views()
    z1, z2 = arm.head(arm.backbone(v1)), arm.head(arm.backbone(v2))
    p1, p2 = arm.head.predictor(z1), arm.head.predictor(z2)
    cos = torch.cosine_similarity
    expected = -0.5 * (cos(p1, z2).mean() + cos(p2, z1).mean())
    torch.testing.assert_close(arm.objective(arm, _batch(), [v1, v2]), expected)
    plain = heads.MLPHeadParams(depth=2, hidden=7, out=4)
    with pytest.raises(ValueError, match="predictor"):
        build_arm(stopgrad.build_simsiam, stopgrad.SimSiamParams(), plain)
    ablation = build_arm(stopgrad.build_simsiam, stopgrad.SimSiamParams(require_predictor=False),
                        plain)
    z1, z2 = ablation.embed(v1), ablation.embed(v2)
    torch.testing.assert_close(ablation.objective(ablation, _batch(), [v1, v2]),
                               0.5 * (negative_cosine(z1, z2) + negative_cosine(z2, z1)))


def test_byol_target_is_an_ema_copy_without_predictor():
    arm = build_arm(stopgrad.build_byol, stopgrad.BYOLParams(momentum=0.9, schedule="constant"))
    target = arm.objective.target
    assert target["head"].predictor is None
    assert all(not p.requires_grad for p in target.parameters())
    old = {k: v.clone() for k, v in target.state_dict().items()}
    with torch.no_grad():
        for p in arm.backbone.parameters():
            p.add_(1.0)
    arm.objective.after_step(arm, 0, 10)
    for name, p in arm.backbone.named_parameters():
        expected = 0.9 * old[f"backbone.{name}"] + 0.1 * p
        torch.testing.assert_close(target["backbone"].get_parameter(name), expected)


def test_cosine_momentum_schedule():
    assert math.isclose(cosine_momentum(0.99, 9, 10), 1.0)
    k, total, base = 3, 10, 0.996
    expected = 1 - (1 - base) * (math.cos(math.pi * (k + 1) / total) + 1) / 2
    assert math.isclose(cosine_momentum(base, k, total), expected)


def test_dino_centre_and_teacher_temperature():
    params = dino.DINOParams(out_dim=9, center_momentum=0.8, warmup_teacher_temp=0.02,
                             teacher_temp=0.06, warmup_teacher_temp_steps=4)
    arm = build_arm(dino.build_dino, params)
    views = _views()
    teacher = arm.objective.teacher
    with torch.no_grad():
        logits = [teacher["prototypes"](teacher["head"](teacher["backbone"](v))) for v in views]
    arm.objective(arm, _batch(), views)
    expected = 0.2 * torch.cat(logits).mean(0, keepdim=True)
    torch.testing.assert_close(arm.objective.center, expected)
    assert math.isclose(arm.objective.teacher_temp(2), 0.04)
    assert math.isclose(arm.objective.teacher_temp(7), 0.06)
    w = arm.objective.prototypes.weight
    h = torch.randn(3, w.shape[1])
    cos = torch.nn.functional.normalize(h, dim=1) @ torch.nn.functional.normalize(w, dim=1).T
    torch.testing.assert_close(arm.objective.prototypes(h), cos)
