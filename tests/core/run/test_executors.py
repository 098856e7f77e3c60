"""Every executor gives the local executor's numbers; the driver alone writes the store."""

import json
import multiprocessing as mp
import re
import signal
import sqlite3
from types import SimpleNamespace

import pytest
import torch

from geobench.cli import main
from geobench.contract.manager import registry
from geobench.run.executors import WorkerDied
from geobench.run.executors.pool import PoolExecutor, PoolParams
from geobench.run.runner import RunOptions, run_suite
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from tests.conftest import run_cli, write_distribution
from tests.core import executor_helpers as helpers
from tests.core.run.test_resume import _complete, _kill_after, _run
from tests.core.suite_text import small_suite

LRS = (0.05, 0.1, 0.2)  # x 2 seeds = 6 cells


def _finals(tmp_path, store: str) -> dict[str, dict[str, float]]:
    cells = Study(load_suite(tmp_path / "suite.yaml"), registry()).cells
    db = Store(tmp_path / store)
    rows = db.cells([c.id for c in cells])
    db.close()
    assert len(rows) == len(cells) and all(r["status"] == "complete" for r in rows.values())
    return {cell: row["metrics"] for cell, row in rows.items()}


def _run_with(tmp_path, executor: str | None, **options) -> dict[str, dict[str, float]]:
    store = f"{executor or 'local'}.sqlite"
    summary = run_suite(str(tmp_path / "suite.yaml"), RunOptions(
        store=str(tmp_path / store), executor=executor, executor_options=options, quiet=True))
    assert summary.statuses["complete"] == len(summary.cells)
    return _finals(tmp_path, store)


@pytest.fixture
def suite(tmp_path):
    (tmp_path / "suite.yaml").write_text(small_suite(steps=20, lrs=LRS))
    return tmp_path


def test_pool_matches_local(suite):
    assert _run_with(suite, "pool", workers=2) == _run_with(suite, None)


@pytest.mark.slow
def test_ray_matches_local_and_a_killed_driver_resumes(suite):
    ray = pytest.importorskip("ray")
    try:
        assert _run_with(suite, "ray", local_cpus=2) == _run_with(suite, None)
    finally:
        ray.shutdown()
    db = suite / "db.sqlite"
    _kill_after(_run(suite, "--executor", "ray"), db, 1, signal.SIGKILL)
    assert 1 <= _complete(db) <= 6
    out = _run(suite, "--executor", "ray")
    _, err = out.communicate(timeout=600)
    assert out.returncode == 0, err
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT count(DISTINCT id), count(*) FROM cells").fetchone() == (6, 6)


@pytest.mark.slow
def test_slurm_array_on_submitit_local_matches_local(suite):
    pytest.importorskip("submitit")
    folder = suite / "jobs"
    slurm = _run_with(suite, "slurm", cluster="local", folder=str(folder), poll_seconds=0.5)
    assert slurm == _run_with(suite, None)
    assert len(list((folder / "logs").glob("*_log.out"))) == 6  # one array task per cell
    assert not list(folder.glob("*.result.pkl"))  # each result file removed once stored


def _pool(workers: int = 2, **params) -> PoolExecutor:
    return PoolExecutor(PoolParams(workers=workers, **params))


def test_a_worker_killed_or_exiting_fails_its_cell_and_the_others_go_on():
    items = list(range(1, 9))
    results = dict(_pool().map(helpers.double_or_die, items))
    assert sorted(results) == items
    assert isinstance(results[helpers.KILL], WorkerDied)
    assert str(results[helpers.KILL]) == "worker died: signal 9 (Killed)"
    assert isinstance(results[helpers.EXIT], WorkerDied)
    assert str(results[helpers.EXIT]) == "worker died: exit code 3"
    assert isinstance(results[helpers.RAISE], ValueError)
    dead = (helpers.KILL, helpers.EXIT, helpers.RAISE)
    assert {x: results[x] for x in items if x not in dead} == {
        x: 2 * x for x in items if x not in dead}


