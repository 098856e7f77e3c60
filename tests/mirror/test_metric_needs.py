"""What the mirror-flow metrics need of a third party's components, refused by validation in
one line naming the arm, the metric and what is missing: a horizon degree from every mirror
map in use (q_margin, horizon, ...), weights that chain layer to layer (sparsity, ...), no
trained parameters outside the backbone (q_margin, ...) from a head that declares nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch import nn

import geobench.api
from geobench import hookimpl
from geobench.contract.manager import load_registry
from geobench.contract.registry import EmptyParams
from geobench.params import Params
from geobench.study import Study
from geobench.suite import load_suite
from geobench.suite.yamlio import SuiteError
from tests.mirror.test_nested_maps import Cube

SUITE = """\
name: third_party_needs
base:
  data: {name: student_teacher, dim: 4, teacher_width: 2, n_train: 16, n_test: 16,
         batch_size: 16, reference_size: 8}
  backbone: {name: mlp, depth: 2, width: 4, out_dim: 1, bias: false, norm: none}
  head: {name: identity}
  objective: {name: logistic}
  optimizer: {name: mirror_descent, lr: 0.1}
  train: {steps: 2, device: cpu}
  metrics:
  - {name: METRIC}
arms:
  gd: {}
  OTHER: {OVERRIDE}
