"""Mirror maps inside ``mirror_descent``'s params are nested components: validated with the
suite, defaults in the record, their plugin's version in the cell id, built through ctx."""

from __future__ import annotations

import pytest
import torch
from geobench_mirror import maps
from geobench_mirror.assign import MirrorDescentParams

import geobench.api
from geobench import hookimpl
from geobench.cli import main
from geobench.contract.manager import load_registry, registry
from geobench.contract.param_models import Nested, nested_kinds, nested_specs
from geobench.contract.registry import EmptyParams, Entry, Registry
from geobench.study import Study
from geobench.suite import load_suite

SUITE = """\
name: nested
base:
  data: {name: student_teacher, dim: 4, teacher_width: 2, n_train: 16, n_test: 16,
         batch_size: 16, reference_size: 8}
  backbone: {name: mlp, depth: 2, width: 4, out_dim: 1, bias: false, norm: none}
  objective: {name: logistic}
  optimizer: {name: mirror_descent, lr: 0.1, mirror_map: MAP}
  train: {steps: 2, device: cpu}
"""


def write(tmp_path, mirror_map: str):
    path = tmp_path / "nested.yaml"
    path.write_text(SUITE.replace("MAP", mirror_map))
    return path


def one_line(capsys) -> str:
    lines = [ln for ln in capsys.readouterr().err.strip().splitlines()
             if not ln.startswith("warning: plugin")]
    assert len(lines) == 1, lines
    return lines[0]


def test_the_params_model_declares_its_nested_fields():
    assert nested_kinds(MirrorDescentParams) == {"mirror_map": "mirror_maps",
                                                 "maps": "mirror_maps"}
    assert nested_specs(MirrorDescentParams, "mirror_map", {"name": "pnorm"}) == [
        ((), {"name": "pnorm"})]
    assert nested_specs(MirrorDescentParams, "maps", {"0.*": {"name": "a"}, "*": {"name": "b"}}
                        ) == [(("0.*",), {"name": "a"}), (("*",), {"name": "b"})]


def test_validate_refuses_an_unknown_map_with_did_you_mean(tmp_path, capsys):
    path = write(tmp_path, "{name: hypentropyy, lam: 1.0}")
    assert main(["validate", str(path)]) == 2
    assert one_line(capsys) == (
        f"{path}:7: base.optimizer.mirror_map.name: 'hypentropyy' is not a registered "
        "mirror_map (did you mean 'hypentropy'?); registered: euclidean, hypentropy, "
        "pnorm, shifted_pnorm")


def test_validate_checks_a_nested_maps_params(tmp_path, capsys):
    path = write(tmp_path, "{name: hypentropy, lam: -1.0}")
    assert main(["validate", str(path)]) == 2
    line = one_line(capsys)
    assert line.startswith(f"{path}:7: base.optimizer.mirror_map.lam: ")
    assert "greater than 0" in line


def test_validate_checks_each_pattern_map(tmp_path, capsys):
    path = write(tmp_path, "null")
    path.write_text(path.read_text().replace(
        "mirror_map: null", "maps: {'*': {name: pnorm, q: 3}}"))
    assert main(["validate", str(path)]) == 2
    assert one_line(capsys).startswith(f"{path}:7: base.optimizer.maps.*.q: unknown field 'q'")


def test_the_record_holds_the_nested_defaults(tmp_path):
    cells = Study(load_suite(write(tmp_path, "{name: pnorm}")), registry()).cells
    spec = cells[0].arms["main"]["optimizer"]
    assert spec["mirror_map"] == {"name": "pnorm", "p": 3.0}  # PNormParams' default


def _registry_with_map(version: str) -> Registry:
    reg = load_registry()
    reg.add(Entry("mirror_maps", "cubic", lambda p, ctx: None, EmptyParams, "",
                  origin="my-maps", version=version))
    return reg


def test_a_nested_plugins_version_enters_the_cell_id(tmp_path):
    loaded = load_suite(write(tmp_path, "{name: cubic}"))
    one = Study(loaded, _registry_with_map("1.0")).cells[0]
    two = Study(loaded, _registry_with_map("2.0")).cells[0]
    assert one.versions["my-maps"] == "1.0" and two.versions["my-maps"] == "2.0"
    assert one.id != two.id


class Cube(geobench.api.MirrorMap):
    """R = θ⁴/4 (no geobench_mirror import needed: the core owns the kind's interface)."""

    name = "cube"

    def R(self, theta):
        return theta**4 / 4

    def grad_R(self, theta):
        return theta**3

    def grad_Q(self, u):
        return torch.sign(u) * u.abs() ** (1 / 3)

    def Q(self, u):
        return 0.75 * u.abs() ** (4 / 3)


class CubePlugin:
    @staticmethod
    @hookimpl
    def register_mirror_maps(register):
        register("cube", lambda params, ctx: Cube(), params=EmptyParams, doc="R = θ⁴/4")


def test_a_map_built_through_the_contexts_registry_trains(tmp_path):
    reg = load_registry(extra_plugins=(CubePlugin,))
    net = torch.nn.Linear(2, 1, bias=False).double()
    with torch.no_grad():
        net.weight.copy_(torch.tensor([[1.0, -2.0]]))
    ctx = geobench.api.BuildContext(seed=0, device=torch.device("cpu"), model=net,
                                    registry=reg)
    opt = reg.build("optimizers", {"name": "mirror_descent", "lr": 0.5,
                                   "mirror_map": {"name": "cube"}}, ctx)
    net.weight.grad = torch.tensor([[2.0, 2.0]], dtype=torch.float64)
    opt.step()
    u = torch.tensor([1.0, -8.0]) - 0.5 * 2.0  # ∇R(θ) − η g
    expected = torch.sign(u) * u.abs() ** (1 / 3)
    torch.testing.assert_close(net.weight.detach()[0].float(), expected)
    assert maps.MirrorMap is geobench.api.MirrorMap


def test_a_map_needs_the_contexts_registry():
    net = torch.nn.Linear(2, 1)
    ctx = geobench.api.BuildContext(seed=0, device=torch.device("cpu"), model=net)
    with pytest.raises(ValueError, match="ctx.registry"):
        registry().build("optimizers", {"name": "mirror_descent", "lr": 0.1}, ctx)


def test_nested_is_exported_for_plugins():
    assert geobench.api.Nested is Nested
