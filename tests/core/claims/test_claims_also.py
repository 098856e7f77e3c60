"""Conjunction claims (``also``): every part against hand-computed values, the combined
verdict, the table and the JSON."""

import json
import math
import statistics

import pytest

from geobench.claims.claims_table import claims_table
from geobench.claims.registration import claim_digests
from geobench.claims.values import StoredValues
from geobench.claims.verdicts import NOT_IN_PROFILE, Verdict, combined, evaluate
from geobench.cli import main
from geobench.contract.manager import registry
from geobench.records import CellResult
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from geobench.suite.schema import Claim
from geobench.suite.yamlio import SuiteError
from tests.core.suite_text import CLAIMS_BASE

T_975_3 = 3.182446305284263  # Student-t 97.5% quantile, 3 degrees of freedom (tables)

SUITE = "name: also\n" + CLAIMS_BASE + """\
  metrics: [{name: nccc}, {name: knn}]
grid:
  optimizer.lr: [0.05, 0.2]
seeds: SEEDS
claims:
CLAIMS
"""


def _main(also: str, expect: str = "> 0.7") -> str:
    """A one-sample claim on nccc.accuracy at lr 0.05 with ``also`` conditions."""
    return (f"  - {{id: c, statement: s, metric: nccc.accuracy, expect: '{expect}', "
            f"where: {{optimizer.lr: 0.05}}, also: [{also}]}}\n")


def _suite(tmp_path, claims: str, seeds: str = "[0, 1, 2, 3]"):
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "a.yaml").write_text(SUITE.replace("CLAIMS", claims).replace("SEEDS", seeds))
    loaded = load_suite(tmp_path / "a.yaml")
    return loaded, Study(loaded, registry()).cells


def _nccc(cell) -> float:  # 0.8 + 0.01 s at lr 0.05; lr 0.2 cells far off (not selected)
    return (0.8 if cell.varied["optimizer.lr"] == 0.05 else -5.0) + 0.01 * cell.trial_seed


def _knn(cell) -> float:  # 0.5 + 0.02 s at lr 0.05
    return (0.5 if cell.varied["optimizer.lr"] == 0.05 else 9.0) + 0.02 * cell.trial_seed


def _store(tmp_path, cells, knn=_knn):
    """The cells stored as a run of ``a.yaml`` stores them (with its claims' digests)."""
    store = Store(tmp_path / "db.sqlite")
    claims = claim_digests(load_suite(tmp_path / "a.yaml").suite)
    for cell in cells:
        finals = {"nccc.accuracy": _nccc(cell), "knn.accuracy": knn(cell)}
        series = [("main", k, 30, v) for k, v in finals.items()]
        store.write(cell, CellResult(cell.id, "complete", finals=finals, series=series,
                                     claims=claims), {})
    return store


def _verdict(tmp_path, claims: str, seeds: str = "[0, 1, 2, 3]", knn=_knn) -> Verdict:
    loaded, cells = _suite(tmp_path, claims, seeds)
    (v,) = evaluate(loaded, cells, StoredValues(_store(tmp_path, cells, knn), cells),
                     registry())
    return v


def _t(d: list[float]) -> tuple[float, float, float]:
    """Mean and Student-t 95% interval of four values, by hand."""
    mean, half = statistics.fmean(d), T_975_3 * statistics.stdev(d) / 2
    return mean, mean - half, mean + half


MAIN = _t([0.8 + 0.01 * s - 0.7 for s in range(4)])  # 0.115 [0.0945, 0.1355]: holds


def test_both_parts_hold(tmp_path):
    v = _verdict(tmp_path, _main("{metric: knn.accuracy, expect: '> 0.3'}"))
    main_part, knn = v.parts
    assert (v.effect, v.ci_low, v.ci_high) == pytest.approx(MAIN) and v.n == 4
    assert (knn.effect, knn.ci_low, knn.ci_high) == pytest.approx(
        _t([0.5 + 0.02 * s - 0.3 for s in range(4)]))  # 0.23 [0.189, 0.271]
    assert (main_part.verdict, knn.verdict, v.verdict) == ("holds", "holds", "holds")
    assert (knn.claim.metric, knn.claim.expect, knn.n) == ("knn.accuracy", "> 0.3", 4)


def test_one_failing_part_fails_the_claim(tmp_path):
    v = _verdict(tmp_path, _main("{metric: knn.accuracy, expect: '> 0.6'}"))
    # knn - 0.6 = -0.1, -0.08, -0.06, -0.04: -0.07 [-0.111, -0.029]
    assert v.parts[1].effect == pytest.approx(-0.07)
    assert v.parts[1].ci_high == pytest.approx(_t([-0.1, -0.08, -0.06, -0.04])[2])
    assert [p.verdict for p in v.parts] == ["holds", "fails"] and v.verdict == "fails"
    # a failing part outweighs an inconclusive one: main 0.8 + 0.01 s - 0.815 straddles 0
    v = _verdict(tmp_path / "b", _main("{metric: knn.accuracy, expect: '> 0.6'}", "> 0.815"))
    assert [p.verdict for p in v.parts] == ["inconclusive", "fails"] and v.verdict == "fails"


