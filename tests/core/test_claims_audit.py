"""What makes a claim auditable: exact rate intervals, p-values and Holm's correction against
scipy and hand computation, post hoc marking, and every published number recomputed from the
per-unit CSV alone by an independent script."""

import json
import math

import pytest
from scipy import stats

from geobench.cli import main
from geobench.contract.plugins import registry
from geobench.report.claims import Verdict, apply_holm, evaluate, method_of
from geobench.report.claims_report import claims_table, part_text, summary_line
from geobench.report.forest import forest_plot, forest_points
from geobench.report.stats import binomial_p_values, clopper_pearson, holm, t_p_values
from geobench.report.values import StoredValues
from geobench.run.store import Store
from geobench.suite import expand, load_suite
from geobench.suite.schema import Claim
from geobench.suite.yamlio import SuiteError
from geobench.train.engine import CellResult
from tests.core.suite_text import CLAIMS_BASE

SUITE = "name: audit\n" + CLAIMS_BASE + """\
  metrics: [{name: nccc}]
grid:
  optimizer.lr: [0.05, 0.2]
  tags.x: [u, v]
seeds: SEEDS
claims:
CLAIMS
"""


def _suite(tmp_path, claims: str, seeds: int = 6):
    text = SUITE.replace("CLAIMS", claims).replace("SEEDS", str(seeds))
    (tmp_path / "a.yaml").write_text(text)
    loaded = load_suite(tmp_path / "a.yaml")
    return loaded, expand(loaded, registry())


def _store(tmp_path, cells, value, status=lambda cell: "complete"):
    """Each cell's nccc.accuracy series: value(cell, 'first') at step 0, value(cell, 'last')
    at step 30."""
    store = Store(tmp_path / "db.sqlite")
    for cell in cells:
        first, last = value(cell, "first"), value(cell, "last")
        store.write(cell, CellResult(cell.id, status(cell), finals={"nccc.accuracy": last},
                                     series=[("main", "nccc.accuracy", 0, first),
                                             ("main", "nccc.accuracy", 30, last)]), {})
    return store


def _verdicts(loaded, cells, store):
    return {v.claim.id: v for v in evaluate(loaded, cells, StoredValues(store, cells))}


# --- the statistics against scipy and hand computation ----------------------------------

@pytest.mark.parametrize("k,n", [(0, 5), (0, 10), (3, 10), (7, 9), (10, 10), (1, 1)])
def test_clopper_pearson_is_scipys_exact_interval(k, n):
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    assert clopper_pearson(k, n) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_zero_of_ten_reaches_point_three_one():
    assert clopper_pearson(0, 10)[1] == pytest.approx(0.3085, abs=1e-4)


@pytest.mark.parametrize("k,n,rate", [(0, 5, 0.5), (5, 5, 0.5), (3, 10, 0.5), (8, 10, 0.6),
                                      (2, 7, 0.1)])
def test_binomial_p_values_are_scipys_exact_tests(k, n, rate):
    above, below = binomial_p_values(k, n, rate)
    assert above == pytest.approx(stats.binomtest(k, n, rate, "greater").pvalue, abs=1e-12)
    assert below == pytest.approx(stats.binomtest(k, n, rate, "less").pvalue, abs=1e-12)


def test_binomial_p_values_by_hand():
    # 0 of 5 against 1/2: P(X <= 0) = 1/32; 5 of 5: P(X >= 5) = 1/32
    assert binomial_p_values(0, 5, 0.5) == (1.0, pytest.approx(1 / 32))
    assert binomial_p_values(5, 5, 0.5) == (pytest.approx(1 / 32), 1.0)
    # 1 of 3 against 1/2: P(X >= 1) = 7/8, P(X <= 1) = 1/2
    assert binomial_p_values(1, 3, 0.5) == (pytest.approx(7 / 8), pytest.approx(1 / 2))


def test_t_p_values_by_hand_and_against_scipy():
    # 3 ± √3/2: mean 3, s = 1, n = 4, s/√n = 0.5; at threshold 3 - 0.5 t₀.₉₇₅,₃ the t statistic
    # is the 97.5% point with 3 df, so the p-values are 0.025 and 0.975
    x = [3 + math.sqrt(3) / 2 * s for s in (1, -1, 1, -1)]
    threshold = 3 - 3.182446305284263 * 0.5
    above, below = t_p_values(x, threshold)
    assert above == pytest.approx(0.025, abs=1e-9) and below == pytest.approx(0.975, abs=1e-9)
    y = [0.3, -0.1, 0.7, 0.4, 0.2]
    for alt, got in zip(("greater", "less"), t_p_values(y, 0.05)):
        assert got == pytest.approx(stats.ttest_1samp(y, 0.05, alternative=alt).pvalue)
    assert t_p_values([2.0, 2.0, 2.0], 1.0) == (0.0, 1.0)  # no spread: decided by the side


