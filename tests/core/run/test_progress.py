"""Progress off a terminal: a line per finished cell with the run's ETA (over the cells
this run will run), and lines from inside a running cell (in this process and in pool
workers)."""

import re
import sys

import pytest

from geobench.cli import main
from geobench.contract.manager import registry
from geobench.records import CellResult, Status
from geobench.run.leases import new_owner
from geobench.run.progress import RunProgress, duration
from geobench.run.runner import RunSummary, _leased
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from tests.core.suite_text import small_suite

LINE = re.compile(r"\[(\d)/4\] small lr=(0\.05|0\.1), trial_seed=[01] complete "
                  r"\d+\.\d s(, ETA \d+ (s|min))?$")


@pytest.mark.parametrize("seconds, text", [(0.4, "0 s"), (42, "42 s"), (89, "89 s"),
                                           (540, "9 min"), (5340, "89 min"), (5400, "1.5 h")])
def test_duration(seconds, text):
    assert duration(seconds) == text


def test_one_line_per_cell_with_eta_off_a_terminal(tmp_path, capfd):
    (tmp_path / "s.yaml").write_text(small_suite(steps=20))
    assert main(["run", str(tmp_path / "s.yaml"), "--store", str(tmp_path / "db.sqlite"),
                 "--no-leaderboard"]) == 0
    lines = [x for x in capfd.readouterr().err.splitlines() if x.startswith("[")]
    assert len(lines) == 4 and all(LINE.match(x) for x in lines), lines
    assert [LINE.match(x).group(1) for x in lines] == ["1", "2", "3", "4"]
    assert all(", ETA " in x for x in lines[:3]) and ", ETA " not in lines[3]


@pytest.mark.parametrize("executor", ["local", "pool"])
def test_a_running_cell_reports_its_step_and_loss(tmp_path, capfd, monkeypatch, executor):
    monkeypatch.setattr("geobench.run.runner.STEP_LINE_S", 0.0)  # a line at every report
    (tmp_path / "s.yaml").write_text(small_suite(steps=30, lrs=(0.1,)))
    assert main(["run", str(tmp_path / "s.yaml"), "--store", str(tmp_path / "db.sqlite"),
                 "--executor", executor, "--no-leaderboard"]) == 0
    err = capfd.readouterr().err
    steps = re.findall(r"^  small lr=0\.1, trial_seed=([01]): step (\d+)/30, "
                       r"loss \d\.\d+ \(\d+ s in\)$", err, re.MULTILINE)
    assert set(steps) == {(t, s) for t in "01" for s in ("10", "20", "30")}, err


def test_quiet_prints_no_progress(tmp_path, capfd, monkeypatch):
    monkeypatch.setattr("geobench.run.runner.STEP_LINE_S", 0.0)
    (tmp_path / "s.yaml").write_text(small_suite(steps=10, lrs=(0.1,)))
    assert main(["run", str(tmp_path / "s.yaml"), "--store", str(tmp_path / "db.sqlite"),
                 "--no-leaderboard", "--quiet"]) == 0
    assert capfd.readouterr().err == ""


def test_eta_counts_only_the_cells_this_run_will_run(tmp_path, capfd):
    (tmp_path / "s.yaml").write_text(small_suite(steps=10))
    assert main(["run", str(tmp_path / "s.yaml"), "--store", str(tmp_path / "db.sqlite"),
                 "--no-leaderboard", "--max-cells", "2"]) == 0
    lines = [x for x in capfd.readouterr().err.splitlines() if x.startswith("[")]
    assert len(lines) == 2 and ", ETA " in lines[0] and ", ETA " not in lines[1], lines


@pytest.mark.parametrize("todo, max_cells, held, left, waited", [
    (10, None, 0, 8, 0.0),  # 2 ran, 8 left at 5 s each
    (10, None, 3, 5, 0.0),  # 3 of the 8 are another run's
    (10, 4, 0, 2, 0.0),  # --max-cells 4 leaves 2
    (10, 4, 7, 1, 0.0),  # 1 left to do here, under the cap of 2
    (10, 2, 0, 0, 0.0),  # the cap is reached
    (10, None, 0, 8, 30.0),  # 30 s spent waiting for another run do not count
])
def test_eta_is_pace_times_cells_left(monkeypatch, todo, max_cells, held, left, waited):
    clock = iter([100.0, 110.0 + waited])
    monkeypatch.setattr("geobench.run.runner.time.monotonic", lambda: next(clock))
    progress = RunProgress("s", total=12, done=2, todo=todo, max_cells=max_cells, quiet=True)
    progress.finished += 2  # two cells in 10 s of work
    progress.waited = waited
    assert progress.eta(held) == (f", ETA {duration(5.0 * left)}" if left else "")


def test_pool_workers_print_step_lines_while_the_parent_shows_bars(tmp_path, capfd,
                                                                  monkeypatch):
    monkeypatch.setattr("geobench.run.runner.STEP_LINE_S", 0.0)
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # the workers' stderr is not
    (tmp_path / "s.yaml").write_text(small_suite(steps=30, lrs=(0.1,)))
    assert main(["run", str(tmp_path / "s.yaml"), "--store", str(tmp_path / "db.sqlite"),
                 "--executor", "pool", "--no-leaderboard"]) == 0
    err = capfd.readouterr().err
    assert "2/2" in err  # the grid bar
    # (the bar and the workers' lines share the captured stderr, so a line may follow the bar)
    steps = re.findall(r"  small lr=0\.1, trial_seed=([01]): step 30/30", err)
    assert sorted(steps) == ["0", "1"], err


def test_cells_another_run_finished_are_counted_as_run_elsewhere(tmp_path):
    (tmp_path / "s.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    cells = Study(load_suite(tmp_path / "s.yaml"), registry(), "smoke").cells
    store = Store(tmp_path / "db.sqlite")
    try:  # the first cell is finished by another run after this run listed its todo
        store.write(cells[0], CellResult(cells[0].id, Status.COMPLETE), {}, "other:1:ns:0")
        summary, held = RunSummary(cells, skipped=0), []
        leased = list(_leased(store, cells, new_owner(), 60, 0.0, False, held, None, summary))
    finally:
        store.close()
    assert leased == cells[1:] and held == [] and summary.elsewhere == 1