def test_closing_a_pool_early_stops_its_workers():
    results = _pool().map(helpers.threads_and_pid, [0, 30, 30, 30])
    next(results)
    workers = mp.active_children()
    assert len(workers) == 2
    results.close()
    assert not any(w.is_alive() for w in workers) and mp.active_children() == []


@pytest.mark.parametrize("executor", [None, "pool"])
def test_each_cell_runs_on_the_runs_threads_whatever_the_executor(suite, executor):
    """The run's thread count is set where the cell runs (the driver for local, a worker for
    pool), recorded with the cell, and the driver's own count is left as it was."""
    before = torch.get_num_threads()
    for threads in (1, 2):
        store = str(suite / f"{executor}-{threads}.sqlite")
        run_suite(str(suite / "suite.yaml"), RunOptions(
            store=store, executor=executor, threads=threads, quiet=True,
            executor_options={"workers": 2} if executor else {}))
        db = sqlite3.connect(store)
        recorded = {json.loads(p)["threads"] for (p,) in db.execute("SELECT provenance FROM cells")}
        db.close()
        assert recorded == {threads}
        assert torch.get_num_threads() == before
        out = suite / f"{executor}-{threads}.md"
        assert main(["leaderboard", str(suite / "suite.yaml"), "--store", store, "--out",
                     str(out)]) == 0
        flag = "" if threads == 1 else f" --threads {threads}"
        page = out.read_text()
        assert f"`geobench run suite.yaml{flag}`" in page  # the name alone: no path of here
        assert f"; torch threads per cell {threads}\n" in page


def test_run_suite_stores_a_killed_workers_cell_as_failed(tmp_path, site):
    write_distribution(site, "geobench-die", "0.1", "die", "geobench_die", helpers.DIE_AT_LR)
    text = small_suite(steps=20, lrs=LRS).replace("{name: toy_ce}", "{name: ce_or_die}")
    (tmp_path / "suite.yaml").write_text(text)
    out = run_cli(["run", "suite.yaml", "--executor", "pool", "--workers", "2", "--store",
                   "db.sqlite", "--no-leaderboard", "--quiet"], tmp_path, site, toy=True)
    assert "6 cells" in out.stdout, out.stderr
    with sqlite3.connect(tmp_path / "db.sqlite") as con:
        rows = con.execute("SELECT config, status, error FROM cells").fetchall()
    statuses = {(json.loads(c)["varied"]["optimizer.lr"], s, e) for c, s, e in rows}
    assert len(rows) == 6
    assert {(lr, s) for lr, s, _ in statuses} == {
        (0.05, "complete"), (0.1, "complete"), (0.2, "failed")}
    assert {e for lr, _, e in statuses if lr == 0.2} == {
        "WorkerDied: worker died: signal 9 (Killed)"}


@pytest.mark.slow
def test_a_crashed_ray_worker_fails_its_cell_clearly():
    ray = pytest.importorskip("ray")
    from geobench.run.executors.ray_cluster import RayExecutor, RayParams

    try:
        runner = RayExecutor(RayParams(local_cpus=2, max_retries=0))
        results = dict(runner.map(helpers.double_or_die, [1, helpers.KILL]))
    finally:
        ray.shutdown()
    assert results[1] == 2
    assert str(results[helpers.KILL]) == "worker died: WorkerCrashedError"


@pytest.mark.slow
def test_a_killed_slurm_array_task_names_its_job_and_state(tmp_path):
    pytest.importorskip("submitit")
    from geobench.run.executors.slurm import SlurmExecutor, SlurmParams

    runner = SlurmExecutor(SlurmParams(cluster="local", folder=str(tmp_path), poll_seconds=0.5))
    [(_, error)] = runner.map(helpers.kill_self, [SimpleNamespace(id="doomed")])
    assert isinstance(error, RuntimeError)
    assert re.fullmatch(r"array task \S+ ended [A-Z]+ without a result \(its log: \S+\)",
                        str(error)), error