def test_an_inconclusive_part_makes_the_claim_inconclusive(tmp_path):
    # knn - 0.53 = -0.03, -0.01, 0.01, 0.03: 0 with an interval around it
    v = _verdict(tmp_path, _main("{metric: knn.accuracy, expect: '> 0.53'}"))
    assert v.parts[1].effect == pytest.approx(0.0, abs=1e-12)
    assert [p.verdict for p in v.parts] == ["holds", "inconclusive"]
    assert v.verdict == "inconclusive"
    # its margin and scale are its own: log(knn / 0.25) > margin 0.5 (log 2 .. log 2.24)
    v = _verdict(tmp_path / "b", _main("{metric: knn.accuracy, expect: '> 0.25', scale: log, "
                                 "margin: 0.5}, {metric: knn.accuracy, expect: '< 0.6'}"))
    d = [math.log((0.5 + 0.02 * s) / 0.25) for s in range(4)]
    assert (v.parts[1].effect, v.parts[1].ci_low) == pytest.approx(_t(d)[:2])
    assert [p.verdict for p in v.parts] == ["holds", "holds", "holds"]


def test_too_few_seeds_are_refused_and_too_few_values_are_insufficient(tmp_path):
    with pytest.raises(SuiteError, match=r"claim 'c' cannot be decided in profile 'smoke': "
                                         r"with 2 trial seeds .* needs at least 3 trial seeds"):
        _verdict(tmp_path, _main("{metric: knn.accuracy, expect: '> 0.3'}"), seeds="[0, 1]")
    # knn NaN on trial seeds 0 and 1: excluded in its part only, which has 2 seeds left
    nan = _verdict(tmp_path / "nan", _main("{metric: knn.accuracy, expect: '> 0.3'}"),
                   knn=lambda c: math.nan if c.trial_seed < 2 else _knn(c))
    assert [(p.n, p.excluded, p.verdict) for p in nan.parts] == [
        (4, 0, "holds"), (2, 2, "insufficient")]
    assert (nan.n, nan.excluded, nan.verdict) == (4, 0, "insufficient")


def test_combined_verdict_rules():
    assert combined(["holds", "holds"]) == "holds"
    assert combined(["holds", "inconclusive"]) == "inconclusive"
    assert combined(["inconclusive", "fails"]) == "fails"
    assert combined(["fails", "insufficient", "holds"]) == "fails"  # one refuted part suffices
    assert combined(["insufficient", "holds"]) == "insufficient"
    # a failing part is never hidden by one the profile cannot test
    assert combined(["holds", "fails", NOT_IN_PROFILE]) == "fails"
    assert combined([NOT_IN_PROFILE, "holds", "insufficient"]) == NOT_IN_PROFILE


def test_paired_parts_on_a_paired_claim(tmp_path):
    pair = "compare: {key: optimizer.lr, a: 0.05, b: 0.2}"
    claims = (f"  - {{id: p, statement: s, metric: nccc.accuracy, expect: 'a > b', {pair}, "
              f"also: [{{metric: knn.accuracy, expect: 'a < b', {pair}}}]}}\n")
    v = _verdict(tmp_path, claims)
    # nccc: (0.8 + 0.01 s) - (-5 + 0.01 s) = 5.8; knn: (0.5 + 0.02 s) - (9 + 0.02 s) = -8.5
    assert [(p.effect, p.n, p.verdict) for p in v.parts] == [
        (pytest.approx(5.8), 4, "holds"), (pytest.approx(-8.5), 4, "holds")]
    # every pair differs by the same amount: the parts hold on zero-width intervals, no test
    assert (v.verdict, v.degenerate) == ("degenerate",
                                         "part 1: zero spread: every trial seed's d is 5.8")


def test_malformed_parts_are_refused_in_one_line(tmp_path):
    with pytest.raises(SuiteError, match=r"claims\[0\]\.also\[0\]: expect 'a > b' compares "
                                         r"a and b: give 'compare'") as err:
        _suite(tmp_path, _main("{metric: knn.accuracy, expect: 'a > b'}"))
    assert "\n" not in str(err.value)
    with pytest.raises(SuiteError, match=r"also\[0\]\.scal: unknown field"):
        _suite(tmp_path, _main("{metric: knn.accuracy, expect: '> 0.3', scal: log}"))
    with pytest.raises(SuiteError, match="scale: log needs a positive threshold"):
        _suite(tmp_path, _main("{metric: knn.accuracy, expect: '> 0', scale: log}"))


