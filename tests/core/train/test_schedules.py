import math

import pytest

from geobench.contract.spec import TrainSpec
from geobench.suite import deep_merge, set_dotted
from geobench.train.schedules import Schedule, lr_factor, scaled_lr

TRAIN = TrainSpec(steps=20, lr_schedule="warmup_cosine", warmup_steps=4, lr_scaling="sqrt",
                  base_batch_size=256)


def test_warmup_cosine_closed_form():
    total = 20
    assert [lr_factor(s, total, TRAIN) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]
    for s in range(4, total):
        assert lr_factor(s, total, TRAIN) == pytest.approx(
            0.5 * (1 + math.cos(math.pi * (s - 4) / 16)))
    assert lr_factor(3, total, TRAIN.model_copy(update={"lr_schedule": "constant"})) == 1.0


@pytest.mark.parametrize("rule,power", [("none", 0), ("linear", 1), ("sqrt", 0.5),
                                        ("fourth_root", 0.25)])
def test_lr_scaling_rules(rule, power):
    train = TRAIN.model_copy(update={"lr_scaling": rule})
    assert scaled_lr(0.3, train, 1024) == pytest.approx(0.3 * 4**power)


def test_metric_schedule_includes_start_and_end():
    assert {s for s in range(-3, 14) if s in Schedule(4, 10)} == {0, 4, 8, 10}
    assert {s for s in range(-3, 14) if s in Schedule(None, 10)} == {10}


def test_a_billion_step_schedule_is_a_rule_not_a_list():
    steps = Schedule(1, 10**9)
    assert 10**9 - 1 in steps and 10**9 in steps and 10**9 + 1 not in steps


def test_deep_merge_and_dotted_set():
    base = {"objective": {"name": "cl", "tau": 0.5}, "train": {"steps": 3}}
    merged = deep_merge(base, {"objective": {"name": "nscl"}})
    assert merged == {"objective": {"name": "nscl", "tau": 0.5}, "train": {"steps": 3}}
    assert base["objective"]["name"] == "cl"
    set_dotted(merged, "init.eps", 0.1)
    assert merged["init"] == {"eps": 0.1}
