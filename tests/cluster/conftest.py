"""What the cluster tests share: a napping objective installed as a third-party plugin (its
naps per learning rate, and a line per execution naming where it ran, set in a JSON file
that GEOBENCH_TEST_NAPPING names) and suites of it."""

import json
import os
import shlex
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.conftest import write_distribution
from tests.core.suite_text import small_suite

pytestmark = pytest.mark.cluster
SCALING = Path(__file__).resolve().parents[2] / "docs" / "scaling.md"

NAPPING = """
import json
import os
import time
import torch
from geobench.contract.interfaces import Objective
from geobench.contract.hooks import hookimpl
from geobench.contract.registry import EmptyParams


def _where():
    if "SLURM_ARRAY_JOB_ID" in os.environ:
        return f"{os.environ['SLURM_ARRAY_JOB_ID']}_{os.environ['SLURM_ARRAY_TASK_ID']}"
    if "SLURM_JOB_ID" in os.environ:  # an array of one task is a plain job
        return os.environ["SLURM_JOB_ID"]
    import ray
    return ray.get_runtime_context().get_node_id() if ray.is_initialized() else "-"


class Napping(Objective):
    n_views = 1

    def __init__(self, nap):
        super().__init__()
        self.nap = nap

    def forward(self, arm, batch, views):
        time.sleep(self.nap)
        return torch.nn.functional.cross_entropy(arm.embed(views[0]), batch.y)


def napping(params, ctx):
    with open(os.environ["GEOBENCH_TEST_NAPPING"]) as fh:
        config = json.load(fh)
    lr = ctx.spec["optimizer"]["lr"]
    with open(config["log"], "a") as fh:  # one line per execution
        fh.write(f"{lr} {os.getpid()} {_where()}\\n")
    return Napping(float(config["naps"].get(str(lr), 0)))


@hookimpl
def register_objectives(register):
    register("napping_ce", napping, EmptyParams,
             doc="sleeps naps[lr] s a step and logs each execution to log, both read from "
                 "the JSON file GEOBENCH_TEST_NAPPING names")
"""


def napping_suite(folder: Path, site: Path, lrs: tuple[float, ...], steps: int = 20,
                  executor: str = "") -> Path:
    """A suite of one seed per learning rate whose cells nap and log each execution
    (``naps``), with the plugin installed in ``site``."""
    if not (site / "napping_objective.py").exists():
        write_distribution(site, "napping-objective", "1.0", "napping", "napping_objective",
                           NAPPING)
    text = small_suite(steps=steps, lrs=lrs).replace("seeds: 2", "seeds: 1")
    text = text.replace("{name: toy_ce}", "{name: napping_ce}") + executor
    path = folder / "suite.yaml"
    path.write_text(text)
    return path


def documented(command: str, **values: str) -> list[str]:
    """The arguments of ``command``, a ``$ geobench ...`` line of docs/scaling.md (each
    ``<name>`` in it filled from ``values``): the page shows the commands the tests run."""
    assert f"$ {command}\n" in SCALING.read_text(), f"docs/scaling.md does not show {command!r}"
    for name, value in values.items():
        command = command.replace(f"<{name}>", value)
    return shlex.split(command)[1:]


def naps(config: Path, log: Path, naps: str = "") -> dict[str, str]:
    """Write the napping objective's ``config``: its ``log`` and its ``naps`` (``lr:seconds``
    per step, comma-separated; no nap by default); the environment that names it."""
    config.write_text(json.dumps({"log": str(log), "naps": dict(
        pair.split(":") for pair in naps.split(",") if pair)}))
    return {"GEOBENCH_TEST_NAPPING": str(config)}


def executions(log: Path) -> list[tuple[str, str]]:
    """(learning rate, where it ran) per execution logged."""
    if not log.exists():
        return []
    return [(line.split()[0], line.split()[2]) for line in log.read_text().splitlines()]


def stored(db: Path) -> dict[str, tuple[str, str | None]]:
    """learning rate -> (status, error) of each stored cell."""
    with sqlite3.connect(db) as con:
        rows = con.execute("SELECT config, status, error FROM cells").fetchall()
    return {str(json.loads(c)["arms"]["main"]["optimizer"]["lr"]): (s, e) for c, s, e in rows}


def values(db: Path) -> list[tuple]:
    """Every stored series and final value, by cell: what must match bit for bit."""
    with sqlite3.connect(db) as con:
        return sorted(con.execute("SELECT * FROM series").fetchall()) + sorted(
            con.execute("SELECT * FROM finals").fetchall())


@pytest.fixture(scope="session")
def slurm_cluster() -> str:
    """The running cluster's SLURM_CONF (``bash scripts/cluster.sh start`` starts it)."""
    conf = os.environ.get("SLURM_CONF", "")
    ok = conf and subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True,
                                 text=True).stdout.strip()
    if not ok:
        pytest.fail("no Slurm cluster answers: `make test-cluster` starts one (or "
                    "`bash scripts/cluster.sh start` and export SLURM_CONF)")
    return conf
