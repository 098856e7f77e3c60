"""``geobench run --executor slurm`` against a real Slurm cluster (scripts/cluster.sh):
sbatch job arrays, squeue/sacct states, scancel, time limits, a driver killed while its
tasks run, tasks pending on resources and accounting that lags."""

import os
import shutil
import signal
import subprocess

import pytest

from tests.cluster.conftest import (
    documented,
    executions,
    napping_suite,
    naps,
    stored,
    values,
)
from tests.conftest import run_cli, start_cli, wait_until

pytestmark = pytest.mark.cluster

SLURM = ("executor: {name: slurm, cluster: slurm, folder: jobs, cpus_per_task: 1, "
         "poll_seconds: 0.2, state_seconds: 1}\n")


def _run(tmp_path, site, store, *extra, env=None):
    return run_cli(["run", "suite.yaml", "--store", store, "--no-leaderboard", *extra],
                   tmp_path, site, toy=True, extra_env=env)


def _env(tmp_path, nap=""):
    return naps(tmp_path / "napping.json", tmp_path / "executions.log", nap)


def sacct(job: str) -> str:
    """sacct's line of one array task: its id, state and exit code."""
    return subprocess.run(["sacct", "-X", "-n", "-P", "-j", job, "-o", "JobID,State,ExitCode"],
                          capture_output=True, text=True).stdout.strip()


def test_an_array_on_slurm_stores_what_the_local_executor_stores(tmp_path, site, slurm_cluster):
    napping_suite(tmp_path, site, (0.05, 0.1, 0.2), executor=SLURM)
    env = _env(tmp_path)
    on_slurm = _run(tmp_path, site, "slurm.sqlite", env=env)
    assert on_slurm.returncode == 0, on_slurm.stderr
    tasks = [where for _, where in executions(tmp_path / "executions.log")]
    assert len(tasks) == 3 and len({t.split("_")[0] for t in tasks}) == 1  # one job array
    local = _run(tmp_path, site, "local.sqlite", "--executor", "local", env=env)
    assert local.returncode == 0, local.stderr
    assert values(tmp_path / "slurm.sqlite") == values(tmp_path / "local.sqlite")
    assert len(values(tmp_path / "local.sqlite")) > 20
    assert not list((tmp_path / "jobs").glob("*.result.pkl"))  # stored, then removed


def test_a_cancelled_and_a_timed_out_task_fail_their_cells_and_a_rerun_trains_those_only(
        tmp_path, site, slurm_cluster):
    napping_suite(tmp_path, site, (0.05, 0.1, 0.2), steps=200, executor=SLURM)
    log = tmp_path / "executions.log"
    env = _env(tmp_path, "0.1:1,0.2:1")  # 200 s each: past a one-minute limit
    run = documented("geobench run suite.yaml --store db.sqlite --executor slurm "
                     "--partition debug --timeout-min 1")
    driver = start_cli(run, tmp_path, site, env, toy=True)
    wait_until(lambda: "0.1" in dict(executions(log)), 120, "the cell with lr 0.1 to start")
    task = dict(executions(log))["0.1"]
    subprocess.run(["scancel", task], check=True)
    out, err = driver.communicate(timeout=300)
    assert driver.returncode == 1, err
    timed_out = dict(executions(log))["0.2"]
    cells = stored(tmp_path / "db.sqlite")
    assert cells["0.05"] == ("complete", None)
    assert cells["0.1"][0] == "failed" and f"task {task} ended CANCELLED" in cells["0.1"][1]
    assert cells["0.2"][0] == "failed" and f"task {timed_out} ended TIMEOUT" in cells["0.2"][1]
    assert "CANCELLED" in sacct(task) and "TIMEOUT" in sacct(timed_out), (sacct(task),
                                                                          sacct(timed_out))
    print(f"sacct: {sacct(task)}; {sacct(timed_out)}\nstored: {cells}")
    for name in ("CANCELLED", "TIMEOUT"):
        assert name in err

    rerun = run_cli(documented("geobench run suite.yaml --store db.sqlite --executor slurm"),
                    tmp_path, site, toy=True, extra_env=_env(tmp_path))
    assert rerun.returncode == 0, rerun.stderr
    assert sorted(lr for lr, _ in executions(log)) == ["0.05", "0.1", "0.1", "0.2", "0.2"]
    assert {s for s, _ in stored(tmp_path / "db.sqlite").values()} == {"complete"}


