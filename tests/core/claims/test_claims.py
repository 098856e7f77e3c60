"""Claim statistics against hand-computed values, and verdicts of a real trained suite."""

import itertools
import json
import math
import re
import statistics

import numpy as np
import pytest

from geobench.claims.stats import bootstrap_interval, t_interval
from geobench.claims.values import StoredValues
from geobench.claims.verdicts import evaluate
from geobench.cli import main
from geobench.contract.manager import registry
from geobench.records import CellResult
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from geobench.suite.yamlio import SuiteError
from tests.core.suite_text import CLAIMS_BASE

T_975_3 = 3.182446305284263  # Student-t 97.5% quantile, 3 degrees of freedom (tables)
T_975_4 = 2.776445105197793  # ... 4 degrees of freedom

SUITE = "name: claims\n" + CLAIMS_BASE + """\
  metrics: [{name: nccc}]
grid:
  optimizer.lr: [0.05, 0.2]
  tags.x: [u, v]
zip:
  - {optimizer.momentum: [0.0, 0.5], tags.m: [m0, m1]}
seeds: [0, 1, 2, 3]
claims:
CLAIMS
"""


def _suite(tmp_path, claims: str, seeds: str = "[0, 1, 2, 3]"):
    text = SUITE.replace("CLAIMS", claims).replace("seeds: [0, 1, 2, 3]", f"seeds: {seeds}")
    (tmp_path / "c.yaml").write_text(text)
    loaded = load_suite(tmp_path / "c.yaml")
    return loaded, Study(loaded, registry()).cells


def _store(tmp_path, cells, value, status=lambda cell: "complete"):
    store = Store(tmp_path / "db.sqlite")
    for cell in cells:
        v = value(cell)
        store.write(cell, CellResult(cell.id, status(cell), finals={"nccc.accuracy": v},
                                     series=[("main", "nccc.accuracy", 30, v)]), {})
    return store


def _verdicts(loaded, cells, store):
    return {v.claim.id: v for v in evaluate(loaded, cells, StoredValues(store, cells),
                                                 registry())}


def test_student_t_interval_matches_tables():
    mean, low, high = t_interval([1.0, 2.0, 3.0, 4.0])
    half = T_975_3 * statistics.stdev([1, 2, 3, 4]) / 2
    assert mean == 2.5 and low == pytest.approx(2.5 - half, rel=1e-12)
    assert high == pytest.approx(2.5 + half, rel=1e-12)


def test_bootstrap_interval_matches_the_exact_bootstrap_distribution():
    x = [1.0, 2.0, 3.0, 7.0]
    # all 4^4 equally likely resamples: the exact bootstrap distribution of the mean
    means = np.sort([np.mean(r) for r in itertools.product(x, repeat=4)])
    exact_low, exact_high = np.quantile(means, [0.025, 0.975])
    mean, low, high = bootstrap_interval(x)
    assert mean == 3.25
    assert abs(low - exact_low) <= 0.25 and abs(high - exact_high) <= 0.25
    assert bootstrap_interval(x) == (mean, low, high)  # a fixed generator
    assert bootstrap_interval([2.0] * 5)[1:] == (2.0, 2.0)


