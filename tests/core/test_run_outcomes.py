"""Exit codes and shared stores: `geobench run` exits 0 when every cell is complete or
diverged, 1 when one failed, 2 on bad input; runs sharing a store run each cell once."""

import socket
import sqlite3
import subprocess
import sys
import time

from geobench.runner import run_suite
from geobench.store import Store
from tests.conftest import run_cli, start_cli, write_distribution
from tests.core.suite_text import small_suite

OBJECTIVES = """
import os
import torch
from geobench.api import Objective
from geobench.hookspecs import hookimpl
from geobench.registry import EmptyParams


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
    _suite(tmp_path, ["ce", "spike_ce"])
    out = run_cli(["run", "suite.yaml", "--store", "a.sqlite", "--quiet"], tmp_path, site)
    assert out.returncode == 0, out.stderr
    assert "2 cells: 0 already stored, 2 run (1 complete, 1 diverged, 0 failed)" in out.stdout

    _suite(tmp_path, ["ce", "broken_ce"])
    out = run_cli(["run", "suite.yaml", "--store", "b.sqlite", "--quiet"], tmp_path, site)
    assert out.returncode == 1, out.stderr
    assert "2 cells: 0 already stored, 2 run (1 complete, 0 diverged, 1 failed)" in out.stdout
    assert "Traceback" not in out.stderr
    with sqlite3.connect(tmp_path / "b.sqlite") as con:
        rows = dict(con.execute("SELECT status, error FROM cells").fetchall())
    assert rows["failed"] == "RuntimeError: this objective always fails"


def test_two_concurrent_runs_execute_each_cell_once(tmp_path, site):
    _plugin(site)
    lrs = (0.02, 0.05, 0.1, 0.2)
    _suite(tmp_path, ["counted_ce"], steps=150, lrs=lrs, seeds=2)  # 8 cells
    log = tmp_path / "executions.log"
    env = {"GEOBENCH_TEST_LOG": str(log)}
    args = ["run", "suite.yaml", "--store", "db.sqlite", "--quiet", "--no-leaderboard"]
    procs = [start_cli(args, tmp_path, site, env) for _ in range(2)]
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
    from geobench.plugins import registry
    from geobench.suite import expand, load_suite

    return expand(load_suite(tmp_path / "suite.yaml"), registry())[0].id


def test_a_lease_whose_owner_died_is_taken_over(tmp_path):
    (tmp_path / "suite.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    store = Store(tmp_path / "db.sqlite")
    store.lease(_first_cell_id(tmp_path), "dead-host:1:0", timeout=60)
    store.db.execute("UPDATE leases SET heartbeat = heartbeat - 3600")  # an hour silent
    store.db.commit()
    store.close()
    summary = run_suite(str(tmp_path / "suite.yaml"), store_path=str(tmp_path / "db.sqlite"),
                        quiet=True)
    assert summary.statuses["complete"] == 2 and summary.elsewhere == 0


def test_a_live_lease_is_waited_for_then_taken_over_when_it_expires(tmp_path, capsys):
    (tmp_path / "suite.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    store = Store(tmp_path / "db.sqlite")
    assert store.lease(_first_cell_id(tmp_path), "other-host:7:abc", timeout=60)
    store.close()
    start = time.time()
    summary = run_suite(str(tmp_path / "suite.yaml"), store_path=str(tmp_path / "db.sqlite"),
                        lease_timeout=2.0)
    assert summary.statuses["complete"] == 2
    assert time.time() - start >= 1.0  # it waited for the lease to expire
    assert "waiting for 1 cells another run holds (other-host:7:abc)" in capsys.readouterr().err


def test_interrupted_run_releases_its_leases(tmp_path):
    (tmp_path / "suite.yaml").write_text(small_suite(steps=400, lrs=(0.1,)))
    proc = start_cli(["run", "suite.yaml", "--store", "db.sqlite", "--quiet",
                      "--no-leaderboard"], tmp_path)
    db = tmp_path / "db.sqlite"
    deadline = time.time() + 120
    while time.time() < deadline:
        time.sleep(0.2)
        try:
            with sqlite3.connect(db, timeout=5) as con:
                if con.execute("SELECT count(*) FROM leases").fetchone()[0]:
                    break
        except sqlite3.OperationalError:
            continue
    proc.send_signal(2)  # Ctrl-C
    _, err = proc.communicate(timeout=120)
    assert "interrupted: finished cells are stored" in err
    assert proc.returncode in (130, -2)  # the shell shows 130 for both
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT count(*) FROM leases").fetchone() == (0,)


def test_a_run_killed_with_sigkill_leaves_no_lease_to_wait_for(tmp_path):
    (tmp_path / "suite.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a process of this host that no longer exists
    store = Store(tmp_path / "db.sqlite")
    store.lease(_first_cell_id(tmp_path), f"{socket.gethostname()}:{dead.pid}:x", timeout=60)
    store.close()
    start = time.time()
    summary = run_suite(str(tmp_path / "suite.yaml"), store_path=str(tmp_path / "db.sqlite"),
                        quiet=True)
    assert summary.statuses["complete"] == 2 and time.time() - start < 30
