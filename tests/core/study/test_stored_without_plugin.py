"""Stored results read without the plugin that produced them: with a third-party head's
plugin not installed, or failing to load, ``results``, ``claims`` and ``leaderboard`` read
the stored cells (the same ids, values and verdicts as with the plugin) and warn once,
naming the plugin; ``run`` and ``validate`` refuse in one line naming it."""

import json

import pytest

from tests.conftest import install_toy, run_cli, write_distribution

PLUGIN = '''
import torch
from pydantic import Field
from torch import nn

from geobench.contract.interfaces import Params
from geobench.contract.hooks import hookimpl


class GatedTanhParams(Params):
    scale: float = Field(2.0, description="output scale")
    gate: float = Field(0.5, description="gate bias")


class GatedTanh(nn.Module):
    def __init__(self, dim, p):
        super().__init__()
        self.out_dim, self.scale, self.gate = dim, p.scale, p.gate

    def forward(self, z):
        return self.scale * torch.tanh(z) * torch.sigmoid(z + self.gate)


@hookimpl
def register_heads(register):
    register("gated_tanh", lambda p, ctx: GatedTanh(ctx.feature_dim, p),
             params=GatedTanhParams, doc="gated tanh")
'''

# the first grid point leaves scale to the plugin's default (2.0), the second sets 3.0: read
# without the plugin, the first agrees with both stored records (and the claim's `where`
# names the default's value)
SUITE = """\
name: gated
base:
  data: {name: toy_mixture, n_train: 64, n_test: 32, batch_size: 32, reference_size: 16}
  augment: {name: toy_none}
  backbone: {name: toy_mlp, depth: 2, width: 8}
  head: {name: gated_tanh}
  objective: {name: toy_ce}
  optimizer: {name: sgd, lr: 0.1}
  train: {steps: 8, device: cpu}
  metrics:
    - {name: nccc, every: 4}
grid:
  head: [{name: gated_tanh}, {name: gated_tanh, scale: 3.0}]
seeds: 3
leaderboard:
  rows: [head.scale]
  metrics:
    - {key: nccc.accuracy, label: NCCC accuracy}
claims:
  - {id: learns, statement: the default head separates the classes, metric: nccc.accuracy,
     expect: "> 0.2", where: {head.scale: 2.0}}
"""
ENTRY = "gated"
ORIGIN = "gated (gb-gated) 0.3"


def _cli(args, tmp_path, site, plugins="toy,gated"):
    return run_cli(args, tmp_path, site, extra_env={"GEOBENCH_PLUGINS": plugins,
                                                    "GEOBENCH_DISABLE_PLUGIN_AUTOLOAD": "0"})


@pytest.fixture(scope="module")
def where(tmp_path_factory):
    """The folder of the suite and its store, and the site dir the plugins are installed in."""
    tmp_path = tmp_path_factory.mktemp("stored")
    (tmp_path / "site").mkdir()
    return tmp_path, tmp_path / "site"


@pytest.fixture(scope="module")
def stored(where):
    """The suite run once with the plugin; what results, claims and the page say with it."""
    tmp_path, site = where
    install_toy(site)
    write_distribution(site, "gb-gated", "0.3", ENTRY, "gb_gated", PLUGIN)
    (tmp_path / "s.yaml").write_text(SUITE)
    ran = _cli(["run", "s.yaml", "--store", "db.sqlite", "--quiet"], tmp_path, site)
    assert ran.returncode == 0, ran.stderr
    said = {cmd: _cli(args, tmp_path, site) for cmd, args in _READS.items()}
    return {**said, "page": (tmp_path / "page.md").read_text()}


_READS = {
    "results": ["results", "s.yaml", "--store", "db.sqlite", "--json"],
    "claims": ["claims", "s.yaml", "--store", "db.sqlite", "--json"],
    "leaderboard": ["leaderboard", "s.yaml", "--store", "db.sqlite", "--out", "page.md"],
}


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if "read as the stored cells recorded them" in line]