def test_paired_effect_interval_and_verdicts_from_known_values(tmp_path):
    claims = """\
  - {id: up, statement: a, metric: nccc.accuracy, compare: {key: optimizer.lr, a: 0.2, b: 0.05},
     expect: "a > b", where: {tags.x: u, tags.m: m0}}
  - {id: down, statement: b, metric: nccc.accuracy, compare: {key: optimizer.lr, a: 0.2,
     b: 0.05}, expect: "a < b", where: {tags.x: u, tags.m: m0}}
  - {id: wide, statement: c, metric: nccc.accuracy, compare: {key: optimizer.lr, a: 0.2,
     b: 0.05}, expect: "a > b", margin: 1.0, where: {tags.x: u, tags.m: m0}}
  - {id: one, statement: d, metric: nccc.accuracy, expect: "> 0.5", where: {optimizer.lr: 0.05}}
  - {id: ratio, statement: e, metric: nccc.accuracy, compare: {key: tags.m, a: m1, b: m0},
     expect: "a > b", scale: log, where: {optimizer.lr: 0.05, tags.x: u}}
"""
    loaded, cells = _suite(tmp_path, claims)
    # d = value(lr 0.2) - value(lr 0.05) = 1, 2, 3, 4 for trial seeds 0..3
    value = {0.05: 0.0, 0.2: 1.0}

    def val(cell):
        base = value[cell.varied["optimizer.lr"]] * (cell.trial_seed + 1)
        return base + (2.0 if cell.varied["tags.m"] == "m1" else 1.0) \
            + (0.5 if cell.varied["tags.x"] == "v" else 0.0)

    store = _store(tmp_path, cells, val)
    got = _verdicts(loaded, cells, store)
    half = T_975_3 * statistics.stdev([1, 2, 3, 4]) / 2  # 2.054
    assert got["up"].n == 4 and got["up"].effect == pytest.approx(2.5)
    assert (got["up"].ci_low, got["up"].ci_high) == pytest.approx((2.5 - half, 2.5 + half))
    assert got["up"].verdict == "holds"  # 0.446 > 0
    assert got["down"].verdict == "fails"
    assert got["wide"].verdict == "inconclusive"  # the interval contains the margin 1
    # one-sample: lr 0.05 values are 1.0 / 2.0 (m0/m1) + 0.5 (x = v): 16 cells, all > 0.5,
    # four per trial seed, averaged per trial seed (the unit): n = 4; the same four in every
    # seed, so the seeds' means do not spread: no test
    assert (got["one"].n, got["one"].pairs) == (4, 16) and got["one"].verdict == "degenerate"
    assert got["one"].effect == pytest.approx(statistics.fmean(
        [val(c) - 0.5 for c in cells if c.varied["optimizer.lr"] == 0.05]))
    # log ratio m1/m0 = log 2 in every pair: a zero-width interval, no test
    assert got["ratio"].n == 4 and got["ratio"].effect == pytest.approx(math.log(2))
    assert (got["ratio"].verdict, got["ratio"].degenerate) == (
        "degenerate", "zero spread: every trial seed's d is 0.693 (a = 2, b = 1 in every unit)")
    assert not got["ratio"].counted and got["ratio"].verdict_holm is None


def test_where_lists_select_any_value_and_where_maps_are_a_union(tmp_path):
    claims = """\
  - {id: any_lr, statement: a, metric: nccc.accuracy, expect: "> 0",
     where: {optimizer.lr: [0.05, 0.2], tags.x: u, tags.m: m0}}
  - {id: union, statement: b, metric: nccc.accuracy, expect: "> 0",
     where: [{optimizer.lr: 0.2, tags.x: u}, {tags.m: m1, tags.x: u}]}
  - {id: paired, statement: c, metric: nccc.accuracy, compare: {key: optimizer.lr, a: 0.2,
     b: 0.05}, expect: "a > b", where: {tags.x: u, tags.m: [m0, m1]}}
"""
    loaded, cells = _suite(tmp_path, claims)

    def val(cell):  # lr 0.05 -> 1, lr 0.2 -> 3; m1 adds 10; x = v adds 100; seed s adds s
        return ({0.05: 1.0, 0.2: 3.0}[cell.varied["optimizer.lr"]]
                + (10.0 if cell.varied["tags.m"] == "m1" else 0.0)
                + (100.0 if cell.varied["tags.x"] == "v" else 0.0) + cell.trial_seed)

    got = _verdicts(loaded, cells, _store(tmp_path, cells, val))
    # any_lr: per seed s the mean of (1 + s) and (3 + s) = 2 + s, two cells per seed
    assert (got["any_lr"].n, got["any_lr"].pairs) == (4, 8)
    assert got["any_lr"].effect == pytest.approx(statistics.fmean([2 + s for s in range(4)]))
    # union, x = u: {lr 0.2, m0} = 3 + s, {lr 0.2, m1} = 13 + s (selected by both maps:
    # counted once), {lr 0.05, m1} = 11 + s -> per seed mean (27 + 3 s) / 3 = 9 + s
    assert (got["union"].n, got["union"].pairs) == (4, 12)
    assert got["union"].effect == pytest.approx(statistics.fmean([9 + s for s in range(4)]))
    # paired over m0 and m1: lr 0.2 minus lr 0.05 is 2 in every pair
    assert (got["paired"].n, got["paired"].pairs) == (4, 8)
    assert got["paired"].effect == pytest.approx(2.0)
    assert got["paired"].verdict == "degenerate"  # no spread: no test