def test_holm_by_hand():
    # sorted 0.005 < 0.05/4, 0.01 < 0.05/3, then 0.03 >= 0.05/2 stops: 0.04 is not rejected
    assert holm([0.01, 0.04, 0.03, 0.005]) == [True, False, False, True]
    assert holm([0.02, 0.024]) == [True, True]  # 0.02 < 0.025, then 0.024 < 0.05
    assert holm([]) == []


# --- rates, p-values, Holm and post hoc on stored cells ---------------------------------

RATE_CLAIMS = """\
  - {id: rate_one, statement: a, metric: nccc.accuracy, expect: "< 0.5", ci: rate,
     where: {optimizer.lr: 0.05, tags.x: u}}
  - {id: rate_two, statement: b, metric: nccc.accuracy, expect: "> 0.5", ci: rate,
     where: {optimizer.lr: 0.2}}
"""


def test_rates_get_clopper_pearson_over_trial_seeds(tmp_path):
    loaded, cells = _suite(tmp_path, RATE_CLAIMS, seeds=6)

    def val(cell, stat):  # lr 0.05: 0 everywhere; lr 0.2: 1 except x = v of seeds 0 and 1
        if cell.varied["optimizer.lr"] == 0.05:
            return 0.0
        return 0.0 if cell.varied["tags.x"] == "v" and cell.trial_seed < 2 else 1.0

    got = _verdicts(loaded, cells, _store(tmp_path, cells, val))
    one = got["rate_one"]
    # 0 of 6 seeds: [0, 0.459] shifted by c = 0.5; below 0.5: holds, p = 2 P(X <= 0) = 2/64
    low, high = clopper_pearson(0, 6)
    assert (one.method, one.n, one.rate) == ("rate", 6, (0.0, 6))
    assert (one.effect, one.ci_low, one.ci_high) == pytest.approx((-0.5, low - 0.5, high - 0.5))
    assert one.verdict == "holds" and one.p_value == pytest.approx(2 / 64)
    two = got["rate_two"]
    # per-seed rates 0.5, 0.5, 1, 1, 1, 1: k = 5 of 6 (a fractional k when they differ)
    assert two.rate == (5.0, 6) and two.effect == pytest.approx(5 / 6 - 0.5)
    assert (two.ci_low + 0.5, two.ci_high + 0.5) == pytest.approx(clopper_pearson(5, 6))
    assert two.verdict == "inconclusive"
    assert two.p_value == pytest.approx(2 * stats.binomtest(5, 6, 0.5, "greater").pvalue)


def test_a_rate_is_the_default_for_a_declared_0_1_outcome_only():
    one_sample = Claim(id="c", statement="s", metric="m.f", expect="> 0.5")
    assert method_of(one_sample, binary=True) == "rate"
    assert method_of(one_sample, binary=False) == "t"
    paired = Claim(id="c", statement="s", metric="m.f", expect="a > b",
                   compare={"arm": ["a", "b"]})
    assert method_of(paired, binary=True) == "t"
    assert method_of(one_sample.model_copy(update={"ci": "bootstrap"}), binary=True) \
        == "bootstrap"


def test_ci_rate_on_a_paired_claim_is_refused(tmp_path):
    with pytest.raises(SuiteError, match="ci: rate tests one-sample claims") as err:
        _suite(tmp_path, """\
  - {id: r, statement: a, metric: nccc.accuracy, expect: "a > b", ci: rate,
     compare: {key: optimizer.lr, a: 0.2, b: 0.05}}
""")
    assert "\n" not in str(err.value)


def _verdict(cid: str, p: float | None, verdict: str, posthoc: str | None = None) -> Verdict:
    claim = Claim(id=cid, statement="s", metric="m.f", expect="> 0", posthoc=posthoc)
    half = None if p is None else p / 2
    return Verdict(claim, 1.0, 0.5, 1.5, 5, 5, 0, 0, verdict, p_holds=half,
                   p_fails=None if p is None else 1.0)