def test_tasks_pending_on_resources_show_as_pending(tmp_path, site, slurm_cluster):
    napping_suite(tmp_path, site, (0.05, 0.1, 0.2, 0.4), executor=SLURM)  # 4 tasks, 2 CPUs
    run = _run(tmp_path, site, "db.sqlite", env=_env(tmp_path, "0.05:0.25,0.1:0.25,0.2:0.25,"
                                                                "0.4:0.25"))
    assert run.returncode == 0, run.stderr
    states = [line for line in run.stderr.splitlines() if line.startswith("job ")]
    assert any("2 pending, 2 running" in line for line in states), states
    assert {s for s, _ in stored(tmp_path / "db.sqlite").values()} == {"complete"}


def test_a_rerun_after_the_driver_was_killed_stores_what_its_tasks_left(tmp_path, site,
                                                                         slurm_cluster):
    napping_suite(tmp_path, site, (0.05, 0.1, 0.2), steps=40, executor=SLURM)
    log, db = tmp_path / "executions.log", tmp_path / "db.sqlite"
    env = _env(tmp_path, "0.1:0.2,0.2:0.2")  # 8 s each
    args = ["run", "suite.yaml", "--store", "db.sqlite", "--no-leaderboard", "--lease-timeout",
            "4"]
    driver = start_cli(args, tmp_path, site, env, toy=True)
    wait_until(lambda: db.exists() and "0.05" in stored(db) and len(executions(log)) == 3, 120,
               "the fast cell stored and both slow cells training")
    driver.send_signal(signal.SIGKILL)  # the driver dies; its array tasks run on
    driver.communicate(timeout=60)
    assert set(stored(db)) == {"0.05"}

    rerun = _run(tmp_path, site, "db.sqlite", env=env)
    assert rerun.returncode == 0, rerun.stderr
    assert sorted(lr for lr, _ in executions(log)) == ["0.05", "0.1", "0.2"]  # trained once
    assert {lr: s for lr, (s, _) in stored(db).items()} == {
        "0.05": "complete", "0.1": "complete", "0.2": "complete"}
    assert not list((tmp_path / "jobs").glob("*.result.pkl"))


SACCT_LAGGING = """#!/bin/sh
# sacct while accounting lags: the header, no job, while the flag file exists
if [ -e "{flag}" ]; then echo "$*" >> "{calls}"; echo "JobID|State|NodeList"; exit 0; fi
exec {sacct} "$@"
"""


def test_a_task_accounting_does_not_know_yet_is_waited_for(tmp_path, site, slurm_cluster):
    napping_suite(tmp_path, site, (0.1,), steps=200, executor=SLURM)
    shims, flag, calls = tmp_path / "bin", tmp_path / "lagging", tmp_path / "sacct-calls"
    shims.mkdir()
    (shims / "sacct").write_text(SACCT_LAGGING.format(flag=flag, calls=calls,
                                                      sacct=shutil.which("sacct")))
    (shims / "sacct").chmod(0o755)
    flag.touch()
    log, db = tmp_path / "executions.log", tmp_path / "db.sqlite"
    env = {**_env(tmp_path, "0.1:1"), "PATH": f"{shims}:{os.environ['PATH']}"}
    driver = start_cli(["run", "suite.yaml", "--store", "db.sqlite", "--no-leaderboard"],
                       tmp_path, site, env, toy=True)
    wait_until(lambda: executions(log), 120, "the cell to start")
    task = executions(log)[0][1]
    subprocess.run(["scancel", task], check=True)
    wait_until(lambda: not subprocess.run(["squeue", "-h", "-j", task.split("_")[0]],
                                          capture_output=True, text=True).stdout.strip(),
               60, "the task to end")
    asked = len(calls.read_text().splitlines())
    wait_until(lambda: len(calls.read_text().splitlines()) >= asked + 3, 60,
               "three more questions to the lagging accounting")
    assert driver.poll() is None and "0.1" not in stored(db)  # not read as lost
    flag.unlink()  # accounting catches up
    out, err = driver.communicate(timeout=120)
    assert driver.returncode == 1, err
    assert "1 not yet in accounting" in err
    status, error = stored(db)["0.1"]
    assert status == "failed" and f"task {task} ended CANCELLED" in error
