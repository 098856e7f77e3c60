"""Exit codes and shared stores: `geobench run` exits 0 when every cell is complete or
diverged, 1 when one failed, 2 on bad input; runs sharing a store run each cell once."""

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from geobench.contract.manager import registry
from geobench.records import CellResult, Status
from geobench.run.leases import new_owner
from geobench.run.runner import RunOptions, run_suite
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from tests.conftest import run_cli, start_cli, wait_until, write_distribution
from tests.core.suite_text import small_suite

OBJECTIVES = """
import os
import torch
from geobench.contract.interfaces import Objective
from geobench.contract.hooks import hookimpl
from geobench.contract.registry import EmptyParams


class CE(Objective):
    def forward(self, arm, batch, views):
        return torch.nn.functional.cross_entropy(arm.embed(views[0]), batch.y)


class Spike(CE):
    def forward(self, arm, batch, views):
        loss = super().forward(arm, batch, views)
        return loss + 1e6 * loss.detach() if batch.step == 2 else loss


class Broken(CE):
    def forward(self, arm, batch, views):
        raise RuntimeError("this objective always fails")


def counted(params, ctx):
    with open(os.environ["GEOBENCH_TEST_LOG"], "a") as fh:  # one line per execution
        fh.write(f"{ctx.spec['optimizer']['lr']} {ctx.trial_seed} {os.getpid()}\\n")
    return CE()


@hookimpl
def register_objectives(register):
    register("spike_ce", lambda p, ctx: Spike(), EmptyParams, doc="spikes at step 2")
    register("broken_ce", lambda p, ctx: Broken(), EmptyParams, doc="raises")
    register("counted_ce", counted, EmptyParams, doc="logs each execution")
"""


def _plugin(site):
    write_distribution(site, "outcome-objectives", "1.0", "outcomes", "outcome_objectives",
                       OBJECTIVES)


def _suite(tmp_path, objectives, steps=12, lrs=(0.1,), seeds=1):
    text = small_suite(steps=steps, lrs=lrs).replace("seeds: 2", f"seeds: {seeds}")
    text = text.replace("grid:\n", f"grid:\n  objective.name: {objectives}\n")
    (tmp_path / "suite.yaml").write_text(text)


def test_diverged_cells_exit_0_failed_cells_exit_1(tmp_path, site):
    _plugin(site)
    _suite(tmp_path, ["toy_ce", "spike_ce"])
    out = run_cli(["run", "suite.yaml", "--store", "a.sqlite", "--quiet"], tmp_path, site,
                  toy=True)
    assert out.returncode == 0, out.stderr
    assert "2 cells: 0 already stored, 2 run (1 complete, 1 diverged, 0 failed)" in out.stdout

    _suite(tmp_path, ["toy_ce", "broken_ce"])
    out = run_cli(["run", "suite.yaml", "--store", "b.sqlite", "--quiet", "--out", "b"],
                  tmp_path, site, toy=True)
    assert out.returncode == 1, out.stderr
    assert "2 cells: 0 already stored, 2 run (1 complete, 0 diverged, 1 failed)" in out.stdout
    assert "Traceback" not in out.stderr
    with sqlite3.connect(tmp_path / "b.sqlite") as con:
        rows = dict(con.execute("SELECT status, error FROM cells").fetchall())
    line = 1 + OBJECTIVES.splitlines().index(
        '        raise RuntimeError("this objective always fails")')
    assert rows["failed"] == ("RuntimeError: this objective always fails [plugin outcomes "
                              f"(outcome-objectives), outcome_objectives.py:{line}]")


