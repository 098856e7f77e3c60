import copy

import pytest
import torch
from geobench_projection import inits
from geobench_projection.objectives import stopgrad
from torch import nn

from geobench.components import heads
from geobench.contract.interfaces import Arm, BuildContext

from .helpers import TinyBackbone, build_data


class PooledBackbone(nn.Module):
    """Ends in a nonlinearity + mean, like a ResNet's global pooling: no output layer."""

    feature_dim = 5

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(6, 10)

    def forward(self, x):
        return torch.relu(self.lin(x)).view(-1, 5, 2).mean(-1)


def _arm(backbone):
    ctx = BuildContext(seed=0, device=torch.device("cpu"), feature_dim=5)
    head = heads.build_mlp_head(heads.MLPHeadParams(depth=2, hidden=7, out=4,
                                                    predictor=heads.PredictorParams()), ctx)
    return Arm(backbone, head, stopgrad.build_simsiam(stopgrad.SimSiamParams(), ctx))


def _c(seed, scale=1.0):
    return scale * torch.randn(5, generator=torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("eps", [0.0, 0.05])
@pytest.mark.parametrize("mode", ["auto", "last_layer", "affine"])
def test_collapse_gives_eps_f0_plus_c(eps, mode):
    torch.manual_seed(0)
    arm = _arm(TinyBackbone())
    f0 = copy.deepcopy(arm.backbone)
    data = build_data()
    inits.build_collapse(inits.CollapseParams(eps=eps, bias_scale=2.0, mode=mode),
                         BuildContext(seed=3, device=torch.device("cpu")))(arm, data)
    x = data.train_x
    with torch.no_grad():
        expected = eps * f0(x) + _c(3, 2.0)
        torch.testing.assert_close(arm.backbone(x), expected, rtol=1e-5, atol=1e-6)
    wrapped = isinstance(arm.backbone, inits.CollapsedBackbone)
    assert wrapped == (mode == "affine")
    assert arm.backbone.feature_dim == 5


def test_auto_appends_an_output_layer_to_a_pooled_backbone():
    torch.manual_seed(0)
    arm = _arm(PooledBackbone())
    f0 = copy.deepcopy(arm.backbone)
    data = build_data()
    ctx = BuildContext(seed=1, device=torch.device("cpu"))
    with pytest.raises(ValueError, match="last_layer"):
        inits.build_collapse(inits.CollapseParams(mode="last_layer"), ctx)(_arm(PooledBackbone()),
                                                                           data)
    inits.build_collapse(inits.CollapseParams(eps=0.1), ctx)(arm, data)
    assert isinstance(arm.backbone, inits.CollapsedBackbone)
    with torch.no_grad():
        torch.testing.assert_close(arm.backbone(data.train_x), 0.1 * f0(data.train_x) + _c(1))


def test_exact_collapse_is_constant_but_trainable():
    torch.manual_seed(0)
    arm = _arm(TinyBackbone())
    data = build_data()
    inits.build_collapse(inits.CollapseParams(eps=0.0),
                         BuildContext(seed=0, device=torch.device("cpu")))(arm, data)
    z = arm.backbone(data.train_x)
    assert torch.equal(z, z[:1].expand_as(z))
    loss = arm.objective(arm, None, [data.train_x[:8], data.train_x[8:16]])
    loss.backward()
    last = arm.backbone[-1]
    assert float(last.weight.grad.abs().sum()) > 0


@pytest.mark.parametrize("spec", [
    {"name": "mlp", "depth": 2, "width": 16, "out_dim": 8},
    {"name": "mlp", "depth": 2, "width": 16},
    {"name": "resnet_tiny", "widths": [4, 8, 8, 8]},
    {"name": "vit_tiny_cpu", "depth": 1, "dim": 16, "heads": 2},
])
def test_collapse_on_registered_backbones(spec):
    from geobench.contract.manager import load_registry

    reg = load_registry()
    data = reg.build("datasets", {"name": "digits", "size": 8, "channels": 3, "n_train": 40,
                                  "n_test": 20, "reference_size": 8},
                     BuildContext(0, torch.device("cpu")))
    ctx = BuildContext(seed=5, device=torch.device("cpu"), data=data)
    torch.manual_seed(0)
    backbone = reg.build("backbones", spec, ctx)
    ctx.feature_dim = backbone.feature_dim
    head = heads.build_mlp_head(heads.MLPHeadParams(depth=2, hidden=8, out=4,
                                                    predictor=heads.PredictorParams()), ctx)
    arm = Arm(backbone, head, stopgrad.build_simsiam(stopgrad.SimSiamParams(), ctx)).eval()
    f0 = copy.deepcopy(arm.backbone)
    inits.build_collapse(inits.CollapseParams(eps=0.05), ctx)(arm, data)
    x = data.train_x[:6]
    c = torch.randn(backbone.feature_dim, generator=torch.Generator().manual_seed(5))
    with torch.no_grad():
        torch.testing.assert_close(arm.backbone.eval()(x), 0.05 * f0(x) + c,
                                   rtol=1e-4, atol=1e-5)
