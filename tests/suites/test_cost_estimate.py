"""Cost estimates of shipped suites: the missing-calibration message, and an estimate
against a measured CPU run (slow)."""

import pytest

from geobench.contract.plugins import registry
from geobench.run import estimate
from geobench.run.calibrate import calibrate
from geobench.run.preflight import Shortening, design_points
from geobench.suite import expand, load_suite
from geobench.train.engine import run_cell

FACTOR = 1.5  # an estimate is within this factor of the measured wall time


def test_without_calibration_show_names_the_file(tmp_path):
    cells = expand(load_suite("suites/collapse.yaml"), registry(), "smoke")
    lines = estimate.cost_lines(cells, ("cpu",), tmp_path)
    assert lines[0] == "steps: 22,250 lockstep (4 arms each step), 89,000 arm steps"
    assert lines[1].startswith(f"CPU-hours: not estimated — no calibration file "
                               f"{tmp_path / 'calibration_cpu.json'}")


@pytest.mark.slow
def test_estimate_is_within_a_factor_of_a_measured_cpu_run():
    """Calibrated on a 40-step run of head_depth's first design point (four heads on a tiny
    ResNet, the Hessian every 20 steps, guillotine probes), priced at its full 400 steps and
    compared with the wall time of two real cells of it (about a minute)."""
    reg = registry()
    cells = expand(load_suite("suites/head_depth.yaml"), reg, "smoke")
    point = design_points(cells)[0]
    tables = calibrate([point], reg, Shortening(steps=40))
    cal = estimate.Calibration(estimate.RESULTS, **tables)
    runs = [c for c in cells if c.arms == point.arms][:2]
    measured = 0.0
    for cell in runs:
        result = run_cell(cell, reg)
        assert result.status.value == "complete"
        measured += result.finished - result.started
    priced = estimate.estimate(runs, cal)
    assert not priced.missing
    assert 1 / FACTOR < priced.seconds / measured < FACTOR, (priced.seconds, measured)
