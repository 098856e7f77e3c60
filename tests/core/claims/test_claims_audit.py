"""What makes a claim auditable: rates, p-values and Holm's correction on stored cells (the
statistics themselves: test_exact_stats.py), post hoc marking, and every published number
recomputed from the per-unit CSV alone by an independent script."""

import csv
import gzip
import io
import json

import pytest
from scipy import stats

from geobench.claims.claims_table import claims_table, part_text, summary_line
from geobench.claims.registration import claim_digests
from geobench.claims.stats import clopper_pearson
from geobench.claims.values import StoredValues
from geobench.claims.verdicts import Verdict, apply_holm, conjunction_p, evaluate
from geobench.cli import main
from geobench.contract.manager import registry
from geobench.records import CellResult
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from geobench.suite.schema import Claim
from geobench.suite.yamlio import SuiteError
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
    return loaded, Study(loaded, registry()).cells


def _store(tmp_path, cells, value, status=lambda cell: "complete"):
    """Each cell's nccc.accuracy series: value(cell, 'first') at step 0, value(cell, 'last')
    at step 30."""
    store = Store(tmp_path / "db.sqlite")
    claims = claim_digests(load_suite(tmp_path / "a.yaml").suite)  # as a run records them
    for cell in cells:
        first, last = value(cell, "first"), value(cell, "last")
        store.write(cell, CellResult(cell.id, status(cell), finals={"nccc.accuracy": last},
                                     series=[("main", "nccc.accuracy", 0, first),
                                             ("main", "nccc.accuracy", 30, last)],
                                     claims=claims), {})
    return store


def _verdicts(loaded, cells, store):
    return {v.claim.id: v for v in evaluate(loaded, cells, StoredValues(store, cells),
                                                 registry())}


# --- rates, p-values, Holm and post hoc on stored cells ---------------------------------

RATE_CLAIMS = """\
  - {id: rate_one, statement: a, metric: nccc.accuracy, expect: "< 0.6", ci: rate,
     where: {optimizer.lr: 0.05, tags.x: u},
     control: [{metric: nccc.accuracy, expect: "> 0.4", where: {optimizer.lr: 0.2, tags.x: u}}]}
  - {id: rate_two, statement: b, metric: nccc.accuracy, expect: "> 0.4", ci: rate,
     where: {optimizer.lr: 0.2}}
"""
"""Rates over 6 trial seeds that can be decided in a family of 2: at best 2 × 0.4^6 < 0.025;
the absence's control fires wherever lr 0.2 and x = u hold 1."""


def test_rates_get_clopper_pearson_over_trial_seeds(tmp_path):
    loaded, cells = _suite(tmp_path, RATE_CLAIMS, seeds=6)

    def val(cell, stat):  # lr 0.05: 0 everywhere; lr 0.2: 1 except x = v of seeds 0 and 1
        if cell.varied["optimizer.lr"] == 0.05:
            return 0.0
        return 0.0 if cell.varied["tags.x"] == "v" and cell.trial_seed < 2 else 1.0

    got = _verdicts(loaded, cells, _store(tmp_path, cells, val))
    one = got["rate_one"]
    # 0 of 6 seeds: [0, 0.459] shifted by c = 0.6; below 0.6: holds, p = 2 P(X <= 0) = 2 0.4^6
    low, high = clopper_pearson(0, 6)
    assert (one.ci, one.n, one.rate) == ("rate", 6, (0.0, 6))
    assert (one.effect, one.ci_low, one.ci_high) == pytest.approx((-0.6, low - 0.6, high - 0.6))
    assert one.verdict == "holds" and one.p_value == pytest.approx(2 * 0.4 ** 6)
    two = got["rate_two"]
    # per-seed rates 0.5, 0.5, 1, 1, 1, 1: k = 5 of 6 (a fractional k when they differ)
    assert two.rate == (5.0, 6) and two.effect == pytest.approx(5 / 6 - 0.4)
    assert (two.ci_low + 0.4, two.ci_high + 0.4) == pytest.approx(clopper_pearson(5, 6))
    assert two.verdict == "inconclusive"
    assert two.p_value == pytest.approx(2 * stats.binomtest(5, 6, 0.4, "greater").pvalue)


def test_a_rate_is_the_default_for_a_declared_0_1_outcome_only():
    one_sample = Claim(id="c", statement="s", metric="m.f", expect="> 0.5")
    assert one_sample.interval(binary=True) == "rate"
    assert one_sample.interval(binary=False) == "t"
    paired = Claim(id="c", statement="s", metric="m.f", expect="a > b",
                   compare={"arm": ["a", "b"]})
    assert paired.interval(binary=True) == "t"
    assert one_sample.model_copy(update={"stat": "mean"}).interval(binary=True) == "t"
    assert one_sample.model_copy(update={"ci": "bootstrap"}).interval(binary=True) \
        == "bootstrap"