def test_holm_runs_over_the_pre_registered_claims_only():
    verdicts = [_verdict("a", 0.004, "holds"), _verdict("b", 0.02, "holds"),
                _verdict("c", 0.04, "holds"), _verdict("d", 0.001, "holds", "seen first"),
                _verdict("e", None, "insufficient"), _verdict("f", 0.5, "inconclusive")]
    apply_holm(verdicts)
    # family a, b, c, f (m = 4): 0.004 < 0.0125, 0.02 < 0.0167? no: b and c stay undecided
    assert [v.verdict_holm for v in verdicts] == [
        "holds", "inconclusive", "inconclusive", None, "insufficient", "inconclusive"]
    line = summary_line(verdicts)
    assert "**Pre-registered: 5 claims** — raw: 3 holds / 0 fails / 1 inconclusive / " \
           "1 insufficient" in line
    assert "over the 4 tested): 1 holds / 0 fails / 3 inconclusive / 1 insufficient" in line
    assert line.endswith("**Post hoc: 1** (outside the family): `d` holds.")


def test_a_post_hoc_claim_is_marked_with_its_reason():
    v = _verdict("late", 0.001, "holds", "added after the first run")
    apply_holm([v])
    table = claims_table([v])
    row = [c.strip() for c in table.splitlines()[2].split("|")[1:-1]]
    assert row[-2:] == ["**holds**†", "— (post hoc)"]
    assert "† post hoc, `late`: added after the first run" in table


def test_a_conjunction_has_one_p_value_intersection_union_and_bonferroni(tmp_path):
    loaded, cells = _suite(tmp_path, """\
  - id: both
    statement: a
    metric: nccc.accuracy
    where: {optimizer.lr: 0.05}
    expect: "> 0.5"
    also:
      - {metric: nccc.accuracy, expect: "> 0.5", where: {optimizer.lr: 0.2}}
      - {metric: nccc.accuracy, expect: "< 0.5", where: {optimizer.lr: 0.2}}
""")

    def val(cell, stat):
        return 0.6 + 0.01 * cell.trial_seed + (0.1 * cell.trial_seed ** 0.5
                                               if cell.varied["tags.x"] == "v" else 0.0)

    v = _verdicts(loaded, cells, _store(tmp_path, cells, val))["both"]
    assert [p.verdict for p in v.parts] == ["holds", "holds", "fails"]
    assert v.verdict == "fails"
    assert v.p_holds == max(p.p_holds for p in v.parts)
    assert v.p_fails == pytest.approx(min(1.0, 3 * min(p.p_fails for p in v.parts)))
    assert v.p_value == pytest.approx(min(1.0, 2 * min(v.p_holds, v.p_fails)))


def test_claims_can_select_trial_seeds(tmp_path):
    loaded, cells = _suite(tmp_path, """\
  - {id: early, statement: a, metric: nccc.accuracy, expect: "> 0",
     where: {trial_seed: [0, 1, 2]}}
""")
    v = _verdicts(loaded, cells, _store(tmp_path, cells, lambda c, s: 1.0 + c.trial_seed))
    assert v["early"].n == 3 and v["early"].effect == pytest.approx(2.0)


def test_the_tested_cell_stays_short():
    claim = Claim(id="c", statement="s", metric="alignment_bound.tightness_batch", stat="max",
                  expect="< 1", scale="log", where={"arm": "nscl", "tags.design": "tau=1"})
    part = claim.model_copy(update={"where": {"arm": "nscl",
                                              "tags.design": "B=256 lr~sqrt(B)" * 5}})
    assert part_text(claim, claim) == "`alignment_bound.tightness_batch` max < 1"
    text = part_text(part, claim)
    assert len(text) == 80 and text.endswith("…") and "arm=" not in text


# --- every published number recomputed from the per-unit CSV alone -----------------------

AUDIT_CLAIMS = """\
  - {id: one_sample, statement: a, metric: nccc.accuracy, expect: "> 0.5",
     where: {optimizer.lr: 0.05}}
  - {id: paired, statement: b, metric: nccc.accuracy, expect: "a > b",
     compare: {key: optimizer.lr, a: 0.2, b: 0.05}}
  - {id: ratio, statement: c, metric: nccc.accuracy, expect: "a > b", scale: log,
     compare: {key: tags.x, a: v, b: u}, margin: 0.05}
  - {id: change, statement: d, metric: nccc.accuracy, expect: "a > b",
     compare: {stat: [last, first]}, where: {tags.x: u}}
  - {id: boot, statement: e, metric: nccc.accuracy, expect: "< 2", ci: bootstrap}
  - {id: rate, statement: f, metric: nccc.accuracy, expect: "> 0.5", ci: rate,
     where: {tags.x: v, optimizer.lr: 0.05}}
  - id: conj
    statement: g
    metric: nccc.accuracy
    expect: "> 0.6"
    where: {optimizer.lr: 0.2}
    posthoc: "for the test"
    also:
      - {metric: nccc.accuracy, stat: first, expect: "< 0.6", where: {optimizer.lr: 0.05}}
      - {metric: nccc.accuracy, compare: {key: tags.x, a: v, b: u}, expect: "a < b"}
"""


