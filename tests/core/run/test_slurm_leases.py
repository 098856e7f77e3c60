"""Slurm reruns are safe: each array task takes its cell's lease over from the run that
submitted it and renews it while it runs, so a rerun after that run died never trains a
cell whose task still runs, and stores the results such tasks leave."""

import os
import pickle
import signal
import sqlite3
import time
from types import SimpleNamespace

import pytest

from geobench.records import CellResult
from geobench.run.executors.slurm import SlurmExecutor, SlurmParams, result_path
from geobench.run.leases import (
    LeaseLost,
    TaskLease,
    held_elsewhere,
    new_owner,
    owner_died,
    task_owner,
)
from geobench.run.safeload import UnreadableFileError
from geobench.run.store import Store, StoreError
from tests.conftest import start_cli, write_distribution
from tests.core.suite_text import small_suite

NAPPING = """
import os
import time
import torch
from geobench.contract.interfaces import Objective
from geobench.contract.hooks import hookimpl
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
    with pytest.raises(StoreError, match="no such file"):  # a node that does not see it
        with TaskLease(str(tmp_path / "s.sqlite"), "driver", 60).held("c"):
            pytest.fail("ran without the store")
    store = Store(tmp_path / "s.sqlite")
    assert store.lease("c", "driver", 60, since=time.time())
    with TaskLease(str(tmp_path / "s.sqlite"), "driver", 60).held("c"):
        (owner, expires), = store.leases(["c"]).values()
        assert owner != "driver" and expires > time.time() + 50
        assert not store.lease("c", "rerun", 60, since=time.time())  # held by the task
    assert store.leases(["c"])["c"][0] == "driver"  # handed back: the run stores the result
    store.release("driver")  # (the run stored the cell, or died)
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
    text += "executor: {name: slurm, cluster: local}\n"  # submitit's backend, even beside sbatch
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


class _Job:
    """A submitit job that ended without writing a result."""

    job_id, state, paths = "7", "COMPLETED", SimpleNamespace(stderr="7_0_log.err")

    def done(self, force_check=False):
        return True


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    pytest.importorskip("submitit")
    folder = tmp_path / "jobs"
    folder.mkdir(mode=0o700)
    runner = SlurmExecutor(SlurmParams(cluster="local", folder=str(folder), poll_seconds=0.01))
    submitted = []

    class Fake:
        def map_array(self, fn, fns, items, folders, leases):
            submitted.extend(item.id for item in items)
            return [_Job() for _ in items]

    monkeypatch.setattr(runner, "_executor", lambda: Fake())
    return runner, folder, submitted


def _left(folder, cell_id, result=None, raw=None):
    """A result file as an array task leaves it (private), or ``raw`` bytes."""
    path = result_path(folder, cell_id)
    path.write_bytes(raw if raw is not None else pickle.dumps(result))
    path.chmod(0o600)
    return path


def test_a_left_result_is_stored_unless_fresh_and_an_unreadable_one_set_aside(slurm):
    runner, folder, submitted = slurm
    old = CellResult("a", "complete", finals={"m.f": 1.0})
    del old.__dict__["arms"], old.__dict__["peak_mb"]  # as an older geobench pickled it
    _left(folder, "a", old)
    _left(folder, "b", raw=b"not a pickle")
    items = [SimpleNamespace(id=i) for i in "abc"]
    got = {item.id: result for item, result in runner.map(lambda item: None, items)}
    assert submitted == ["c"]  # a and b were not submitted again
    assert (got["a"].finals, got["a"].arms, got["a"].peak_mb) == ({"m.f": 1.0}, {}, None)
    assert not result_path(folder, "a").exists()  # stored: removed
    assert isinstance(got["b"], UnreadableFileError) and "set aside as" in str(got["b"])
    assert (folder / "b.result.pkl.unreadable").exists() and not result_path(folder, "b").exists()
    assert str(got["c"]) == "array task 7 ended COMPLETED without a result (its log: 7_0_log.err)"

    submitted.clear()
    _left(folder, "a", CellResult("a", "complete"))
    assert [i.id for i, _ in runner.map(lambda item: None, items[:1], fresh=True)] == ["a"]
    assert submitted == ["a"] and not result_path(folder, "a").exists()  # a rerun: trained


def test_a_lost_task_records_no_failure_over_another_runs_cell(tmp_path):
    """What the run does with a task it lost (no result): record the cell failed, unless
    another run, alive, holds its lease or stored it since this run began."""

    store, since, me = Store(tmp_path / "s.sqlite"), time.time(), new_owner()
    assert store.lease("c", me, 60, since)
    assert not held_elsewhere(store, "c", me, since)  # ours: record the failure
    store.release(me)
    dead = new_owner().replace(f":{os.getpid()}:", ":999999999:")
    assert store.lease("c", dead, 60, since)
    assert not held_elsewhere(store, "c", me, since)  # held by a process that died
    store.release(dead)
    assert store.lease("c", "elsewhere:1:x:y", 60, since)
    assert held_elsewhere(store, "c", me, since)  # another run holds it
    store.release("elsewhere:1:x:y")
    task = task_owner(me)  # alive: the scheduler ended it, its process has not exited yet
    assert store.lease("c", task, 60, since) and not owner_died(task)
    assert not held_elsewhere(store, "c", me, since)  # this run's own task
    assert held_elsewhere(store, "c", new_owner(), since)  # to a rerun, another run's task
    store.close()