ARMS = """  - {id: similar, statement: a, metric: toy_cka.similar, where: {arm: b}, expect: "> 0.2"}
arms:
  a: {}
  b: {}
"""


def test_a_declared_0_1_field_gets_a_rate_without_asking(tmp_path):
    text = (SUITE.replace("CLAIMS", ARMS).replace("SEEDS", "6")
            .replace("  metrics: [{name: nccc}]", "  metrics: [{name: nccc}, {name: toy_cka}]"))
    (tmp_path / "a.yaml").write_text(text)
    loaded = load_suite(tmp_path / "a.yaml")
    cells = Study(loaded, registry()).cells
    store = Store(tmp_path / "db.sqlite")
    for cell in cells:  # every run similar except seed 0's
        v = float(cell.trial_seed > 0)
        store.write(cell, CellResult(cell.id, "complete", finals={"a~b/toy_cka.similar": v},
                                     series=[("a~b", "toy_cka.similar", 30, v)]), {})
    v = _verdicts(loaded, cells, store)["similar"]
    assert (v.ci, v.rate) == ("rate", (5.0, 6))  # 2 cells a seed, both alike
    assert (v.ci_low + 0.2, v.ci_high + 0.2) == pytest.approx(clopper_pearson(5, 6))


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
                   p_fails=None if p is None else 1.0, declared=posthoc)


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


