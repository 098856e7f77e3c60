"""The one result-key format, and finals as the last value of each series."""

import math

from geobench.records import (
    SINGLE_ARM,
    Cell,
    MetricKey,
    Status,
    cross_arm,
    finals_of,
    measured_arm,
    metric_key,
    parse_metric_key,
)


def test_result_keys_are_built_and_parsed_in_one_format():
    assert metric_key(SINGLE_ARM, "collapse.erank") == "collapse.erank"
    assert metric_key("gd", "q_margin.value") == "gd/q_margin.value"
    label = cross_arm("cl", "nscl")
    assert label == "cl~nscl" and measured_arm(label) == "nscl"
    assert metric_key(label, "cka.linear") == "cl~nscl/cka.linear"
    assert parse_metric_key("cl~nscl/cka.linear") == MetricKey("cl~nscl", "cka", "linear")
    assert parse_metric_key("pruning_curve.acc_0.5") == MetricKey(SINGLE_ARM, "pruning_curve",
                                                                   "acc_0.5")
    for key in ("loss.train", "a/b.c", "a~b/m.f_1"):
        assert str(parse_metric_key(key)) == key


def test_finals_are_the_last_step_of_each_series():
    series = [("main", "m.x", 0, 1.0), ("main", "m.x", 5, 2.0), ("b", "m.x", 5, 3.0),
              ("main", "m.x", 3, 9.0), ("a~b", "c.y", 2, math.nan)]
    finals = finals_of(series)
    assert finals["m.x"] == 2.0 and finals["b/m.x"] == 3.0 and math.isnan(finals["a~b/c.y"])


def test_statuses_compare_as_their_stored_strings():
    assert Status.DIVERGED == "diverged" and str(Status.FAILED) == "failed"
    assert "complete" in (Status.COMPLETE, Status.DIVERGED)


def test_a_cells_label_names_keys_and_values_briefly():
    varied = {"arms.gd.optimizer.lr": 0.5, "arms.sgd.optimizer.lr": 0.1,
              "tags.backbone": "mlp", "backbone": {"name": "mlp", "depth": 2},
              "metrics": [{"name": "nccc", "every": 10}, {"name": "knn", "k": 5}],
              "x.a.eps": 1, "a.x.eps": 2, "data.note": "n" * 60, "trial_seed": 3}
    cell = Cell("0" * 16, "s", "smoke", 3, {}, varied)
    assert cell.label() == (
        "gd.lr=0.5, sgd.lr=0.1, tags.backbone=mlp, backbone=mlp, metrics=[nccc, knn], "
        f"x.a.eps=1, a.x.eps=2, note={'n' * 47}…, trial_seed=3")
    assert Cell("1" * 16, "s", "smoke", 0, {}, {}).label() == "base"
