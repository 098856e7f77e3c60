"""The typed plugin contract (geobench.contract.interfaces) and its stable import paths."""

import pytest
import torch
from torch import nn

import geobench.api
import geobench.hookspecs
import geobench.params
import geobench.plugins
from geobench.contract import hooks as hookspecs
from geobench.contract import interfaces as api
from geobench.contract import manager as plugins
from geobench.contract import param_models as params
from geobench.contract.interfaces import Arm, Batch, Data, Metric, MetricParams, Objective


def _data() -> Data:
    x = torch.arange(24.0).reshape(4, 2, 3)
    y = torch.tensor([0, 1, 0, 1])
    return Data(x, y, x[:2], y[:2], x[:1], y[:1], 2, 2, extras={"note": "kept"})


def test_data_shape_and_move():
    data = _data()
    assert data.input_shape == (2, 3)
    moved = data.to(torch.device("cpu"))
    assert moved is not data and torch.equal(moved.train_x, data.train_x)
    assert moved.extras == {"note": "kept"} and moved.num_classes == 2 and moved.batch_size == 2


class Double(nn.Module):
    def forward(self, x):
        return 2 * x


def test_arm_represents_with_its_backbone_and_embeds_through_its_head():
    arm = Arm(Double(), nn.Identity(), Objective())
    x = torch.ones(2, 3)
    assert torch.equal(arm.represent(x), 2 * x)
    arm.head = Double()
    assert torch.equal(arm.embed(x), 4 * x)
    assert set(dict(arm.named_children())) == {"backbone", "head", "objective"}


def test_the_base_objective_defines_no_loss():
    class Mine(Objective):
        pass

    batch = Batch(torch.zeros(1), torch.zeros(1), torch.zeros(1), 0)
    with pytest.raises(TypeError, match="Mine defines no loss"):
        Mine()(Arm(nn.Identity(), nn.Identity(), Objective()), batch, [])
    assert Objective.n_views == 2


def test_a_metric_is_evaluated_at_its_params_every():
    class Const(Metric):
        def __call__(self, ctx):
            return {"v": 1.0}

    assert Const(MetricParams(every=7)).every == 7 and Const(MetricParams()).every is None
    assert Const.cross_arm is False


def test_stable_import_paths_are_the_contract_modules():
    assert geobench.api.Data is api.Data
    assert geobench.api.__all__ == [*api.__all__, "MirrorMap", "batches"]
    assert geobench.params.Params is params.Params
    assert geobench.hookspecs.hookimpl is hookspecs.hookimpl
    assert geobench.plugins.registry is plugins.registry
