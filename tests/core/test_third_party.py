"""A third-party distribution adds a head and a mirror map; both are listed with their
origin and usable by name in a suite."""

import json
import sqlite3

from tests.conftest import run_cli, write_distribution

PLUGIN = '''
import torch
from pydantic import Field
from torch import nn

from geobench.contract.api import Params
from geobench.contract.hookspecs import hookimpl
from geobench_mirror.maps import MirrorMap


class ScaledTanhParams(Params):
    scale: float = Field(2.0, description="output scale")


class ScaledTanh(nn.Module):
    def __init__(self, dim, scale):
        super().__init__()
        self.out_dim, self.scale = dim, scale

    def forward(self, z):
        return self.scale * torch.tanh(z)


class Quartic(MirrorMap):
    """R = theta^4 / 4."""
    name = "quartic"

    def R(self, t):
        return t.pow(4) / 4

    def grad_R(self, t):
        return t.pow(3)

    def grad_Q(self, u):
        return u.sign() * u.abs().pow(1 / 3)

    def Q(self, u):
        return 0.75 * u.abs().pow(4 / 3)


@hookimpl
def register_heads(register):
    register("scaled_tanh", lambda p, ctx: ScaledTanh(ctx.feature_dim, p.scale),
             params=ScaledTanhParams, doc="scale * tanh(z)")


@hookimpl
def register_mirror_maps(register):
    register("quartic", lambda p, ctx: Quartic(), doc="R = theta^4 / 4")
'''

SUITE = """\
name: third_party
base:
  data: {name: student_teacher, n_train: 64, n_test: 32, batch_size: 64, reference_size: 16}
  backbone: {name: mlp, depth: 2, width: 8, out_dim: 1, bias: false}
  head: {name: scaled_tanh, scale: 3.0}
  objective: {name: logistic}
  optimizer: {name: mirror_descent, lr: 0.05, mirror_map: {name: quartic}}
  train: {steps: 15, device: cpu}
"""


def test_third_party_head_and_mirror_map(site, tmp_path):
    write_distribution(site, "gb-example", "0.3", "example", "gb_example", PLUGIN)
    listed = run_cli(["list", "--json"], tmp_path, site)
    assert listed.returncode == 0, listed.stderr
    entries = {(e["kind"], e["name"]): e for e in map(json.loads, listed.stdout.splitlines())}
    head, mmap = entries[("heads", "scaled_tanh")], entries[("mirror_maps", "quartic")]
    assert head["origin"] == mmap["origin"] == "example (gb-example)"
    assert head["version"] == "0.3"
    assert head["params"][0] == {"name": "scale", "type": "float", "default": "2.0",
                                 "doc": "output scale"}

    (tmp_path / "s.yaml").write_text(SUITE)
    out = run_cli(["run", "s.yaml", "--store", "db.sqlite", "--quiet"], tmp_path, site)
    assert out.returncode == 0, out.stderr
    with sqlite3.connect(tmp_path / "db.sqlite") as con:
        status, config = con.execute("SELECT status, config FROM cells").fetchone()
    assert status == "complete"
    arm = json.loads(config)["arms"]["main"]
    assert arm["head"] == {"name": "scaled_tanh", "scale": 3.0}
    assert arm["optimizer"]["mirror_map"] == {"name": "quartic"}
    assert json.loads(config)["versions"]["example (gb-example)"] == "0.3"
