"""Slurm reruns are safe: each array task takes its cell's lease over from the run that
submitted it and renews it while it runs, so a rerun after that run died never trains a
cell whose task still runs, and stores the results such tasks leave."""

import signal
import sqlite3
import time

import pytest

from geobench.run.leases import LeaseLost, TaskLease
from geobench.run.store import Store
from tests.conftest import start_cli, write_distribution
from tests.core.suite_text import small_suite

NAPPING = """
import os
import time
import torch
from geobench.contract.api import Objective
from geobench.contract.hookspecs import hookimpl
from geobench.contract.registry import EmptyParams


class Napping(Objective):
    n_views = 1

    def forward(self, arm, batch, views):
        time.sleep(0.1)  # a cell that runs for a few seconds
        return torch.nn.functional.cross_entropy(arm.embed(views[0]), batch.y)


def napping(params, ctx):
    with open(os.environ["GEOBENCH_TEST_LOG"], "a") as fh:  # one line per execution
        fh.write(f"{ctx.spec['optimizer']['lr']} {os.getpid()}\\n")
    return Napping()


@hookimpl
def register_objectives(register):
    register("napping_ce", napping, EmptyParams, doc="sleeps 0.1 s a step; logs each run")
"""


def test_a_task_takes_the_lease_over_and_refuses_one_another_run_took(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    assert store.lease("c", "driver", 60, since=time.time())
    with TaskLease(str(tmp_path / "s.sqlite"), "driver", 60).held("c"):
        (owner, expires), = store.leases(["c"]).values()
        assert owner != "driver" and expires > time.time() + 50
        assert not store.lease("c", "rerun", 60, since=time.time())  # held by the task
    assert store.leases(["c"]) == {}  # released when the task ends
    assert store.lease("c", "rerun", 60, since=time.time())
    with pytest.raises(LeaseLost, match="cell c: another run took its lease over from driver"):
        with TaskLease(str(tmp_path / "s.sqlite"), "driver", 60).held("c"):
            pytest.fail("the cell ran under a lease another run holds")
    assert store.leases(["c"])["c"][0] == "rerun"
    store.close()


def _executions(log):
    return sorted(line.split()[0] for line in log.read_text().splitlines()) \
        if log.exists() else []


@pytest.mark.slow
def test_a_rerun_after_the_driver_died_never_trains_a_running_task_again(tmp_path, site):
    pytest.importorskip("submitit")
    write_distribution(site, "napping-objective", "1.0", "napping", "napping_objective",
                       NAPPING)
    text = small_suite(steps=40, lrs=(0.05, 0.1)).replace("seeds: 2", "seeds: 1")
    (tmp_path / "suite.yaml").write_text(text.replace("{name: toy_ce}", "{name: napping_ce}"))
    log, db = tmp_path / "executions.log", tmp_path / "db.sqlite"
    args = ["run", "suite.yaml", "--store", "db.sqlite", "--no-leaderboard", "--quiet",
            "--executor", "slurm", "--lease-timeout", "4"]
    env = {"GEOBENCH_TEST_LOG": str(log)}
    driver = start_cli(args, tmp_path, site, env, toy=True)
    deadline = time.time() + 240
    while len(_executions(log)) < 2 and time.time() < deadline:  # both tasks are training
        time.sleep(0.1)
    assert _executions(log) == ["0.05", "0.1"], driver.communicate(timeout=5)
    driver.send_signal(signal.SIGKILL)  # the driver dies; its array tasks run on
    driver.wait(timeout=60)  # (its pipes stay open while the tasks it started run)
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT count(*) FROM cells").fetchone() == (0,)
        owners = [r[0] for r in con.execute("SELECT owner FROM leases")]
    assert len(owners) == 2 and all(str(driver.pid) not in o.split(":")[1] for o in owners)

    rerun = start_cli(args, tmp_path, site, env, toy=True)
    out, err = rerun.communicate(timeout=300)
    driver.stdout.close()
    driver.stderr.close()
    assert rerun.returncode == 0, err
    assert _executions(log) == ["0.05", "0.1"]  # each cell trained once, by its first task
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT status, count(*) FROM cells GROUP BY 1").fetchall() == [
            ("complete", 2)]
    assert not list((tmp_path / "results" / "slurm").glob("*.result.pkl"))  # stored: removed
