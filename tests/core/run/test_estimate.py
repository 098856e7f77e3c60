"""Cost estimates: the evaluation count against the engine's schedule and scaling between
batch sizes; calibration from the timing a run stores, which prices its cells at the time
they took; memory: the calibrated peak per worker and the pool's worker count from it
(tests/suites/test_cost_estimate.py prices shipped suites)."""

import copy
import json

import pytest

from geobench.contract.manager import registry
from geobench.records import ArmStatus, Status
from geobench.run import calibrate, estimate, runner
from geobench.run.executors.pool import PoolExecutor, PoolParams
from geobench.run.preflight import Shortening
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from geobench.train.schedules import Schedule
from tests.core.suite_text import small_suite


@pytest.mark.parametrize("every,total", [(None, 7), (1, 5), (4, 100), (64, 1600), (6, 25),
                                         (500, 200)])
def test_evaluations_count_the_schedule(every, total):
    assert estimate.evaluations(every, total) == sum(
        step in Schedule(every, total) for step in range(total + 1))


def test_step_scales_from_the_nearest_batch(tmp_path):
    path = tmp_path / "calibration_cpu.json"
    path.write_text(json.dumps({"step_s": {"k": {"64": 0.2, "256": 1.0}}}))
    cal = estimate.Calibration.read(path)
    assert cal.step("k", 256) == 1.0 and cal.step("k", 128) == pytest.approx(0.4)
    assert cal.step("k", 512) == pytest.approx(2.0) and cal.step("other", 64) is None


def _cells(tmp_path, design: str):
    """The small suite's cells (toy MLP on the toy mixture, whose cost key ``key`` names)."""
    (tmp_path / "s.yaml").write_text(small_suite(steps=3, lrs=(0.1,)) + design)
    cells = Study(load_suite(tmp_path / "s.yaml"), registry()).cells
    return cells, estimate.cost_key(next(iter(cells[0].arms.values())))


def test_the_peak_per_worker_is_the_largest_calibrated_for_the_cells_keys(tmp_path):
    cells, key = _cells(tmp_path, "")
    doc = {"peak_mb": {}}
    for new in ({key: 900.0}, {key: 3000.0}, {key: 1200.0}, {"other": 9000.0}):
        calibrate.merge(doc, {"peak_mb": new})
    assert doc["peak_mb"] == {key: 3000.0, "other": 9000.0}  # each key's largest
    path = tmp_path / "calibration_cpu.json"
    path.write_text(json.dumps(doc))
    cal = estimate.Calibration.read(path)
    assert estimate.peak_mb(cells, cal) == (3000.0, [])
    assert estimate.memory_line(cells, cal) == (
        "memory: at most about 2.9 GiB per worker (the largest cell's peak, "
        "calibration_cpu.json)")
    path.write_text(json.dumps({"peak_mb": {"other": 1.0}}))
    assert estimate.memory_line(cells, estimate.Calibration.read(path)).startswith(
        "memory: not calibrated in calibration_cpu.json")


def test_calibrating_memory_runs_every_design_point_and_records_its_peak(tmp_path):
    cells, key = _cells(tmp_path, "")
    tables = calibrate.calibrate(cells, registry(), Shortening(steps=2), memory=True)
    assert list(tables) == ["peak_mb"] and list(tables["peak_mb"]) == [key]
    assert 50 < tables["peak_mb"][key] < 4000  # MiB: a process with torch, a toy cell


def test_the_pool_starts_no_more_workers_than_memory_holds():
    pool = PoolExecutor(PoolParams(workers=4))
    assert pool.fit_memory(peak_mb=1000.0, available_mb=9000.0) is None and pool.workers == 4
    assert pool.fit_memory(peak_mb=3000.0, available_mb=7000.0) == (
        "pool: 2 of 4 workers: 6.8 GiB available, a cell needs up to 2.9 GiB")
    assert pool.workers == 2
    assert pool.fit_memory(peak_mb=9000.0, available_mb=7000.0) is not None
    assert pool.workers == 1  # one at least


def test_a_run_says_when_memory_caps_its_pool(tmp_path, monkeypatch, capsys):
    cells, key = _cells(tmp_path, "executor: {name: pool, workers: 2}\n")
    cal = tmp_path / "calibration_cpu.json"
    cal.write_text(json.dumps({"peak_mb": {key: 600.0}}))
    monkeypatch.setattr(runner, "calibration_path", lambda device: cal)
    monkeypatch.setattr(runner, "available_mb", lambda: 1000.0)
    summary = runner.run_suite(str(tmp_path / "s.yaml"), runner.RunOptions(
        store=str(tmp_path / "db.sqlite"), quiet=True))
    assert summary.statuses["complete"] == 2
    assert ("geobench: pool: 1 of 2 workers: 1.0 GiB available, a cell needs up to 0.6 GiB"
            in capsys.readouterr().err)


def test_calibrating_from_a_runs_stored_timing_prices_its_cells_at_the_time_they_took(
        tmp_path):
    cells, key = _cells(tmp_path, "")  # 2 cells (trial seeds) of 3 steps, nccc every 10
    runner.run_suite(str(tmp_path / "s.yaml"), runner.RunOptions(
        store=str(tmp_path / "db.sqlite"), quiet=True))
    rows = Store(tmp_path / "db.sqlite").cells([c.id for c in cells])
    timings = [rows[c.id]["provenance"]["timing"] for c in cells]
    for cell, t in zip(cells, timings):
        assert t["steps"] == 3 and t["calls"] == {"nccc": 2}  # steps 0 and 3
        assert 0 < t["start"] and 0 < t["metric"]["nccc"] < t["loop"]
        assert t["start"] + t["loop"] <= rows[cell.id]["seconds"]  # within the cell's time
    tables = calibrate.from_runs(cells, rows)
    path = tmp_path / "calibration_cpu.json"
    path.write_text(json.dumps(tables))
    cal = estimate.Calibration.read(path)
    # the same design twice: each figure the median (here the mean) of the two, so the two
    # cells together cost what their start-up and loops took
    assert estimate.estimate(cells, cal).seconds == pytest.approx(
        sum(t["start"] + t["loop"] for t in timings), rel=1e-9)
    assert tables["step_s"][key]["32"] == pytest.approx(
        sum((t["loop"] - t["metric"]["nccc"]) / 3 for t in timings) / 2, rel=1e-9)
    # a cell stored without a timing, or with an arm that stopped early, is left out
    older = copy.deepcopy(rows)
    del older[cells[0].id]["provenance"]["timing"]
    stopped = copy.deepcopy(rows)
    stopped[cells[0].id]["arms"] = {name: ArmStatus(Status.DIVERGED.value, step=1)
                                    for name in stopped[cells[0].id]["arms"]}
    alone = calibrate.from_runs(cells[1:], rows)
    assert calibrate.from_runs(cells, older) == alone == calibrate.from_runs(cells, stopped)
    assert alone["start_s"][key] == timings[1]["start"]
