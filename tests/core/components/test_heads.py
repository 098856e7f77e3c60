import pytest
import torch
from pydantic import ValidationError
from torch import nn

from geobench.components import heads
from geobench.contract.interfaces import BuildContext

CTX = BuildContext(seed=0, device=torch.device("cpu"), feature_dim=6)


def test_mlp_head_matches_hand_written_forward():
    torch.manual_seed(0)
    head = heads.build_mlp_head(heads.MLPHeadParams(depth=3, hidden=5, out=4,
                                                    activation="softplus", softplus_beta=2.0),
                                CTX)
    linears = [m for m in head.modules() if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(6, 5), (5, 5), (5, 4)]
    z = torch.randn(3, 6)
    a = z
    for i, lin in enumerate(linears):
        a = a @ lin.weight.T + lin.bias
        if i < 2:
            a = torch.log1p(torch.exp(2.0 * a)) / 2.0
    torch.testing.assert_close(head(z), a)
    assert head.out_dim == 4 and head.predictor is None


@pytest.mark.parametrize("act,fn", [
    ("relu", torch.relu), ("gelu", torch.nn.functional.gelu),
    ("silu", lambda t: t * torch.sigmoid(t)),
    ("tanh", torch.tanh), ("identity", lambda t: t),
    ("leaky_relu", lambda t: torch.where(t > 0, t, 0.01 * t))])
def test_activations(act, fn):
    t = torch.linspace(-3, 3, 13)
    torch.testing.assert_close(heads.make_activation(act)(t), fn(t))


def test_norms_and_predictor_inherit_options():
    head = heads.build_mlp_head(heads.MLPHeadParams(depth=2, hidden=8, out=3, norm="batch",
                                                    activation="silu",
                                                    predictor=heads.PredictorParams()), CTX)
    kinds = [type(m) for m in head.predictor]
    assert kinds == [nn.Linear, nn.BatchNorm1d, nn.SiLU, nn.Linear]
    assert head.predictor[0].in_features == 3 and head.predictor[0].out_features == 8
    assert head.predictor[-1].out_features == 3
    layer = heads.build_mlp_head(heads.MLPHeadParams(depth=2, hidden=8, out=3, norm="layer"), CTX)
    assert any(isinstance(m, nn.LayerNorm) for m in layer.modules())


def test_identity_and_linear_heads():
    z = torch.randn(4, 6)
    ident = heads.build_identity_head(heads.IdentityHeadParams(), CTX)
    assert ident.out_dim == 6 and torch.equal(ident(z), z)
    lin = heads.build_linear_head(heads.LinearHeadParams(out=3), CTX)
    torch.testing.assert_close(lin(z), z @ lin.projector.weight.T)
    assert lin.projector.bias is None and lin.out_dim == 3
    with_pred = heads.build_linear_head(heads.LinearHeadParams(predictor={"depth": 2}), CTX)
    assert with_pred.predictor is not None and with_pred.out_dim == 6


def test_depth_one_mlp_is_linear_and_typos_are_rejected():
    head = heads.build_mlp_head(heads.MLPHeadParams(depth=1, out=3, activation="gelu"), CTX)
    assert len([m for m in head.modules() if isinstance(m, nn.GELU)]) == 0
    with pytest.raises(ValidationError):
        heads.MLPHeadParams(activation="gleu")
    with pytest.raises(ValidationError):
        heads.MLPHeadParams(depth=5)
