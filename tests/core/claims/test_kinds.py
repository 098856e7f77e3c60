"""What counts as evidence: sanity checks (``kind: sanity``), contrasts (``kind:
contrast``) and corollaries (``kind: corollary``) outside the counts and the Holm family,
and claims that their trial seeds cannot decide refused before anything runs
(``claims.power``), against hand-computed p-values."""

import csv
import io
import json

import pytest

from geobench.claims.claims_table import claims_table
from geobench.claims.power import part_power
from geobench.claims.registration import claim_digest, claim_digests
from geobench.claims.terminal import terminal_table
from geobench.claims.values import StoredValues
from geobench.claims.verdicts import evaluate
from geobench.cli import main
from geobench.contract.manager import registry
from geobench.records import CellResult
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from geobench.suite.schema import Claim
from tests.core.suite_text import CLAIMS_BASE

SUITE = "name: kinds\n" + CLAIMS_BASE + """\
  metrics: [{name: nccc}]
grid:
  optimizer.lr: [0.05, 0.2]
seeds: SEEDS
claims:
CLAIMS
"""
KINDS = """\
  - {id: paper, statement: a, metric: nccc.accuracy, expect: "a > b",
     compare: {key: optimizer.lr, a: 0.2, b: 0.05}}
  - {id: identity, statement: b, metric: nccc.accuracy, expect: "> 0", kind: sanity}
  - {id: beyond, statement: c, metric: nccc.accuracy, expect: "< 0.9", kind: contrast,
     where: {optimizer.lr: 0.05}}
"""


def _write(tmp_path, claims: str, seeds: str = "5"):
    (tmp_path / "k.yaml").write_text(SUITE.replace("CLAIMS", claims).replace("SEEDS", seeds))
    return load_suite(tmp_path / "k.yaml")


def _stored(tmp_path, loaded):
    cells = Study(loaded, registry()).cells
    store = Store(tmp_path / "db.sqlite")
    for cell in cells:  # lr 0.2 above lr 0.05 by 0.3 + 0.01 s; all above 0 and below 0.9
        v = (0.7 + 0.02 * cell.trial_seed if cell.varied["optimizer.lr"] == 0.2
             else 0.4 + 0.01 * cell.trial_seed)
        store.write(cell, CellResult(cell.id, "complete", finals={"nccc.accuracy": v},
                                     series=[("main", "nccc.accuracy", 30, v)],
                                     claims=claim_digests(loaded.suite)), {})
    return cells, store


def test_sanity_checks_and_contrasts_stay_outside_the_counts_and_the_family(
        tmp_path, recompute_claims):
    loaded = _write(tmp_path, KINDS)
    cells, store = _stored(tmp_path, loaded)
    verdicts = {v.claim.id: v for v in evaluate(loaded, cells, StoredValues(store, cells),
                                                 registry())}
    assert {c: v.verdict for c, v in verdicts.items()} == {
        "paper": "holds", "identity": "holds", "beyond": "holds"}
    # the family is `paper` alone: Holm's threshold is 0.05 / 1, not 0.05 / 3
    assert [v.verdict_holm for v in verdicts.values()] == ["holds", None, None]
    table = claims_table(list(verdicts.values()))
    main_table, checks = table.split("Sanity checks:")
    assert "`identity`" not in main_table and "`identity`" in checks and "| pass " in checks
    assert "**holds**‡" in main_table and "— (contrast)" in main_table
    assert "**Pre-registered: 1 claim** — raw: 1 holds" in main_table
    assert "**Contrasts: 1**‡" in main_table and "`beyond` holds" in main_table
    text = terminal_table(list(verdicts.values()))
    assert "identity" in text.split("Sanity checks:")[1] and "holds‡ / —" in text
    store.close()
    assert main(["claims", str(tmp_path / "k.yaml"), "--store", str(tmp_path / "db.sqlite"),
                 "--units", "--csv"]) == 0