def test_stat_pairs_compare_two_reductions_of_one_series(tmp_path):
    claims = """\
  - {id: fell, statement: a, metric: nccc.accuracy, compare: {stat: [last, first]},
     expect: "a < b", where: {optimizer.lr: 0.05, tags.x: u, tags.m: m0}}
  - {id: fell_log, statement: b, metric: nccc.accuracy, compare: {stat: [last, max]},
     expect: "a < b", scale: log, where: {optimizer.lr: 0.05, tags.x: u, tags.m: m0}}
"""
    loaded, cells = _suite(tmp_path, claims)
    store = Store(tmp_path / "db.sqlite")
    for cell in cells:  # series NaN, 8, 4 + s, 2: first (finite) 8, max 8, last 2
        s = cell.trial_seed
        series = [("main", "nccc.accuracy", t, v)
                  for t, v in ((0, math.nan), (10, 8.0), (20, 4.0 + s), (30, 2.0))]
        store.write(cell, CellResult(cell.id, "complete", finals={"nccc.accuracy": 2.0},
                                     series=series), {})
    got = _verdicts(loaded, cells, store)
    assert (got["fell"].n, got["fell"].effect) == (4, pytest.approx(-6.0))
    assert got["fell"].ci_low == pytest.approx(-6.0) and got["fell"].verdict == "degenerate"
    assert got["fell_log"].effect == pytest.approx(math.log(2.0 / 8.0))


def test_a_compare_needs_exactly_one_form(tmp_path):
    bad = """\
  - {id: two, statement: a, metric: nccc.accuracy, compare: {stat: [last, first],
     key: optimizer.lr, a: 0.2, b: 0.05}, expect: "a < b"}
"""
    with pytest.raises(SuiteError, match="give one of"):
        _suite(tmp_path, bad)
    same = """\
  - {id: same, statement: a, metric: nccc.accuracy, compare: {stat: [last, last]},
     expect: "a < b"}
"""
    with pytest.raises(SuiteError, match="two different"):
        _suite(tmp_path, same)
    both = """\
  - {id: both, statement: a, metric: nccc.accuracy, compare: {stat: [last, first]},
     stat: max, expect: "a < b"}
"""
    with pytest.raises(SuiteError, match="leave out 'stat'"):
        _suite(tmp_path, both)


def test_excluded_cells_are_counted_and_few_pairs_are_insufficient(tmp_path):
    claims = """\
  - {id: up, statement: a, metric: nccc.accuracy, compare: {key: optimizer.lr, a: 0.2, b: 0.05},
     expect: "a > b", where: {tags.x: u, tags.m: m0}}
"""
    loaded, cells = _suite(tmp_path, claims)
    bad = {0, 1}  # the lr 0.2 cells of trial seeds 0 and 1 diverged

    def status(cell):
        return "diverged" if cell.trial_seed in bad and cell.varied["optimizer.lr"] == 0.2 \
            else "complete"

    store = _store(tmp_path, cells, lambda c: c.varied["optimizer.lr"] + c.trial_seed, status)
    v = _verdicts(loaded, cells, store)["up"]
    assert (v.n, v.excluded, v.verdict) == (2, 2, "insufficient")
    assert v.effect == pytest.approx(0.15)


