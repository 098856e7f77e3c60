"""Cost estimates: the evaluation count against the engine's schedule and scaling between
batch sizes (tests/suites/test_cost_estimate.py prices shipped suites)."""

import json

import pytest

from geobench.run import estimate
from geobench.train.schedules import Schedule


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