def test_every_claim_recomputes_from_the_units_csv_alone(tmp_path, capsys, recompute_claims):
    loaded, cells = _suite(tmp_path, AUDIT_CLAIMS, seeds=7)
    noise = [0.13, -0.07, 0.21, 0.02, -0.11, 0.09, 0.05]

    def val(cell, stat):
        s = cell.trial_seed
        if cell.varied["tags.x"] == "v" and cell.varied["optimizer.lr"] == 0.05:
            return float(s % 3 != 0)  # 0/1 outcomes for the rate claim
        lr = 1.0 if cell.varied["optimizer.lr"] == 0.2 else 0.55
        return lr + noise[s] * (0.5 if stat == "first" else 1.0) + 0.03 * s

    status = {cells[3].id: "diverged"}
    store = _store(tmp_path, cells, val, lambda c: status.get(c.id, "complete"))
    store.close()
    Store(tmp_path / "db.sqlite").close()
    args = ["claims", str(tmp_path / "a.yaml"), "--store", str(tmp_path / "db.sqlite")]
    assert main(args + ["--units", "--csv"]) == 0
    (tmp_path / "units.csv").write_text(capsys.readouterr().out)
    assert main(args + ["--json"]) == 0
    published = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    recomputed = recompute_claims.recompute_file(str(tmp_path / "units.csv"))
    checked = 0
    for claim in published:
        for i, part in enumerate(claim.get("parts") or [claim], 1):
            mine = recomputed[(claim["id"], i)]
            assert (mine["method"], mine["n"], mine["verdict"]) == (
                part["ci"] if "ci" in part else part["method"], part["n"], part["verdict"])
            for key in ("effect", "ci_low", "ci_high", "p_value"):
                assert mine[key] == pytest.approx(part[key], rel=1e-9, abs=1e-12), \
                    (claim["id"], i, key)
            checked += 1
    assert (len(published), checked) == (7, 9)
    methods = {c["id"]: c["ci"] for c in published}
    assert methods["boot"] == "bootstrap" and methods["rate"] == "rate"
    excluded = [r for r in (tmp_path / "units.csv").read_text().splitlines() if "diverged" in r]
    assert excluded  # the diverged cell is a row, with its reason


def test_units_without_csv_print_a_table_and_csv_alone_is_refused(tmp_path, capsys):
    loaded, cells = _suite(tmp_path, RATE_CLAIMS)
    _store(tmp_path, cells, lambda c, s: 0.0).close()
    args = ["claims", str(tmp_path / "a.yaml"), "--store", str(tmp_path / "db.sqlite")]
    assert main(args + ["--units"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split()[:3] == ["claim", "part", "metric"]
    assert main(args + ["--csv"]) == 2
    assert capsys.readouterr().err.strip() == \
        "geobench claims: --csv goes with --units (the unit rows as CSV)"


# --- the forest plot ---------------------------------------------------------------------

def test_forest_points_are_on_the_axis_a_reader_compares():
    log = Claim(id="r", statement="s", metric="m.f", expect="a > b", scale="log", margin=0.1,
                compare={"arm": ["a", "b"]})
    v = Verdict(log, math.log(2.0), math.log(1.5), math.log(3.0), 5, 5, 0, 0, "holds")
    assert forest_points(v)[:4] == pytest.approx((2.0, 1.5, 3.0, math.exp(0.1)))
    assert forest_points(v)[4] == "log"
    rate = Claim(id="q", statement="s", metric="m.f", expect="< 0.5")
    v = Verdict(rate, -0.5, -0.5, 0.02, 5, 5, 0, 0, "inconclusive", rate=(0.0, 5))
    assert forest_points(v)[:4] == pytest.approx((0.0, 0.0, 0.52, 0.5))
    plain = Claim(id="p", statement="s", metric="m.f", expect="< 0", margin=0.2)
    v = Verdict(plain, -1.0, -1.5, -0.5, 5, 5, 0, 0, "holds")
    assert forest_points(v) == (-1.0, -1.5, -0.5, -0.2, "linear")


def test_the_forest_plot_is_written(tmp_path):
    verdicts = [_verdict("a", 0.004, "holds"), _verdict("b", None, "insufficient", "late")]
    verdicts[1].effect = verdicts[1].ci_low = verdicts[1].ci_high = None
    path = forest_plot(verdicts, tmp_path / "s_claims.png", "s")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert forest_plot([], tmp_path / "none.png", "s") is None