"""


class Cosh(geobench.api.MirrorMap):
    """R(θ) = cosh θ: ∇R = sinh, ∇Q = asinh, Q(u) = u asinh u − √(1 + u²); no horizon degree
    (its potential grows exponentially)."""

    name = "toy_cosh"

    def R(self, theta):
        return torch.cosh(theta)

    def grad_R(self, theta):
        return torch.sinh(theta)

    def grad_Q(self, u):
        return torch.asinh(u)

    def Q(self, u):
        return u * torch.asinh(u) - torch.sqrt(1 + u * u)


class Quartic(Cube):
    """R(θ) = θ⁴/4, horizon degree 4."""

    name = "toy_quartic"
    alpha = 4.0


class TwoGates(nn.Module):
    """tanh(V z) · sigmoid(G z): two weights side by side, not one after the other."""

    def __init__(self, dim: int, width: int) -> None:
        super().__init__()
        self.out_dim = width
        self.value, self.gate = nn.Linear(dim, width), nn.Linear(dim, width)

    def forward(self, z):
        return torch.tanh(self.value(z)) * torch.sigmoid(self.gate(z))


class GateParams(Params):
    width: int = 3


class ThirdParty:
    """Two maps (one declares its degree, one has none) and a gated head."""

    @staticmethod
    @hookimpl
    def register_mirror_maps(register):
        register("toy_cosh", lambda params, ctx: Cosh(), params=EmptyParams, doc="R = cosh")
        register("toy_quartic", lambda params, ctx: Quartic(), params=EmptyParams,
                 gives={"horizon_degree": 4.0}, doc="R = θ⁴/4")
        register("toy_quartic_undeclared", lambda params, ctx: Quartic(), params=EmptyParams,
                 doc="R = θ⁴/4, registered without gives")

    @staticmethod
    @hookimpl
    def register_heads(register):
        register("toy_two_gates", lambda params, ctx: TwoGates(ctx.feature_dim, params.width),
                 params=GateParams, doc="gated tanh")


def study(tmp_path: Path, metric: str, arm: str, override: str) -> Path:
    path = tmp_path / "needs.yaml"
    path.write_text(SUITE.replace("METRIC", metric).replace("OTHER", arm)
                    .replace("OVERRIDE", override))
    Study(load_suite(path), load_registry(extra_plugins=(ThirdParty,)))
    return path


def refusal(tmp_path: Path, metric: str, arm: str, override: str) -> str:
    with pytest.raises(SuiteError) as err:
        study(tmp_path, metric, arm, override)
    return str(err.value)


COSH = "optimizer: {mirror_map: {name: toy_cosh}}"
DEGREE = ("needs the horizon degree alpha of every mirror map in use, one for all parameters; "
          "the mirror map 'toy_cosh' (mirror_map) gives no 'horizon_degree'")


@pytest.mark.parametrize("metric", ["q_margin", "horizon", "alignment_time", "kkt_residual",
                                    "max_margin_direction"])
def test_a_map_without_a_degree_is_refused_for_a_metric_that_needs_it(tmp_path, metric):
    path = tmp_path / "needs.yaml"
    assert refusal(tmp_path, metric, "cosh", COSH) == (
        f"{path}:11: base.metrics[0].name: metric {metric!r} of arm 'cosh' {DEGREE}")


def test_a_map_in_a_pattern_without_a_degree_is_refused(tmp_path):
    path = tmp_path / "needs.yaml"
    maps = "optimizer: {maps: {'backbone.layers.0.*': {name: toy_cosh}, " \
           "'*': {name: euclidean}}}"
    assert refusal(tmp_path, "q_margin", "mixed", maps) == (
        f"{path}:11: base.metrics[0].name: metric 'q_margin' of arm 'mixed' needs the horizon "
        "degree alpha of every mirror map in use, one for all parameters; the mirror map "
        "'toy_cosh' (maps['backbone.layers.0.*']) gives no 'horizon_degree'")


def test_a_map_that_gives_its_degree_is_checked_against_the_others(tmp_path):
    study(tmp_path, "q_margin", "quartic", "optimizer: {mirror_map: {name: toy_quartic}}")
    maps = "optimizer: {maps: {'backbone.layers.0.*': {name: toy_quartic}, " \
           "'*': {name: euclidean}}}"
    assert refusal(tmp_path, "horizon", "mixed", maps).endswith(
        "the maps that parameters get have horizon degrees [2.0, 4.0] (Q-margins of mixed "
        "degree are not defined)")


def test_a_map_registered_without_gives_gives_the_degree_of_the_map_it_builds(tmp_path):
    undeclared = "optimizer: {mirror_map: {name: toy_quartic_undeclared}}"
    study(tmp_path, "q_margin", "quartic", undeclared)
    maps = "optimizer: {maps: {'backbone.layers.0.*': {name: toy_quartic_undeclared}, " \
           "'*': {name: euclidean}}}"
    assert refusal(tmp_path, "horizon", "mixed", maps).endswith(
        "the maps that parameters get have horizon degrees [2.0, 4.0] (Q-margins of mixed "
        "degree are not defined)")


def test_a_map_without_a_degree_that_no_parameter_gets_has_no_say(tmp_path):
    maps = "optimizer: {maps: {'backbone.*': {name: toy_quartic}, " \
           "'*': {name: toy_cosh}}}"
    study(tmp_path, "q_margin", "unused", maps)


def test_a_map_without_a_degree_validates_where_no_metric_needs_one(tmp_path):
    study(tmp_path, "sparsity", "cosh", COSH)
    study(tmp_path, "balance", "cosh", COSH)


def test_neuron_metrics_refuse_weights_side_by_side(tmp_path):
    path = tmp_path / "needs.yaml"
    assert refusal(tmp_path, "sparsity", "gated", "head: {name: toy_two_gates}") == (
        f"{path}:11: base.metrics[0].name: metric 'sparsity' of arm 'gated' needs trained "
        "weights that chain layer to layer, the head's and the objective's included; weights "
        "head.value.weight (3, 1) and head.gate.weight (3, 1) are not consecutive")


def test_neuron_metrics_take_a_head_whose_weights_continue_the_chain(tmp_path):
    study(tmp_path, "active_neurons", "linear", "head: {name: linear, out: 3}")


def test_margin_metrics_refuse_a_head_with_parameters_it_does_not_declare(tmp_path):
    path = tmp_path / "needs.yaml"
    assert refusal(tmp_path, "q_margin", "gated", "head: {name: toy_two_gates}") == (
        f"{path}:11: base.metrics[0].name: metric 'q_margin' of arm 'gated' needs no "
        "parameters outside the backbone (identity head without predictor, an objective "
        "without any); head.value.weight is trained")