def test_claims_with_unknown_keys_or_arms_are_suite_errors(tmp_path):
    for claim, words in [
        ("{id: a, statement: s, metric: m.f, expect: '> 0', where: {head.nope: 1, optimzer.lr: 2}}",
         "claims[0].where.optimzer.lr: 'optimzer.lr' is not a run-spec key"),
        ("{id: a, statement: s, metric: m.f, expect: 'a > b'}", "give 'compare'"),
        ("{id: a, statement: s, metric: m.f, expect: '> 0', compare: {arm: [x, y]}}",
         "is one-sample"),
        ("{id: a-b, statement: s, metric: m.f, expect: '> 0'}", "claims[0].id"),
        ("{id: a, statement: s, metric: m.f, expect: '> 0', where: [{tags.x: u}, {optimzer.lr: 1}]}",  # noqa: E501
         "claims[0].where[1].optimzer.lr"),
        ("{id: a, statement: s, metric: m.f, expect: '> 0', where: []}",
         "claims[0].where: a list of 'where' maps needs at least one"),
        ("{id: a, statement: s, metric: m.f, expect: '> 0', where: [{tags.x: u}, {}]}",
         "claims[0].where[1]: an alternative of 'where' needs at least one key"),
        ("{id: a, statement: s, metric: m.f, expect: 'more'}", "claims[0].expect"),
    ]:
        with pytest.raises(SuiteError, match=words.replace("[", r"\[").replace("]", r"\]")):
            _suite(tmp_path, "  - " + claim)


TRAINED = """\
  - {id: loss_falls, statement: the final training loss is below the first, metric: loss.train,
     compare: {key: train.steps, a: 30, b: 0}, expect: "a < b"}
  - {id: loss_rises, statement: the final training loss is above the first, metric: loss.train,
     compare: {key: train.steps, a: 30, b: 0}, expect: "a > b"}
"""


def test_claims_command_on_a_trained_suite(tmp_path, monkeypatch, capsys):
    # the last training loss of a 30-step run against the first: stat 'first' of the same
    # run would do too; here the paired form compares 30 steps with the untrained step 0
    text = SUITE.replace("CLAIMS", TRAINED.replace("metric: loss.train",
                                                   "metric: loss.train, stat: last"))
    text = text.replace("  tags.x: [u, v]\n", "  train.steps: [30, 1]\n").replace(
        "zip:\n  - {optimizer.momentum: [0.0, 0.5], tags.m: [m0, m1]}\n", "")
    text = text.replace("a: 30, b: 0", "a: 30, b: 1").replace("seeds: [0, 1, 2, 3]",
                                                             "seeds: 5")
    text = text.replace("  optimizer.lr: [0.05, 0.2]\n", "")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.yaml").write_text(text)
    assert main(["run", "t.yaml", "--quiet"]) == 0
    capsys.readouterr()
    assert main(["claims", "t.yaml", "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["id"] for r in rows] == ["loss_falls", "loss_rises"]
    assert tuple(r["verdict"] for r in rows) == ("holds", "fails")
    assert rows[0]["n"] == 5
    assert set(rows[0]) >= {"id", "source", "statement", "metric", "effect", "ci_low",
                            "ci_high", "n", "excluded", "verdict"}
    md = (tmp_path / "results" / "leaderboards" / "claims.md").read_text()
    assert md.split("\n\n")[1] == "## Claims"  # the claims come first


def test_a_claim_on_an_unmeasured_metric_or_field_is_a_suite_error(tmp_path):
    for metric, words in [("ncc.accuracy", "no metric with id 'ncc' in profile 'smoke' "
                                           "(did you mean 'nccc'?)"),
                          ("nccc.acuracy", "metric 'nccc' has no field 'acuracy' "
                                           "(did you mean 'accuracy'?)")]:
        claim = f"  - {{id: a, statement: s, metric: {metric}, expect: '> 0'}}"
        with pytest.raises(SuiteError, match=re.escape(f"claims[0].metric: claim 'a': {words}")):
            _suite(tmp_path, claim)


def test_a_pipe_in_a_statement_does_not_split_the_table_row():
    from geobench.claims.claims_table import claims_table
    from geobench.claims.verdicts import Verdict
    from geobench.suite.schema import Claim

    claim = Claim(id="k", statement="max|λ(K)| small", metric="m.f", expect="< 1e-9")
    row = claims_table([Verdict(claim, -1.0, -2.0, -0.5, 5, 5, 0, 0, "holds")]).splitlines()[2]
    assert len(re.findall(r"(?<!\\)\|", row)) == 9  # 8 cells: 9 unescaped separators
    assert "max\\|λ(K)\\| small" in row
