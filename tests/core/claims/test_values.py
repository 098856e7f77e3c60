"""Stored values of a suite's cells (geobench.claims.values): reductions of a series, the
lookup of a result key by arm (own series, then cross-arm), config values, field docs."""

import math

import pytest

from geobench.claims.values import TRAIN_LOSS, StoredValues, field_doc, series_stat
from geobench.contract.manager import registry
from geobench.records import Cell, CellResult
from geobench.run.store import Store
from geobench.suite.where import config_value

NAN = math.nan


@pytest.mark.parametrize("stat, want", [("first", 3.0), ("last", 2.0), ("min", -1.0),
                                        ("max", 5.0), ("mean", (3 + 5 - 1 + 2) / 4)])
def test_series_stat_leaves_nan_out(stat, want):
    assert series_stat([NAN, 3.0, 5.0, NAN, -1.0, 2.0, NAN], stat) == want


def test_series_stat_of_nothing_is_nan():
    assert math.isnan(series_stat([], "last")) and math.isnan(series_stat([NAN], "max"))


ARM = {"optimizer": {"name": "sgd", "lr": 0.1},
       "metrics": [{"name": "nccc", "id": "probe"}, {"name": "knn", "id": "knn"}]}
ONE = Cell("a" * 16, "s", "smoke", 0, {"main": ARM}, {"tags.x": "u", "trial_seed": 0})
TWO = Cell("b" * 16, "s", "smoke", 1, {"ref": ARM, "other": {**ARM, "tags": {"k": 2}}},
           {"trial_seed": 1})
GONE = Cell("c" * 16, "s", "smoke", 2, {"main": ARM}, {"trial_seed": 2})


@pytest.fixture
def values(tmp_path):
    store = Store(tmp_path / "db.sqlite")
    series = [("main", "probe.accuracy", 0, 0.2), ("main", "probe.accuracy", 5, NAN),
              ("main", "probe.accuracy", 10, 0.7)]
    store.write(ONE, CellResult(ONE.id, "complete", series=series,
                                finals={"probe.accuracy": 0.7}), {})
    two = [("ref", "knn.accuracy", 0, 0.1), ("ref", "knn.accuracy", 4, 0.3),
           ("ref~other", "knn.accuracy", 0, 0.6), ("ref~other", "knn.accuracy", 4, 0.4),
           ("other", "probe.accuracy", 4, 0.9)]
    store.write(TWO, CellResult(TWO.id, "diverged", series=two,
                                finals={"ref/knn.accuracy": 0.3, "ref~other/knn.accuracy": 0.4,
                                        "other/probe.accuracy": 0.9}), {})
    loaded = StoredValues(store, [ONE, TWO, GONE])
    yield loaded
    store.close()


def test_status_and_missing_cells(values):
    assert [values.status(c) for c in (ONE, TWO, GONE)] == ["complete", "diverged", "missing"]
    assert values.value(GONE, None, "probe.accuracy") is None


def test_last_is_the_final_and_other_stats_reduce_the_series(values):
    assert values.value(ONE, None, "probe.accuracy") == 0.7
    assert values.value(ONE, "main", "probe.accuracy", "first") == 0.2
    assert values.value(ONE, None, "probe.accuracy", "mean") == pytest.approx(0.45)
    assert values.value(ONE, None, "knn.accuracy") is None  # never recorded


def test_an_arm_reads_its_own_series_then_the_cross_arm_one(values):
    assert values.value(TWO, "ref", "knn.accuracy") == 0.3
    assert values.value(TWO, "other", "knn.accuracy") == 0.4  # ref~other: against ref
    assert values.value(TWO, "other", "knn.accuracy", "max") == 0.6
    assert values.value(TWO, "other", "probe.accuracy") == 0.9
    assert values.value(TWO, None, "ref~other/knn.accuracy", "min") == 0.4  # the key's arm
    assert values.value(TWO, "ref", "probe.accuracy") is None


def test_config_values_come_from_the_varied_keys_then_the_first_arm():
    assert config_value(ONE, "tags.x") == "u" and config_value(ONE, "trial_seed") == 0
    assert config_value(ONE, "optimizer.lr") == 0.1
    assert config_value(TWO, "tags.k") is None  # the first arm has no tag k
    assert config_value(ONE, "optimizer.momentum") is None


def test_field_docs_of_result_keys():
    reg = registry()
    assert field_doc(reg, ONE, "loss.train") is TRAIN_LOSS and TRAIN_LOSS.direction == "lower"
    probe = field_doc(reg, ONE, "probe.accuracy")
    assert probe is reg.get("metrics", "nccc").field_doc("accuracy")
    assert field_doc(reg, TWO, "ref~other/knn.accuracy").direction == "higher"
    assert field_doc(reg, ONE, "probe.nope") is None and field_doc(reg, ONE, "zz.acc") is None
    odd = Cell("d" * 16, "s", "smoke", 0, {"main": {"metrics": [{"name": "gone", "id": "g"}]}},
               {})
    assert field_doc(reg, odd, "g.x") is None  # a metric no plugin registers
