import math

import torch
from geobench_projection.metrics.guillotine import Guillotine, GuillotineParams
from geobench_projection.objectives import redundancy

from geobench.geometry.probes import nccc_accuracy

from .helpers import build_arm, build_data, metric_context


def test_guillotine_gap_is_backbone_minus_head_accuracy():
    arm = build_arm(redundancy.build_vicreg, redundancy.VICRegParams()).eval()
    data = build_data(n=60)
    out = Guillotine(GuillotineParams(probe="nccc", max_train=40))(
        metric_context(arm, data, [data.train_x[:2]] * 2))
    with torch.no_grad():
        ztr, zte = arm.backbone(data.train_x[:40]), arm.backbone(data.test_x)
        htr, hte = arm.head(ztr), arm.head(zte)
    back = nccc_accuracy(ztr, data.train_y[:40], zte, data.test_y)
    head = nccc_accuracy(htr, data.train_y[:40], hte, data.test_y)
    assert out["backbone_accuracy"] == back and out["head_accuracy"] == head
    assert math.isclose(out["gap"], back - head)
    for probe in ("linear", "knn"):
        res = Guillotine(GuillotineParams(probe=probe, k=3, max_train=40))(
            metric_context(arm, data, [data.train_x[:2]] * 2))
        assert 0.0 <= res["backbone_accuracy"] <= 1.0
        assert math.isclose(res["gap"], res["backbone_accuracy"] - res["head_accuracy"])
