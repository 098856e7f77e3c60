"""The escape designs run at matched integrated time: plain SGD at a constant step, so T =
lr × steps is the cell's ``tags.T``; BYOL's EMA target moves by 1 - tau = lr per step (the
same rate per unit of T in every run); escape is checked at a fixed interval of T."""

import math
from pathlib import Path

import pytest

from geobench.contract.manager import registry
from geobench.study import Study
from geobench.suite import load_suite

SUITES = Path(__file__).resolve().parents[2] / "suites"


def _cells(name: str):
    loaded = load_suite(SUITES / f"{name}.yaml")
    for profile in loaded.suite.profiles:
        yield from Study(loaded, registry(), profile).cells


@pytest.mark.parametrize("name", ["collapse", "escape"])
def test_every_run_integrates_its_stated_time(name):
    for cell in _cells(name):
        for arm, spec in cell.arms.items():
            opt = spec["optimizer"]
            assert opt["name"] == "sgd" and opt["momentum"] == 0.0, (cell.id, arm)
            assert spec["train"].get("lr_schedule", "constant") == "constant", (cell.id, arm)
            steps, lr = spec["train"]["steps"], opt["lr"]
            assert math.isclose(lr * steps, spec["tags"]["T"]), (cell.id, arm)


def test_byol_target_moves_at_the_same_rate_per_unit_of_time():
    for cell in _cells("escape"):
        spec = cell.arms["byol_relu"]
        objective, lr = spec["objective"], spec["optimizer"]["lr"]
        assert objective["name"] == "byol" and objective["schedule"] == "constant"
        assert math.isclose(1 - objective["momentum"], lr), cell.id


def test_escape_is_checked_every_half_unit_of_time():
    for cell in _cells("escape"):
        for arm, spec in cell.arms.items():
            every = {m["name"]: m["every"] for m in spec["metrics"]}
            assert every["escape_step"] == every["collapse"], (cell.id, arm)
            assert math.isclose(every["escape_step"] * spec["optimizer"]["lr"], 0.5), cell.id