def test_the_table_lists_every_part(tmp_path):
    v = _verdict(tmp_path, _main("{metric: knn.accuracy, expect: '> 0.3'}"))
    claim, *parts = [[c.strip() for c in r.split("|")[1:-1]]
                     for r in claims_table([v]).splitlines()[2:5]]
    assert claim[:3] == ["`c`", "s", "all 2 parts below"] and claim[6] == "**holds**"
    assert parts[0][2:5] == ["1. `nccc.accuracy` > 0.7", "+0.115 [+0.0945, +0.136]", "4"]
    assert parts[1][2:5] == ["2. `knn.accuracy` > 0.3", "+0.23 [+0.189, +0.271]", "4"]
    assert [p[6] for p in parts] == ["holds", "holds"]


def test_a_claim_without_also_renders_as_before():
    claim = Claim(id="k", statement="s", metric="m.f", expect="< 1e-9")
    v = Verdict(claim, -1.0, -2.0, -0.5, 5, 5, 1, 0, "holds", verdict_holm="holds")
    row = [c.strip() for c in claims_table([v]).splitlines()[2].split("|")[1:-1]]
    assert row == ["`k`", "s", "`m.f` < 1e-9", "-1 [-2, -0.5]", "5, 1 excluded", "—",
                   "**holds**", "holds"]
    assert "parts" not in v.as_json() and list(v.as_json()) == [
        "id", "source", "statement", "metric", "expect", "scale", "margin", "ci", "kind",
        "posthoc", "degenerate", "revised", "revised_from", "posthoc_declared",
        "effect", "ci_low", "ci_high", "n", "pairs", "excluded", "missing", "p_holds",
        "p_fails", "p_value", "verdict", "verdict_holm", "verdict_paper", "scales"]


def test_claims_json_has_every_part(tmp_path, capsys):
    loaded, cells = _suite(tmp_path, _main("{metric: knn.accuracy, expect: '> 0.6'}"))
    _store(tmp_path, cells).close()
    assert main(["claims", str(tmp_path / "a.yaml"), "--store", str(tmp_path / "db.sqlite"),
                 "--json"]) == 0
    row = json.loads(capsys.readouterr().out)
    assert (row["metric"], row["effect"], row["n"]) == ("nccc.accuracy", pytest.approx(0.115), 4)
    assert row["verdict"] == "fails"
    keys = ["metric", "stat", "expect", "scale", "margin", "where", "ci", "effect", "ci_low",
            "ci_high", "n", "pairs", "excluded", "missing", "p_holds", "p_fails", "p_value",
            "verdict"]
    assert [list(p) for p in row["parts"]] == [keys, keys]
    assert [(p["metric"], p["expect"], p["verdict"]) for p in row["parts"]] == [
        ("nccc.accuracy", "> 0.7", "holds"), ("knn.accuracy", "> 0.6", "fails")]
    assert row["parts"][1]["effect"] == pytest.approx(-0.07)
    assert row["parts"][0]["ci_low"] == row["ci_low"]


def test_a_part_naming_an_unmeasured_field_or_unknown_arm_is_refused_at_load(tmp_path):
    with pytest.raises(SuiteError, match=r"claims\[0\]\.also\[0\]\.metric: .*has no field "
                                         r"'acuracy'"):
        _suite(tmp_path, _main("{metric: knn.acuracy, expect: '> 0.3'}"))
    with pytest.raises(SuiteError, match=r"claims\[0\]\.also\[0\]: claim 'c' names arm 'x'"):
        _suite(tmp_path, _main("{metric: x/knn.accuracy, expect: '> 0.3'}"))


def test_a_part_with_its_own_cells(tmp_path):
    v = _verdict(tmp_path, _main("{metric: nccc.accuracy, expect: '> 0.7', "
                                 "where: {optimizer.lr: 0.2}}"))
    # lr 0.05: 0.8 + 0.01 s - 0.7 holds; lr 0.2: -5 + 0.01 s - 0.7 = -5.685 on average, fails
    assert [(p.effect, p.verdict) for p in v.parts] == [
        (pytest.approx(0.115), "holds"), (pytest.approx(-5.685), "fails")]
    assert v.verdict == "fails"
    rows = claims_table([v]).splitlines()[3:5]
    assert "| 1. `nccc.accuracy` > 0.7 " in rows[0]
    assert "| 2. `nccc.accuracy` > 0.7 at optimizer.lr=0.2 " in rows[1]
    assert [p["where"] for p in v.as_json()["parts"]] == [{"optimizer.lr": 0.05},
                                                          {"optimizer.lr": 0.2}]
