"""A pool run killed with SIGKILL takes its workers with it: none trains on under PID 1 while
a rerun takes over the dead run's leases and trains the same cell again."""

import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from tests.conftest import start_cli, write_distribution
from tests.core.suite_text import small_suite

STEPS = 15000  # steps per cell: the workers are still training when the run is killed
EXIT_S = 10.0  # how long the orphaned workers may take to exit

LOGGED = """
import os
from geobench.contract.hooks import hookimpl
from geobench.contract.registry import EmptyParams
from geobench_toy import ToyCE


def _log(word, ctx):
    with open(os.environ["GEOBENCH_TEST_LOG"], "a") as fh:
        fh.write(f"{word} {ctx.spec['optimizer']['lr']} {ctx.trial_seed} {os.getpid()}\\n")


class LoggedCE(ToyCE):
    def after_step(self, arm, step, total_steps):
        if step + 1 == total_steps:
            _log("end", self.ctx)


def build(params, ctx):
    _log("start", ctx)
    objective = LoggedCE(ctx.embed_dim, ctx.data.num_classes)
    objective.ctx = ctx
    return objective


@hookimpl
def register_objectives(register):
    register("logged_ce", build, EmptyParams, doc="toy_ce that logs its start and last step")
"""  # a line per cell started and per cell trained to its last step (needs the toy)


def _stat(pid: int) -> list[str]:
    """State, parent pid, ... of process ``pid`` (empty once it is gone)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []


def _children(pid: int) -> dict[int, bytes]:
    """Command line of each child of process ``pid``."""
    found = {}
    for path in Path("/proc").glob("[0-9]*"):
        if _stat(int(path.name))[1:2] == [str(pid)]:
            try:
                found[int(path.name)] = (path / "cmdline").read_bytes()
            except OSError:
                continue
    return found


def _alive(pids) -> list[int]:
    return [pid for pid in pids if _stat(pid)[:1] not in ([], ["Z"])]


def _lines(log: Path, word: str) -> list[list[str]]:
    text = log.read_text() if log.exists() else ""
    return [line.split()[1:] for line in text.splitlines() if line.startswith(word + " ")]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads /proc")
def test_sigkilled_pool_run_takes_its_workers_and_a_rerun_trains_each_cell_once(
        tmp_path, site, capsys):
    write_distribution(site, "logged-ce", "1.0", "logged", "logged_ce", LOGGED)
    text = small_suite(steps=STEPS, lrs=(0.1,)).replace("{name: toy_ce}", "{name: logged_ce}")
    (tmp_path / "suite.yaml").write_text(text)  # 2 cells (2 seeds)
    log = tmp_path / "executions.log"
    env = {"GEOBENCH_TEST_LOG": str(log)}
    args = ["run", "suite.yaml", "--store", "db.sqlite", "--quiet", "--no-leaderboard",
            "--executor", "pool", "--workers", "2"]
    run = start_cli(args, tmp_path, site, env, toy=True)
    children: dict[int, bytes] = {}
    try:
        deadline = time.time() + 120
        while len(_lines(log, "start")) < 2 and run.poll() is None and time.time() < deadline:
            time.sleep(0.1)
        children = _children(run.pid)
        workers = [pid for pid, cmd in children.items() if b"spawn_main" in cmd]
        assert len(workers) == 2 and not _lines(log, "end"), (children, log.read_text())
        run.kill()
        killed = time.monotonic()
        while _alive(children) and time.monotonic() - killed < EXIT_S:
            time.sleep(0.05)
        took = time.monotonic() - killed
        left = _alive(children)
        assert not left, {pid: children[pid] for pid in left}
        _, err = run.communicate(timeout=30)  # every holder of its stderr is gone
        assert "Traceback" not in err, err
        with capsys.disabled():
            print(f"\nchildren {len(children)} ({len(workers)} workers) before the kill, "
                  f"{len(left)} after; all gone {took:.2f} s after it")
    finally:
        for pid in _alive(children):  # the bug this test is about: do not leave them training
            os.kill(pid, signal.SIGKILL)

    rerun = start_cli(args, tmp_path, site, env, toy=True)
    out, err = rerun.communicate(timeout=600)
    assert rerun.returncode == 0, err
    assert "2 cells: 0 already stored, 2 run (2 complete" in out, out
    ends = _lines(log, "end")
    assert len(ends) == 2 and len({(lr, seed) for lr, seed, _ in ends}) == 2, ends
    assert not {pid for _, _, pid in ends} & {str(pid) for pid in workers}
    with sqlite3.connect(tmp_path / "db.sqlite") as con:
        assert con.execute("SELECT count(*), count(DISTINCT id) FROM cells").fetchone() == (2, 2)
        assert con.execute("SELECT count(*) FROM leases").fetchone() == (0,)
