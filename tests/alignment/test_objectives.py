"""The registered objectives: parameters, views used, values against direct formulas."""

import math

import pytest
import torch
from geobench_alignment import losses
from pydantic import ValidationError

from geobench.contract.interfaces import Batch, BuildContext
from geobench.contract.manager import load_registry

from .helpers import arm, blobs


@pytest.fixture(scope="module")
def reg():
    return load_registry()


def _ctx(data):
    return BuildContext(seed=0, device=torch.device("cpu"), data=data, feature_dim=5,
                        embed_dim=4)


def _batch(data, b=12):
    index = torch.arange(b)
    x = data.train_x[index]
    return Batch(x, data.train_y[index], index, 0), [x + 0.1, x - 0.1]


@pytest.mark.parametrize("name", ["cl", "simclr", "nscl", "supcon"])
def test_contrastive_objectives_apply_their_loss_to_two_views(reg, name):
    data = blobs()
    obj = reg.build("objectives", {"name": name, "tau": 0.3}, _ctx(data))
    a = arm(obj)
    batch, views = _batch(data)
    z1, z2 = a.embed(views[0]), a.embed(views[1])
    expected = {
        "cl": lambda: losses.nt_xent(z1, z2, 0.3),
        "simclr": lambda: losses.nt_xent(z1, z2, 0.3),
        "nscl": lambda: losses.nscl(z1, z2, batch.y, 0.3),
        "supcon": lambda: losses.supcon(z1, z2, batch.y, 0.3),
    }[name]()
    loss = obj(a, batch, views)
    assert loss.item() == pytest.approx(expected.item())
    assert type(obj).n_views == 2
    loss.backward()
    assert a.backbone.weight.grad is not None


def test_nscl_positive_in_denominator_switch(reg):
    data = blobs()
    batch, views = _batch(data)
    vals = {}
    for flag in (True, False):
        obj = reg.build("objectives", {"name": "nscl", "positive_in_denominator": flag},
                        _ctx(data))
        a = arm(obj)
        z1, z2 = a.embed(views[0]), a.embed(views[1])
        vals[flag] = obj(a, batch, views).item()
        ref = losses.nscl(z1, z2, batch.y, 0.5, positive_in_denominator=flag)
        assert vals[flag] == pytest.approx(ref.item())
    assert vals[True] > vals[False]  # an extra positive term in the denominator


def test_ce_owns_a_classifier_and_uses_one_view(reg):
    data = blobs(classes=3)
    obj = reg.build("objectives", {"name": "ce"}, _ctx(data))
    assert type(obj).n_views == 1
    assert obj.classifier.in_features == 4 and obj.classifier.out_features == 3
    a = arm(obj)
    batch, views = _batch(data)
    logits = obj.classifier(a.embed(views[0])).detach()
    ref = -sum(
        float(logits[i, batch.y[i]]) - math.log(sum(math.exp(float(v)) for v in logits[i]))
        for i in range(len(batch.y))
    ) / len(batch.y)
    assert obj(a, batch, views).item() == pytest.approx(ref, rel=1e-6)
    # a third view is ignored (the engine passes max n_views over the arms)
    assert obj(a, batch, views + [views[1]]).item() == pytest.approx(ref, rel=1e-6)
    assert any(p is obj.classifier.weight for p in a.parameters())


def test_params_are_validated(reg):
    with pytest.raises(ValidationError):
        reg.validate("objectives", {"name": "cl", "tau": 0.0})
    with pytest.raises(ValidationError):
        reg.validate("objectives", {"name": "ce", "tau": 0.5})
    assert reg.validate("objectives", {"name": "nscl"}).positive_in_denominator is True