def test_two_concurrent_runs_execute_each_cell_once(tmp_path, site):
    _plugin(site)
    lrs = (0.02, 0.05, 0.1, 0.2)
    _suite(tmp_path, ["counted_ce"], steps=150, lrs=lrs, seeds=2)  # 8 cells
    log = tmp_path / "executions.log"
    env = {"GEOBENCH_TEST_LOG": str(log)}
    args = ["run", "suite.yaml", "--store", "db.sqlite", "--quiet", "--no-leaderboard"]
    procs = [start_cli(args, tmp_path, site, env, toy=True) for _ in range(2)]
    outs = [p.communicate(timeout=600) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    lines = log.read_text().splitlines()
    cells = {tuple(line.split()[:2]) for line in lines}
    assert len(lines) == len(cells) == 8  # each cell executed exactly once
    assert len({line.split()[2] for line in lines}) == 2  # and the two runs shared the work
    with sqlite3.connect(tmp_path / "db.sqlite") as con:
        assert con.execute("SELECT count(*), count(DISTINCT id) FROM cells").fetchone() == (8, 8)
        assert con.execute("SELECT count(*) FROM leases").fetchone() == (0,)


def _first_cell_id(tmp_path) -> str:
    from geobench.contract.manager import registry
    from geobench.suite import load_suite

    return Study(load_suite(tmp_path / "suite.yaml"), registry()).cells[0].id


def test_a_lease_whose_owner_died_is_taken_over(tmp_path):
    (tmp_path / "suite.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    store = Store(tmp_path / "db.sqlite")
    store.lease(_first_cell_id(tmp_path), "dead-host:1:ns:0", timeout=60, since=0)
    store.db.execute("UPDATE leases SET expires = expires - 3600")  # expired an hour ago
    store.db.commit()
    store.close()
    summary = run_suite(str(tmp_path / "suite.yaml"),
                        RunOptions(store=str(tmp_path / "db.sqlite"), quiet=True))
    assert summary.statuses["complete"] == 2 and summary.elsewhere == 0


def test_a_live_lease_is_waited_for_then_taken_over_when_it_expires(tmp_path, capsys):
    (tmp_path / "suite.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    store = Store(tmp_path / "db.sqlite")
    assert store.lease(_first_cell_id(tmp_path), "other-host:7:ns:abc", timeout=1.5, since=0)
    store.close()
    start = time.time()
    summary = run_suite(str(tmp_path / "suite.yaml"), RunOptions(store=str(tmp_path / "db.sqlite")))
    assert summary.statuses["complete"] == 2
    assert time.time() - start >= 1.0  # it waited for the lease to expire
    assert "waiting for 1 cells another run holds (other-host:7:ns:abc)" in (
        capsys.readouterr().err)


@pytest.mark.parametrize("sig,message,codes", [
    (signal.SIGINT, "interrupted: finished cells are stored", (130, -2)),  # shell: 130 both
    (signal.SIGTERM, "terminated: finished cells are stored", (143,)),
])
def test_interrupted_or_terminated_run_releases_its_leases(tmp_path, site, sig, message,
                                                            codes):
    # long cells: both must hold their leases at once even when a worker starts late
    (tmp_path / "suite.yaml").write_text(small_suite(steps=20000, lrs=(0.1,)))
    proc = start_cli(["run", "suite.yaml", "--store", "db.sqlite", "--quiet",
                      "--no-leaderboard", "--executor", "pool", "--workers", "2"], tmp_path,
                     site, toy=True)
    db = tmp_path / "db.sqlite"
    deadline = time.time() + 120
    while time.time() < deadline:
        time.sleep(0.2)
        try:
            with sqlite3.connect(db, timeout=5) as con:
                if con.execute("SELECT count(*) FROM leases").fetchone()[0] == 2:
                    break
        except sqlite3.OperationalError:
            continue
    children = _children(proc.pid)
    assert children  # the pool's workers
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    assert message in err and proc.returncode in codes, err
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT count(*) FROM leases").fetchone() == (0,)
    wait_until(lambda: not [pid for pid in children if _running(pid)], 60,
               "the pool's workers to stop")


def _state(pid: int) -> list[str]:
    """State, parent, ... of process ``pid`` from /proc (empty once it is gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []


def _running(pid: int) -> bool:
    return _state(pid)[:1] not in ([], ["Z"])


def _children(pid: int) -> list[int]:
    """The pool workers (spawned children) of process ``pid``."""
    def spawned(path: Path) -> bool:
        try:
            return b"spawn_main" in (path / "cmdline").read_bytes()
        except OSError:
            return False

    return [int(path.name) for path in Path("/proc").glob("[0-9]*")
            if _state(int(path.name))[1:2] == [str(pid)] and spawned(path)]


def test_max_cells_counts_the_cells_this_run_starts_and_does_not_wait(tmp_path):
    (tmp_path / "suite.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    store = Store(tmp_path / "db.sqlite")
    assert store.lease(_first_cell_id(tmp_path), "other-host:7:ns:abc", timeout=600, since=0)
    store.close()
    start = time.time()
    summary = run_suite(str(tmp_path / "suite.yaml"),
                        RunOptions(store=str(tmp_path / "db.sqlite"), quiet=True, max_cells=1))
    assert summary.statuses["complete"] == 1 and time.time() - start < 60


def test_a_failure_another_run_stores_meanwhile_is_not_retried_by_this_run(tmp_path):
    (tmp_path / "suite.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    cells = Study(load_suite(tmp_path / "suite.yaml"), registry()).cells
    store = Store(tmp_path / "db.sqlite")
    before = time.time()
    failed = CellResult(cells[0].id, Status.FAILED, "boom", started=before - 10,
                        finished=before - 5)
    store.write(cells[0], failed, {})
    assert store.lease(cells[0].id, "me", 60, since=before)  # an old failure is retried
    store.release("me")
    failed.finished = before + 5  # stored by another run after this one started
    store.write(cells[0], failed, {})
    assert not store.lease(cells[0].id, "me", 60, since=before)
    assert store.settled([cells[0].id], since=before) == {cells[0].id}
    assert store.lease(cells[0].id, "me", 60, since=before + 10)
    store.write(cells[0], failed, {}, owner="someone else")  # not the holder: lease stays
    assert store.leases([cells[0].id])[cells[0].id][0] == "me"
    store.close()


def test_a_run_killed_with_sigkill_leaves_no_lease_to_wait_for(tmp_path):
    (tmp_path / "suite.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a process of this host that no longer exists
    store = Store(tmp_path / "db.sqlite")
    owner = new_owner().split(":")
    owner[1] = str(dead.pid)
    store.lease(_first_cell_id(tmp_path), ":".join(owner), timeout=60, since=0)
    store.close()
    start = time.time()
    summary = run_suite(str(tmp_path / "suite.yaml"),
                        RunOptions(store=str(tmp_path / "db.sqlite"), quiet=True))
    assert summary.statuses["complete"] == 2 and time.time() - start < 30
