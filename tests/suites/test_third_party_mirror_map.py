"""A third-party distribution adds a mirror map, subclassing the core's MirrorMap, for the
bundled mirror plugin's ``mirror_descent``: listed with its origin, usable by name in a
suite, and its distribution's version is in the cell's versions (a nested component)."""

import json
import sqlite3

from tests.conftest import run_cli, write_distribution

PLUGIN = '''
from geobench.api import MirrorMap
from geobench.hookspecs import hookimpl


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
def register_mirror_maps(register):
    register("quartic", lambda p, ctx: Quartic(), doc="R = theta^4 / 4")
'''

SUITE = """\
name: third_party
base:
  data: {name: student_teacher, n_train: 64, n_test: 32, batch_size: 64, reference_size: 16}
  backbone: {name: mlp, depth: 2, width: 8, out_dim: 1, bias: false}
  objective: {name: logistic}
  optimizer: {name: mirror_descent, lr: 0.05, mirror_map: {name: quartic}}
  train: {steps: 15, device: cpu}
"""


def test_third_party_mirror_map(site, tmp_path):
    write_distribution(site, "gb-example", "0.3", "example", "gb_example", PLUGIN)
    listed = run_cli(["list", "--json"], tmp_path, site)
    assert listed.returncode == 0, listed.stderr
    entries = {(e["kind"], e["name"]): e for e in map(json.loads, listed.stdout.splitlines())}
    mmap = entries[("mirror_maps", "quartic")]
    assert mmap["origin"] == "example (gb-example)" and mmap["version"] == "0.3"

    (tmp_path / "s.yaml").write_text(SUITE)
    out = run_cli(["run", "s.yaml", "--store", "db.sqlite", "--quiet"], tmp_path, site)
    assert out.returncode == 0, out.stderr
    with sqlite3.connect(tmp_path / "db.sqlite") as con:
        status, config = con.execute("SELECT status, config FROM cells").fetchone()
    assert status == "complete"
    assert json.loads(config)["arms"]["main"]["optimizer"]["mirror_map"] == {"name": "quartic"}
    assert json.loads(config)["versions"]["example (gb-example)"] == "0.3"
