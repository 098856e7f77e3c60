"""Degenerate evidence: a claim whose trial seeds' d do not spread has no test; it reads
``degenerate`` with its reason, outside the counts and Holm's family, and the independent
recomputation from the units CSV finds the same; a failing part is never hidden by one the
profile cannot test (verdict rules 2; rules 1 kept for pages decided before them)."""

from geobench.claims.claims_table import claims_table, units_csv
from geobench.claims.registration import claim_digests
from geobench.claims.values import StoredValues
from geobench.claims.verdicts import evaluate
from geobench.contract.manager import registry
from geobench.records import CellResult
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from tests.core.claims.test_kinds import SUITE

CLAIMS = """\
  - {id: rises, statement: a, metric: nccc.accuracy, expect: "a > b",
     compare: {key: optimizer.lr, a: 0.2, b: 0.05}}
  - {id: flat, statement: b, metric: nccc.accuracy, expect: "a < b",
     compare: {stat: [last, first]}}
"""


def _verdicts(tmp_path):
    (tmp_path / "d.yaml").write_text(SUITE.replace("CLAIMS", CLAIMS).replace("SEEDS", "5"))
    loaded = load_suite(tmp_path / "d.yaml")
    cells = Study(loaded, registry()).cells
    store = Store(tmp_path / "db.sqlite")
    for cell in cells:  # lr 0.2 above lr 0.05 by 0.3 + 0.01 s; each series flat in time
        s = cell.trial_seed
        v = 0.7 + 0.02 * s if cell.varied["optimizer.lr"] == 0.2 else 0.4 + 0.01 * s
        store.write(cell, CellResult(cell.id, "complete", finals={"nccc.accuracy": v},
                                     series=[("main", "nccc.accuracy", t, v) for t in (10, 30)],
                                     claims=claim_digests(loaded.suite)), {})
    return {v.claim.id: v for v in evaluate(loaded, cells, StoredValues(store, cells),
                                            registry())}


def test_a_claim_without_spread_is_degenerate_and_outside_the_family(tmp_path,
                                                                      recompute_claims):
    got = _verdicts(tmp_path)
    flat, rises = got["flat"], got["rises"]
    # last − first is 0 in every cell of every seed: a zero-width interval, p 0 or 1
    assert (flat.verdict, flat.degenerate) == ("degenerate",
                                               "zero spread: every trial seed's d is 0")
    assert flat.verdict_holm is None and not flat.counted
    # rises: d = 0.3 + 0.01 s, alone in the family, so Holm's threshold is 0.05 / 1
    assert rises.counted and (rises.verdict, rises.verdict_holm) == ("holds", "holds")
    table = claims_table(list(got.values()))
    assert "**degenerate**∅" in table and "— (degenerate)" in table
    assert ("∅ degenerate: its units give no test (docs/claims.md, \"Degenerate evidence\"); "
            "outside the counts and the Holm family: `flat` (zero spread: every trial seed's "
            "d is 0).") in table
    assert "**Pre-registered: 1 claim**" in table and "**Degenerate: 1**∅" in table
    path = tmp_path / "units.csv"
    path.write_text(units_csv(list(got.values())))
    again = recompute_claims.recompute_claims(str(path))
    assert {c: (r["verdict"], r["verdict_holm"]) for c, r in again.items()} == {
        "rises": ("holds", "holds"), "flat": ("degenerate", None)}
    before = recompute_claims.recompute_claims(str(path), rules=1)
    assert before["flat"]["verdict"] != "degenerate" and before["flat"]["p_value"] is not None


HEADER = ("claim,kind,posthoc,part,metric,stat,expect,scale,margin,ci,trend,trial_seed,cell,"
          "config,cell_b,config_b,arm,a,b,d,excluded\n")


def _part(part: int, ds: list[float] | None) -> str:
    """The rows of part ``part`` of claim ``c`` (> 0, t): one per trial seed with d, or one
    row saying the profile selects no cell of it."""
    head = f"c,claim,0,{part},m.f,last,> 0,linear,0.0,t,"
    if ds is None:
        return head + ",,,,,,,,,,absent: no cell of this profile selected\n"
    return "".join(f"{head},{s},x{s},,,,,{d},0.0,{d},\n" for s, d in enumerate(ds))


def test_a_failing_part_is_never_hidden_by_a_part_not_in_the_profile(tmp_path,
                                                                    recompute_claims):
    path = tmp_path / "c.csv"
    path.write_text(HEADER + _part(1, [1.0, 1.2, 0.9, 1.1]) + _part(2, [-1.0, -1.2, -0.9, -1.1])
                    + _part(3, None))
    assert recompute_claims.recompute_claims(str(path))["c"]["verdict"] == "fails"
    assert recompute_claims.recompute_claims(str(path), rules=1)["c"]["verdict"] == \
        "not in this profile"
