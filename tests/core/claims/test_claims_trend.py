"""The trend form of a claim: per trial seed (and group of other grid values) the slope or
Spearman's rho of a metric against a config key, tested against hand-computed fits."""

import math
import statistics

import numpy as np
import pytest

from geobench.claims.stats import t_interval, trend_fit
from geobench.claims.values import StoredValues
from geobench.claims.verdicts import evaluate
from geobench.contract.manager import registry
from geobench.records import CellResult
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from geobench.suite.yamlio import SuiteError
from tests.core.suite_text import CLAIMS_BASE

SUITE = "name: trends\n" + CLAIMS_BASE + """\
  metrics: [{name: nccc}]
grid:
  optimizer.lr: [0.01, 0.1, 1.0]
  tags.x: [u, v]
seeds: [0, 1, 2, 3]
claims:
CLAIMS
"""
LRS = [0.01, 0.1, 1.0]


def _suite(tmp_path, claims: str):
    (tmp_path / "t.yaml").write_text(SUITE.replace("CLAIMS", claims))
    loaded = load_suite(tmp_path / "t.yaml")
    return loaded, Study(loaded, registry()).cells


def _verdicts(tmp_path, loaded, cells, value):
    store = Store(tmp_path / "db.sqlite")
    for cell in cells:
        v = value(cell)
        store.write(cell, CellResult(cell.id, "complete", finals={"nccc.accuracy": v},
                                     series=[("main", "nccc.accuracy", 30, v)]), {})
    return {v.claim.id: v for v in evaluate(loaded, cells, StoredValues(store, cells),
                                            registry())}


def test_trend_fit_against_closed_forms():
    assert trend_fit([1, 2, 3], [2, 4, 6], "slope") == pytest.approx(2.0)
    assert trend_fit([1, 2, 3, 4], [1, 3, 2, 4], "slope") == pytest.approx(0.8)  # 8 / 10
    # Spearman: 1 - 6 Σd² / (n(n² - 1)), one swap of three: 1 - 12/24
    assert trend_fit([1, 2, 3], [1, 3, 2], "spearman") == pytest.approx(0.5)
    assert math.isnan(trend_fit([1, 1, 1], [1, 2, 3], "slope"))
    assert math.isnan(trend_fit([1, 2, 3], [5, 5, 5], "spearman"))


def test_slope_of_log_x_and_of_log_y_per_seed(tmp_path):
    claims = """\
  - {id: up, statement: a, metric: nccc.accuracy, trend: {key: optimizer.lr, x: log},
     expect: "> 0"}
  - {id: exp, statement: b, metric: nccc.accuracy, trend: {key: optimizer.lr}, scale: log,
     expect: "> 1", where: {tags.x: u}}
"""
    loaded, cells = _suite(tmp_path, claims)
    # up: value = (s + 1) ln(lr) + (x = v: 5): slope (s + 1) in both groups of seed s
    # exp: value = exp(2 (s + 1) lr) at x = u: log-value slope 2 (s + 1) against lr
    def value(cell):
        s, lr, x = cell.trial_seed, cell.varied["optimizer.lr"], cell.varied["tags.x"]
        if x == "u":
            return math.exp(2 * (s + 1) * lr)
        return (s + 1) * math.log(lr) + 5.0

    got = _verdicts(tmp_path, loaded, cells, value)
    # up mixes the two groups of a seed: u is exp(2(s+1) lr), v is (s+1) ln lr + 5
    per_seed = []
    for s in range(4):
        fits = [np.polyfit(np.log(LRS), [math.exp(2 * (s + 1) * lr) for lr in LRS], 1)[0],
                np.polyfit(np.log(LRS), [(s + 1) * math.log(lr) + 5 for lr in LRS], 1)[0]]
        per_seed.append(statistics.fmean(fits))
    mean, low, high = t_interval(per_seed)
    assert (got["up"].n, got["up"].pairs) == (4, 8)
    assert got["up"].effect == pytest.approx(mean)
    assert (got["up"].ci_low, got["up"].ci_high) == pytest.approx((low, high))
    # exp: slopes 2, 4, 6, 8 minus c = 1 (the threshold is not logged in a trend)
    mean, low, high = t_interval([1.0, 3.0, 5.0, 7.0])
    assert got["exp"].effect == pytest.approx(mean)
    assert (got["exp"].ci_low, got["exp"].ci_high) == pytest.approx((low, high))
    assert got["exp"].verdict == "inconclusive"  # [-0.11, 8.1] contains 0
    assert "slope over optimizer.lr" in got["exp"].units[0].config


