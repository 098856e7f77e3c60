"""``guillotine``'s untrained-head baseline and selectivity, against hand-built heads."""

import math

import pytest
import torch
from geobench_projection.metrics.guillotine import (
    Guillotine,
    GuillotineParams,
    loss_share,
    untrained_head,
)
from geobench_projection.objectives import redundancy
from torch import nn

from geobench.geometry.probes import nccc_accuracy

from .helpers import build_arm, build_data, metric_context


def _head() -> nn.Sequential:
    return nn.Sequential(nn.Linear(5, 7), nn.BatchNorm1d(7), nn.ReLU(), nn.Linear(7, 4))


def test_untrained_head_is_a_fresh_default_initialisation_with_recomputed_statistics():
    trained = _head()
    with torch.no_grad():
        for p in trained.parameters():
            p.add_(3.0)
    z = torch.randn(50, 5, generator=torch.Generator().manual_seed(1))
    fresh = untrained_head(trained, 7, z)
    torch.manual_seed(7)
    expected = _head()  # construction runs reset_parameters in module order
    for a, b in zip(fresh.parameters(), expected.parameters()):
        assert torch.equal(a, b)
    pre = expected[0](z).detach()
    bn = fresh[1]
    assert torch.allclose(bn.running_mean, pre.mean(0), atol=1e-6)
    assert torch.allclose(bn.running_var, pre.var(0, unbiased=True), atol=1e-5)
    assert not fresh.training and trained[0].weight.min() > 2  # the arm's head is untouched
    normed = (pre - pre.mean(0)) / torch.sqrt(pre.var(0, unbiased=True) + bn.eps)
    with torch.no_grad():
        reference = expected[3](torch.relu(normed))
        assert torch.allclose(fresh(z), reference, atol=1e-5)


def test_a_head_that_cannot_be_reset_is_one_clear_error():
    class Scale(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = nn.Parameter(torch.ones(5))

        def forward(self, z):
            return z * self.w

    with pytest.raises(ValueError, match="cannot re-initialise the head's Scale"):
        untrained_head(Scale(), 0, torch.zeros(3, 5))


def test_loss_share_is_the_share_above_chance_lost():
    assert loss_share(0.9, 0.5, 0.1) == pytest.approx(0.5)
    assert loss_share(0.25, 0.2, 0.25) != loss_share(0.25, 0.2, 0.25)  # NaN at chance


def test_untrained_fields_match_an_independent_probe_on_a_fresh_head():
    arm = build_arm(redundancy.build_vicreg, redundancy.VICRegParams()).eval()
    data = build_data(n=60)
    out = Guillotine(GuillotineParams(probe="nccc", max_train=40, augmentation="none"))(
        metric_context(arm, data, [data.train_x[:2]] * 2, seed=3))
    with torch.no_grad():
        ztr, zte = arm.backbone(data.train_x[:40]), arm.backbone(data.test_x)
        fresh = untrained_head(arm.head, 3, ztr)
        untr = nccc_accuracy(fresh(ztr), data.train_y[:40], fresh(zte), data.test_y)
    assert out["untrained_head_accuracy"] == untr
    assert math.isclose(out["untrained_gap"], out["backbone_accuracy"] - untr)
    assert math.isclose(out["gap_over_untrained"], untr - out["head_accuracy"])
    chance = 1 / data.num_classes
    expected = (out["backbone_accuracy"] - out["head_accuracy"]) / (
        out["backbone_accuracy"] - chance)
    assert math.isclose(out["class_loss"], expected)
    assert math.isnan(out["aug_loss"]) and math.isnan(out["selectivity"])