def test_the_units_csv_names_each_kind_and_recomputes_holm_without_them(
        tmp_path, capsys, recompute_claims):
    loaded = _write(tmp_path, KINDS)
    _stored(tmp_path, loaded)[1].close()
    args = ["claims", str(tmp_path / "k.yaml"), "--store", str(tmp_path / "db.sqlite")]
    assert main(args + ["--units", "--csv"]) == 0
    text = capsys.readouterr().out
    kinds = {r["claim"]: r["kind"] for r in csv.DictReader(io.StringIO(text))}
    assert kinds == {"paper": "claim", "identity": "sanity", "beyond": "contrast"}
    (tmp_path / "units.csv").write_text(text)
    again = recompute_claims.recompute_claims(str(tmp_path / "units.csv"))
    assert main(args + ["--json"]) == 0
    got = {r["id"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    for claim, r in again.items():
        assert (r["verdict"], r["verdict_holm"]) == (got[claim]["verdict"],
                                                     got[claim]["verdict_holm"]), claim
    assert got["identity"]["kind"] == "sanity"


COROLLARY = KINDS + """\
  - {id: again, statement: d, metric: nccc.accuracy, expect: "a > b", kind: corollary,
     implied_by: [paper], compare: {key: optimizer.lr, a: 0.2, b: 0.05}, margin: 0.1}
"""


def test_a_corollary_is_shown_with_its_premises_and_stays_outside_the_family(tmp_path):
    loaded = _write(tmp_path, COROLLARY)
    cells, store = _stored(tmp_path, loaded)
    verdicts = {v.claim.id: v for v in evaluate(loaded, cells, StoredValues(store, cells),
                                                 registry())}
    store.close()
    # lr 0.2 above lr 0.05 by 0.3 + 0.01 s per seed: it clears the margin 0.1 as well
    assert verdicts["again"].verdict == "holds" and verdicts["again"].verdict_holm is None
    assert verdicts["paper"].verdict_holm == "holds"  # still a family of 1
    table = claims_table(list(verdicts.values()))
    assert "**holds**⇐" in table and "— (corollary)" in table
    assert "**Pre-registered: 1 claim**" in table
    assert "**Corollaries: 1**⇐" in table and "`again` holds (from `paper`)." in table
    verdicts["paper"].verdict = "inconclusive"  # a premise that does not hold is named
    assert ("`again` holds (from `paper`; `paper` does not hold, so it is not implied here)"
            in claims_table(list(verdicts.values())))


def test_a_corollary_names_counted_premises_and_they_leave_its_digest_alone(tmp_path,
                                                                           capsys):
    bad = COROLLARY.replace("implied_by: [paper]", "implied_by: [identity]")
    (tmp_path / "k.yaml").write_text(SUITE.replace("CLAIMS", bad).replace("SEEDS", "5"))
    assert main(["validate", str(tmp_path / "k.yaml")]) == 2
    assert ("implied_by names 'identity', which is not a counted claim (kind: claim) of this "
            "suite; allowed: paper") in capsys.readouterr().err
    with pytest.raises(ValueError, match="a corollary names the claims it follows from"):
        Claim(id="c", statement="s", metric="m.f", expect="> 0", kind="corollary")
    with pytest.raises(ValueError, match="only a corollary does"):
        Claim(id="c", statement="s", metric="m.f", expect="> 0", implied_by=["x"])
    plain = Claim(id="c", statement="s", metric="m.f", expect="> 0", kind="contrast")
    named = Claim(id="c", statement="s", metric="m.f", expect="> 0", kind="corollary",
                  implied_by=["x"])
    assert claim_digest(named) == claim_digest(named.model_copy(update={"implied_by": ["y"]}))
    assert claim_digest(named) != claim_digest(plain)  # the kind is part of what is tested


def test_validate_refuses_a_rate_on_5_trial_seeds_and_says_how_many_it_needs(tmp_path,
                                                                               capsys):
    rate = '  - {id: r, statement: s, metric: nccc.accuracy, expect: "> 0.5", ci: rate}\n'
    _write(tmp_path, rate)
    assert main(["validate", str(tmp_path / "k.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    # at best 5 of 5: p = 2 · 0.5^5 = 0.0625 ≥ 0.05 / 1; 2 · 0.5^6 = 0.031 < 0.05
    assert err == (f"{tmp_path / 'k.yaml'}:14: claims[0]: claim 'r' cannot be decided in "
                   "profile 'smoke': with 5 trial seeds its smallest p-value is 0.062 (rate 5 "
                   "of 5 against 0.5), not below Holm's threshold 0.05/1 = 0.05; it needs at "
                   "least 6 trial seeds there (docs/claims.md, \"Decidable by design\")")
    _write(tmp_path, rate, seeds="6")
    assert main(["validate", str(tmp_path / "k.yaml")]) == 0


def test_the_seeds_that_decide_are_the_confirmation_seeds(tmp_path, capsys):
    rate = '  - {id: r, statement: s, metric: nccc.accuracy, expect: "> 0.5", ci: rate}\n'
    _write(tmp_path, rate, seeds="2\nconfirm: {first: 10, count: 6}")
    assert main(["validate", str(tmp_path / "k.yaml")]) == 0  # 6 confirmation seeds decide
    _write(tmp_path, rate, seeds="6\nconfirm: [10, 11]")
    assert main(["validate", str(tmp_path / "k.yaml")]) == 2
    assert "with 2 trial seeds its smallest p-value is 0.5" in capsys.readouterr().err


def test_a_conjunction_is_refused_at_the_part_that_cannot_reach_the_threshold(tmp_path,
                                                                            capsys):
    claims = """\
  - id: c
    statement: s
    metric: nccc.accuracy
    expect: "> 0.5"
    ci: rate
    also:
      - {metric: nccc.accuracy, expect: "> 0.8"}
  - {id: d, statement: s, metric: nccc.accuracy, expect: "> 0"}
"""
    # family of 2: part 1 reaches 2 · 0.5^10 < 0.025, part 2 only 2 · 0.8^10 = 0.21
    _write(tmp_path, claims, seeds="10")
    assert main(["validate", str(tmp_path / "k.yaml")]) == 2
    err = capsys.readouterr().err
    assert "claims[0].also[0]: claim 'c' cannot be decided" in err
    assert "0.05/2 = 0.025" in err
    # the fewest n with 2 · 0.8^n < 0.025: n > log(0.0125) / log(0.8) = 19.6
    assert "needs at least 20 trial seeds" in err


@pytest.mark.parametrize("expect, margin, seeds, q", [
    ("< 0.5", 0.0, 5, 0.5), ("> 0.5", 0.0, 8, 0.5), ("< 0.5", 0.1, 10, 0.6),
    ("> 0.9", 0.05, 3, 0.95)])
def test_a_rates_best_p_value_is_the_exact_binomial_tail(expect, margin, seeds, q):
    """At best every seed on the claimed side: p = 2 q^n, q the chance of that side at the
    rate the claim must clear (c ± margin); the seeds it needs are the fewest n with
    2 q^n < 0.05."""
    part = Claim(id="c", statement="s", metric="m.f", expect=expect, margin=margin)
    power = part_power(part, seeds, True, 1)  # alone in its family: α / 1 = 0.05
    assert power.best_p == pytest.approx(min(1.0, 2 * q ** seeds))
    assert 2 * q ** power.needed < 0.05 <= 2 * q ** (power.needed - 1)
    assert power.decidable == (2 * q ** seeds < 0.05)
