"""mirror_descent beside the core optimizers; per-pattern maps; third-party maps by name."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from geobench_mirror import MirrorDescent, maps
from geobench_mirror.assign import optimizer_maps
from torch import nn

from geobench.components.lars import LARS
from geobench.contract.hooks import hookimpl
from geobench.contract.interfaces import BuildContext, Params
from geobench.contract.manager import load_registry, registry
from tests.mirror.helpers import Cubic


def ctx_for(module: nn.Module, reg=None) -> BuildContext:
    return BuildContext(seed=0, device=torch.device("cpu"), model=module,
                        registry=reg or registry())


def test_registered_optimizers_build_over_trainable_parameters():
    reg = load_registry()
    net = nn.Sequential(nn.Linear(3, 4), nn.Linear(4, 1))
    net[1].bias.requires_grad_(False)
    ctx = ctx_for(net)
    sgd = reg.build("optimizers", {"name": "sgd", "lr": 0.1, "momentum": 0.9,
                                   "nesterov": True}, ctx)
    adam = reg.build("optimizers", {"name": "adam", "lr": 0.01}, ctx)
    lars = reg.build("optimizers", {"name": "lars", "lr": 0.3}, ctx)
    md = reg.build("optimizers", {"name": "mirror_descent", "lr": 0.1,
                                  "mirror_map": {"name": "hypentropy", "lam": 0.1}}, ctx)
    assert isinstance(sgd, torch.optim.SGD) and sgd.defaults["nesterov"]
    assert isinstance(adam, torch.optim.Adam)
    assert isinstance(lars, LARS) and lars.defaults["momentum"] == 0.9
    assert isinstance(md, MirrorDescent) and not md.defaults["compile"]
    compiled = reg.build("optimizers", {"name": "mirror_descent", "lr": 0.1, "compile": True},
                         ctx)
    assert compiled.defaults["compile"]
    for opt in (sgd, adam, lars, md):
        params = [p for g in opt.param_groups for p in g["params"]]
        assert len(params) == 3 and all(p.requires_grad for p in params)
    assert md.param_groups[0]["mirror_map"] == maps.hypentropy(0.1)


def test_per_pattern_maps_first_match_wins():
    reg = load_registry()
    net = nn.Sequential(nn.Linear(3, 4, bias=False), nn.Linear(4, 2, bias=False))
    spec = {"name": "mirror_descent", "lr": 0.1,
            "maps": {"0.*": {"name": "hypentropy", "lam": 0.5}, "*.weight": {"name": "pnorm"},
                     "*": {"name": "euclidean"}}}
    opt = reg.build("optimizers", spec, ctx_for(net))
    assigned = {name: m for name, _, m in optimizer_maps(net, spec, registry=reg)}
    assert assigned == {"0.weight": maps.hypentropy(0.5), "1.weight": maps.pnorm(3.0)}
    groups = {repr(g["mirror_map"]): g["params"] for g in opt.param_groups}
    assert groups["hypentropy(lam=0.5)"][0] is net[0].weight


def test_pattern_errors_are_explained():
    reg = load_registry()
    net = nn.Sequential(nn.Linear(3, 4, bias=False))
    with pytest.raises(ValueError, match="matches none of the map patterns"):
        reg.build("optimizers", {"name": "mirror_descent", "lr": 0.1,
                                 "maps": {"1.*": {"name": "euclidean"}}}, ctx_for(net))
    with pytest.raises(ValueError, match=r"match no parameter; parameters: 0.weight"):
        reg.build("optimizers", {"name": "mirror_descent", "lr": 0.1,
                                 "maps": {"layer0.*": {"name": "euclidean"},
                                          "*": {"name": "euclidean"}}}, ctx_for(net))
    with pytest.raises(ValueError, match="either mirror_map or maps"):
        reg.validate("optimizers", {"name": "mirror_descent", "lr": 0.1,
                                    "mirror_map": {"name": "euclidean"},
                                    "maps": {"*": {"name": "euclidean"}}})
    with pytest.raises(ValueError, match="did you mean 'hypentropy'"):
        reg.build("optimizers", {"name": "mirror_descent", "lr": 0.1,
                                 "mirror_map": {"name": "hypentropie", "lam": 1.0}},
                  ctx_for(net))


class ThirdParty:
    class CubicParams(Params):
        pass

    @staticmethod
    @hookimpl
    def register_mirror_maps(register):
        register("cubic_plus", lambda params, ctx: Cubic(), params=ThirdParty.CubicParams,
                 doc="R = |θ|³/3 + θ²/2")


def test_a_third_party_map_works_by_name():
    reg = load_registry(extra_plugins=(ThirdParty,))  # reaches the optimizer through ctx
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(3, 2, bias=False)).double()
    opt = reg.build("optimizers", {"name": "mirror_descent", "lr": 0.1,
                                   "maps": {"*": {"name": "cubic_plus"}}}, ctx_for(net, reg))
    w = net[0].weight
    t = w.detach().numpy().copy()
    g = np.full_like(t, 0.5)
    w.grad = torch.from_numpy(g.copy())
    opt.step()
    u = np.sign(t) * t**2 + t - 0.1 * g
    expected = np.sign(u) * (np.sqrt(1 + 4 * np.abs(u)) - 1) / 2
    np.testing.assert_allclose(w.detach().numpy(), expected, rtol=1e-12)