def test_spearman_and_points_left_out(tmp_path):
    claims = """\
  - {id: rank, statement: a, metric: nccc.accuracy,
     trend: {key: optimizer.lr, fit: spearman}, expect: "> 0", where: {tags.x: u}}
"""
    loaded, cells = _suite(tmp_path, claims)

    def value(cell):  # seed 3 swaps the last two; seed 0 has a NaN point
        s, lr = cell.trial_seed, cell.varied["optimizer.lr"]
        if s == 0 and lr == 0.1:
            return math.nan
        order = {0.01: 1.0, 0.1: 3.0, 1.0: 2.0} if s == 3 else {0.01: 1.0, 0.1: 2.0, 1.0: 3.0}
        return order[lr]

    got = _verdicts(tmp_path, loaded, cells, value)["rank"]
    assert (got.n, got.excluded) == (3, 1)  # seed 0: 2 values left, fewer than 3
    assert got.effect == pytest.approx(statistics.fmean([1.0, 1.0, 0.5]))
    left = next(u for u in got.units if u.trial_seed == 0)
    assert "fewer than 3 values" in left.excluded


@pytest.mark.parametrize("claim, message", [
    ("""{id: t, statement: a, metric: nccc.accuracy, trend: {key: optimizer.lr},
     compare: {key: tags.x, a: u, b: v}, expect: "a > b"}""", "a trend is one-sample"),
    ("""{id: t, statement: a, metric: nccc.accuracy, trend: {key: tags.x}, expect: "> 0"}""",
     "must be a number"),
    ("""{id: t, statement: a, metric: nccc.accuracy, trend: {key: optimizer.lr},
     expect: "> 0", where: {optimizer.lr: [0.01, 0.1]}}""", "no profile has 3 values"),
    ("""{id: t, statement: a, metric: nccc.accuracy, trend: {key: optimizer.lr},
     expect: "> 0", ci: rate}""", "ci: rate"),
])
def test_bad_trend_claims_are_one_line_errors(tmp_path, claim, message):
    with pytest.raises(SuiteError, match=message) as err:
        _suite(tmp_path, "  - " + claim + "\n")
    assert "\n" not in str(err.value).strip()


def test_trend_of_the_difference_of_two_arms(tmp_path):
    text = SUITE.replace("CLAIMS", """\
  - {id: excess, statement: a, metric: nccc.accuracy, trend: {key: optimizer.lr, x: log},
     compare: {arm: [p, q]}, expect: "> 0", where: {tags.x: u}}
""").replace("grid:", "arms:\n  p: {objective: {name: toy_ce}}\n"
                          "  q: {objective: {name: toy_ce}}\ngrid:")
    (tmp_path / "t.yaml").write_text(text)
    loaded = load_suite(tmp_path / "t.yaml")
    cells = Study(loaded, registry()).cells
    store = Store(tmp_path / "db.sqlite")
    for cell in cells:  # p − q = (s + 1) ln(lr): slope s + 1; q alone rises faster
        s, lr = cell.trial_seed, cell.varied["optimizer.lr"]
        q = 10 * math.log(lr)
        values = {"p/nccc.accuracy": q + (s + 1) * math.log(lr), "q/nccc.accuracy": q}
        store.write(cell, CellResult(cell.id, "complete", finals=values, series=[]), {})
    got = evaluate(loaded, cells, StoredValues(store, cells), registry())[0]
    assert got.n == 4 and got.effect == pytest.approx(2.5)
    assert got.units[0].arm == "p-q"


def test_a_profile_with_fewer_than_three_values_does_not_have_the_trend(tmp_path):
    text = SUITE.replace("CLAIMS", """\
  - {id: up, statement: a, metric: nccc.accuracy, trend: {key: optimizer.lr}, expect: "> 0"}
profiles:
  smoke: {}
  small: {grid: {optimizer.lr: [0.01, 0.1], tags.x: [u]}}
""")
    (tmp_path / "t.yaml").write_text(text)
    loaded = load_suite(tmp_path / "t.yaml")
    cells = Study(loaded, registry(), "small").cells
    got = evaluate(loaded, cells, StoredValues(Store(tmp_path / "db.sqlite"), cells),
                   registry())[0]
    assert got.verdict == "not in this profile"
    assert all(u.absent for u in got.units) and len(got.units) == 4