def test_a_conjunctions_p_values_by_hand():
    # holds only if both hold: the larger p_holds; fails if either fails: 2 x the smaller
    assert conjunction_p([(0.01, 0.02), (0.03, 0.9)]) == (0.03, pytest.approx(0.04))
    assert conjunction_p([(0.2, 0.6), (None, None), (0.1, 0.5)]) == (1.0, 1.0)
    assert conjunction_p([(None, None)]) == (1.0, 1.0)


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
    assert (v.p_holds, v.p_fails) == conjunction_p([(p.p_holds, p.p_fails) for p in v.parts])
    assert v.p_value == pytest.approx(2 * v.p_fails)  # the failing part decides it


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
  - {id: one_sample, statement: a, metric: nccc.accuracy, expect: "> 0.22",
     where: {optimizer.lr: 0.05}}
  - {id: paired, statement: b, metric: nccc.accuracy, expect: "a > b",
     compare: {key: optimizer.lr, a: 0.2, b: 0.05}}
  - {id: ratio, statement: c, metric: nccc.accuracy, expect: "a > b", scale: log,
     compare: {key: tags.x, a: v, b: u}, margin: 0.05}
  - {id: change, statement: d, metric: nccc.accuracy, expect: "a > b",
     compare: {stat: [last, first]}, where: {tags.x: u}}
  - {id: boot, statement: e, metric: nccc.accuracy, expect: "< 2", ci: bootstrap}
  - {id: rate, statement: f, metric: nccc.accuracy, expect: "> 0.4", ci: rate,
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
    _store(tmp_path, cells, val, lambda c: status.get(c.id, "complete")).close()
    args = ["claims", str(tmp_path / "a.yaml"), "--store", str(tmp_path / "db.sqlite")]
    assert main(args + ["--units", "--csv"]) == 0
    (tmp_path / "units.csv").write_text(capsys.readouterr().out)
    assert main(args + ["--json"]) == 0
    published = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    recomputed = recompute_claims.recompute_file(str(tmp_path / "units.csv"))
    claims = recompute_claims.recompute_claims(str(tmp_path / "units.csv"))
    checked = 0
    for claim in published:
        for i, part in enumerate(claim.get("parts") or [claim], 1):
            mine = recomputed[(claim["id"], i)]
            assert (mine["method"], mine["n"], mine["verdict"]) == (
                part["ci"], part["n"], part["verdict"])
            for key in ("effect", "ci_low", "ci_high", "p_holds", "p_fails", "p_value"):
                assert mine[key] == pytest.approx(part[key], rel=1e-9, abs=1e-12), \
                    (claim["id"], i, key)
            checked += 1
        mine = claims[claim["id"]]
        assert mine["p_value"] == pytest.approx(claim["p_value"], rel=1e-9, abs=1e-12)
        assert (mine["verdict"], mine["verdict_holm"]) == (claim["verdict"],
                                                           claim["verdict_holm"])
    assert (len(published), checked) == (7, 9)
    assert claims["conj"]["verdict_holm"] is None  # post hoc: outside the family
    # holds raw (p < 0.05), but not after Holm's correction over the six pre-registered
    assert (claims["one_sample"]["verdict"], claims["one_sample"]["verdict_holm"]) == (
        "holds", "inconclusive")
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
    assert out.splitlines()[0].split()[:3] == ["claim", "kind", "posthoc"]
    assert main(args + ["--csv"]) == 2
    assert capsys.readouterr().err.strip() == \
        "geobench claims: --csv goes with --units (the unit rows as CSV)"


def test_a_rate_threshold_outside_zero_one_is_refused(tmp_path):
    with pytest.raises(SuiteError, match=r"claims\[0\]\.expect: claim 'r' tests a rate "
                                         r"against c ± margin = 1\.1") as err:
        _suite(tmp_path, """\
  - {id: r, statement: a, metric: nccc.accuracy, expect: "> 0.9", margin: 0.2, ci: rate}
""")
    assert "\n" not in str(err.value)


def test_ci_rate_leaves_out_values_that_are_not_0_or_1(tmp_path):
    loaded, cells = _suite(tmp_path, RATE_CLAIMS)
    v = _verdicts(loaded, cells, _store(tmp_path, cells, lambda c, s: 0.5))["rate_one"]
    assert v.verdict == "insufficient" and v.excluded == 6
    assert {u.excluded for u in v.units} == {"not 0 or 1 (ci: rate)"}


def test_a_unit_with_a_missing_side_counts_as_missing(tmp_path):
    loaded, cells = _suite(tmp_path, """\
  - {id: p, statement: a, metric: nccc.accuracy, expect: "a > b",
     compare: {key: optimizer.lr, a: 0.2, b: 0.05}}
""")
    stored = [c for c in cells if not (c.trial_seed == 0 and c.varied["optimizer.lr"] == 0.05)]
    status = {c.id: "diverged" for c in cells
              if c.trial_seed == 0 and c.varied["optimizer.lr"] == 0.2}
    store = _store(tmp_path, stored, lambda c, s: 1.0, lambda c: status.get(c.id, "complete"))
    v = evaluate(loaded, cells, StoredValues(store, cells), registry())[0]
    reasons = sorted(u.excluded for u in v.units if u.excluded)
    assert reasons == ["a: diverged; b: missing: not in the store"] * 2
    assert (v.missing, v.excluded, v.n) == (2, 0, 5)


def test_each_units_a_and_b_check_against_the_published_values(tmp_path, capsys,
                                                               recompute_claims):
    """The audit suite's units (one-sample, paired, log ratio, last-first, a conjunction
    with a 'first' part) against ``geobench results --csv --series``: every a and b that is
    a stored value is found equal; doubling one cell's values makes each of its sides
    differ, named by claim and cell."""
    _, cells = _suite(tmp_path, AUDIT_CLAIMS, seeds=7)
    _store(tmp_path, cells, lambda c, stat: 0.5 + 0.1 * c.trial_seed
           + (0.2 if c.varied["optimizer.lr"] == 0.2 else 0.0)
           + (0.01 if stat == "first" else 0.0)).close()
    args = ["--store", str(tmp_path / "db.sqlite")]
    assert main(["claims", str(tmp_path / "a.yaml"), *args, "--units", "--csv"]) == 0
    units = tmp_path / "units.csv"
    units.write_text(capsys.readouterr().out)
    assert main(["results", str(tmp_path / "a.yaml"), *args, "--csv", "--series"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(rows) == 2 * len(cells)  # two points of one series per cell

    def publish(rows: list[dict]) -> str:
        path = tmp_path / "values.csv.gz"
        with gzip.open(path, "wt", newline="") as fh:
            writer = csv.DictWriter(fh, list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        return str(path)

    with units.open(newline="") as fh:
        sides = sum((r["cell"] != "") + (r["cell_b"] != "" or "-" in r["stat"])
                    for r in csv.DictReader(fh) if r["a"])  # a one-sample b is a threshold
    checked, trends, differ = recompute_claims.check_units(str(units), publish(rows))
    assert (checked, trends, differ) == (sides, 0, [])
    tampered = cells[0].id
    for r in rows:
        if r["cell"] == tampered:
            r["value"] = repr(2 * float(r["value"]))
    _, _, differ = recompute_claims.check_units(str(units), publish(rows))
    assert differ and all(f"cell {tampered}" in line or "b = " in line for line in differ)


def test_recompute_claims_help_and_a_missing_file(recompute_claims, capsys):
    with pytest.raises(SystemExit) as done:
        recompute_claims.main(["--help"])
    assert done.value.code == 0 and "--values FILE" in capsys.readouterr().out
    with pytest.raises(SystemExit) as done:
        recompute_claims.main(["nowhere_claims.csv"])
    assert done.value.code == 2 and "nowhere_claims.csv: no such file" in capsys.readouterr().err
