"""A third-party distribution adds a head and an optimizer; both are listed with their
origin and usable by name in a suite (with the toy plugin, also installed). A third-party
mirror map for the bundled mirror plugin: tests/suites/test_third_party_mirror_map.py."""

import json
import sqlite3

import torch

from tests.conftest import run_cli, write_distribution

PLUGIN = '''
import torch
from pydantic import Field
from torch import nn

from geobench.contract.interfaces import Params
from geobench.contract.hooks import hookimpl


class ScaledTanhParams(Params):
    scale: float = Field(2.0, description="output scale")


class ScaledTanh(nn.Module):
    def __init__(self, dim, scale):
        super().__init__()
        self.out_dim, self.scale = dim, scale

    def forward(self, z):
        return self.scale * torch.tanh(z)


class SignSGDParams(Params):
    lr: float = Field(gt=0, description="step size")


class SignSGD(torch.optim.Optimizer):
    """p <- p - lr * sign(grad)."""

    def __init__(self, params, lr):
        super().__init__(params, {"lr": lr})

    @torch.no_grad()
    def step(self, closure=None):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is not None:
                    p.add_(p.grad.sign(), alpha=-group["lr"])


@hookimpl
def register_heads(register):
    register("scaled_tanh", lambda p, ctx: ScaledTanh(ctx.feature_dim, p.scale),
             params=ScaledTanhParams, doc="scale * tanh(z)")


@hookimpl
def register_optimizers(register):
    register("sign_sgd", lambda p, ctx: SignSGD(ctx.model.parameters(), p.lr),
             params=SignSGDParams, doc="sign of the gradient")
'''

SUITE = """\
name: third_party
base:
  data: {name: toy_mixture, n_train: 64, n_test: 32, batch_size: 64, reference_size: 16}
  augment: {name: toy_none}
  backbone: {name: toy_mlp, depth: 2, width: 8}
  head: {name: scaled_tanh, scale: 3.0}
  objective: {name: toy_ce}
  optimizer: {name: sign_sgd, lr: 0.05}
  train: {steps: 15, device: cpu}
"""


def test_third_party_head_and_optimizer(site, tmp_path):
    write_distribution(site, "gb-example", "0.3", "example", "gb_example", PLUGIN)
    listed = run_cli(["list", "--json"], tmp_path, site, toy=True, autoload=True)
    assert listed.returncode == 0, listed.stderr
    entries = {(e["kind"], e["name"]): e for e in map(json.loads, listed.stdout.splitlines())}
    head, opt = entries[("heads", "scaled_tanh")], entries[("optimizers", "sign_sgd")]
    assert head["origin"] == opt["origin"] == "example (gb-example)"
    assert head["version"] == "0.3"
    assert head["params"][0] == {"name": "scale", "type": "float", "default": "2.0",
                                 "doc": "output scale", "constraints": {}}

    (tmp_path / "s.yaml").write_text(SUITE)
    out = run_cli(["run", "s.yaml", "--store", "db.sqlite", "--quiet"], tmp_path, site,
                  toy=True, autoload=True)
    assert out.returncode == 0, out.stderr
    with sqlite3.connect(tmp_path / "db.sqlite") as con:
        status, config = con.execute("SELECT status, config FROM cells").fetchone()
        losses = [v for (v,) in con.execute(
            "SELECT value FROM series WHERE metric = 'loss.train' ORDER BY step")]
    assert status == "complete"
    arm = json.loads(config)["arms"]["main"]
    assert arm["head"] == {"name": "scaled_tanh", "scale": 3.0}
    assert arm["optimizer"] == {"name": "sign_sgd", "lr": 0.05}
    assert json.loads(config)["versions"]["example (gb-example)"] == "0.3"
    assert json.loads(config)["versions"]["toy (geobench-toy)"] == "0.1"
    assert torch.tensor(losses).isfinite().all() and losses[-1] < losses[0]
