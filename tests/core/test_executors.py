"""Every executor gives the local executor's numbers; the driver alone writes the store."""

import signal
import sqlite3

import pytest

from geobench.plugins import registry
from geobench.runner import run_suite
from geobench.store import Store
from geobench.suite import expand, load_suite
from tests.core.suite_text import small_suite
from tests.core.test_resume import _complete, _kill_after, _run

LRS = (0.05, 0.1, 0.2)  # x 2 seeds = 6 cells


def _finals(tmp_path, store: str) -> dict[str, dict[str, float]]:
    cells = expand(load_suite(tmp_path / "suite.yaml"), registry())
    db = Store(tmp_path / store)
    rows = db.cells([c.id for c in cells])
    db.close()
    assert len(rows) == len(cells) and all(r["status"] == "complete" for r in rows.values())
    return {cell: row["metrics"] for cell, row in rows.items()}


def _run_with(tmp_path, executor: str | None, **options) -> dict[str, dict[str, float]]:
    store = f"{executor or 'local'}.sqlite"
    summary = run_suite(str(tmp_path / "suite.yaml"), store_path=str(tmp_path / store),
                        executor=executor, options=options, quiet=True)
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
    assert len(list(folder.glob("*.result.pkl"))) == 6  # one result file per array task