def _same_reads(stored, tmp_path, site, plugins, why):
    """results, claims and the page without the plugin: exit 0, what they said with it, and
    one warning line each naming the plugin and ``why`` it is not loaded."""
    for cmd, args in _READS.items():
        out = _cli(args, tmp_path, site, plugins)
        assert out.returncode == 0, (cmd, out.stderr)
        assert out.stdout == stored[cmd].stdout, cmd
        assert _warnings(out.stderr) == [
            f"warning: plugin {ORIGIN} {why}; read as the stored cells recorded them: head "
            "gated_tanh (run and validate need the plugin)"], (cmd, out.stderr)
    assert (tmp_path / "page.md").read_text() == stored["page"]


@pytest.fixture
def broken(where):
    """Replace the installed plugin's module by ``code`` for one test."""
    module = where[1] / "gb_gated.py"
    yield module.write_text
    module.write_text(PLUGIN)


def test_reads_without_the_plugin_installed(stored, where):
    tmp_path, site = where
    with_plugin = [json.loads(line) for line in stored["results"].stdout.splitlines()]
    # the grid point that leaves scale unset is the cell of the plugin's default, 2.0
    heads = {(r["config"]["varied"]["head"].get("scale"), r["trial_seed"]):
             r["config"]["arms"]["main"]["head"] for r in with_plugin}
    assert heads[None, 0] == {"name": "gated_tanh", "scale": 2.0, "gate": 0.5}
    assert heads[3.0, 0] == {"name": "gated_tanh", "scale": 3.0, "gate": 0.5}
    assert len(with_plugin) == 6 and {r["status"] for r in with_plugin} == {"complete"}
    assert json.loads(stored["claims"].stdout)["verdict"] == "holds"
    assert "\n|            2 | " in stored["page"]  # the row of the default scale

    _same_reads(stored, tmp_path, site, "toy", "is not loaded")

    for args in (["run", "s.yaml", "--store", "db.sqlite", "--quiet"], ["validate", "s.yaml"]):
        out = _cli(args, tmp_path, site, "toy")
        assert out.returncode == 2 and len(out.stderr.splitlines()) == 1, out.stderr
        assert "'gated_tanh' is not a registered head" in out.stderr
    ran = _cli(["run", "s.yaml", "--store", "db.sqlite", "--quiet"], tmp_path, site, "toy")
    assert f"the store's cells used it from {ORIGIN}, which is not loaded" in ran.stderr


@pytest.mark.slow  # a CLI round per command; the uninstalled case runs by default
def test_reads_with_the_plugin_failing_to_load(stored, where, broken):
    tmp_path, site = where
    broken("raise ImportError('no module named gate_kernels')\n")
    failure = "failed to load: ImportError: no module named gate_kernels"
    _same_reads(stored, tmp_path, site, "toy,gated", failure)
    for args in (["run", "s.yaml", "--store", "db.sqlite", "--quiet"], ["validate", "s.yaml"]):
        out = _cli(args, tmp_path, site)
        assert out.returncode == 2, out.stderr
        refusal = [line for line in out.stderr.splitlines() if "not a registered" in line]
        assert len(refusal) == 1 and f"plugin 'gated' (dist gb-gated 0.3) {failure}" \
            in refusal[0], out.stderr


@pytest.mark.slow
def test_reads_with_the_plugins_hook_raising(stored, where, broken):
    tmp_path, site = where
    broken(PLUGIN.replace('    register("gated_tanh"', '    raise RuntimeError("hook broke")\n'
                                                     '    register("gated_tanh"'))
    out = _cli(_READS["claims"], tmp_path, site)
    assert out.returncode == 0 and out.stdout == stored["claims"].stdout, out.stderr
    assert _warnings(out.stderr) == [
        f"warning: plugin {ORIGIN} skipped: RuntimeError: hook broke; read as the stored cells "
        "recorded them: head gated_tanh (run and validate need the plugin)"], out.stderr
