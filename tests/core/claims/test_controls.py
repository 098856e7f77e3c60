"""Absences need a positive control: a rate below c is refused without one, and holds only
when the same measurement fires at the control's design points; the units CSV carries the
controls and the independent recomputation applies the same rule."""

import json

import pytest

from geobench.claims.registration import claim_digests
from geobench.claims.verdicts import NOT_IN_PROFILE, Verdict
from geobench.cli import main
from geobench.contract.manager import registry
from geobench.records import CellResult
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from geobench.suite.schema import Claim
from geobench.suite.yamlio import SuiteError
from tests.core.suite_text import CLAIMS_BASE

SUITE = "name: absent\n" + CLAIMS_BASE + """\
  metrics: [{name: nccc}]
grid:
  optimizer.lr: [0.05, 0.2]
  tags.x: [u, v]
seeds: 6
claims:
  - id: stays
    statement: at lr 0.05 the event does not happen
    metric: nccc.accuracy
    ci: rate
    where: {optimizer.lr: 0.05}
    expect: "< 0.5"
CONTROL"""
CONTROL = """\
    control:
      - {metric: nccc.accuracy, where: {optimizer.lr: 0.2, tags.x: TAG}, expect: "> 0.5"}
"""


def _claims(tmp_path, capsys, control: str, fired: dict[str, float], stays: float = 0.0):
    """The claim's JSON with the event (1) or not (0) at lr 0.2 by ``tags.x`` and at lr
    0.05 (``stays``) in every trial seed."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "a.yaml").write_text(SUITE.replace("CONTROL", control))
    loaded = load_suite(tmp_path / "a.yaml")
    store = Store(tmp_path / "db.sqlite")
    for cell in Study(loaded, registry()).cells:
        v = fired[cell.varied["tags.x"]] if cell.varied["optimizer.lr"] == 0.2 else stays
        store.write(cell, CellResult(cell.id, "complete", finals={"nccc.accuracy": v},
                                     series=[("main", "nccc.accuracy", 30, v)],
                                     claims=claim_digests(loaded.suite)), {})
    store.close()
    args = ["claims", str(tmp_path / "a.yaml"), "--store", str(tmp_path / "db.sqlite")]
    assert main(args + ["--json"]) == 0
    return json.loads(capsys.readouterr().out), args


def test_an_absence_without_a_control_is_refused(tmp_path):
    (tmp_path / "a.yaml").write_text(SUITE.replace("CONTROL", ""))
    with pytest.raises(SuiteError, match=r"a.yaml:\d+: claims\[0\].expect: claim 'stays' "
                                         r"claims an absence .* name a positive control"):
        Study(load_suite(tmp_path / "a.yaml"), registry())


@pytest.mark.parametrize(("test", "what"), [
    ('stat: max, expect: "< 0.9"', "nccc.accuracy never above 0.9"),
    ('stat: min, expect: "> 0.1"', "nccc.accuracy never below 0.1")])
def test_a_bound_on_every_evaluation_is_an_absence_too(tmp_path, test, what):
    """The largest value below c, or the smallest above c: "never" over a run."""
    bound = f"  - {{id: never, statement: s, metric: nccc.accuracy, {test}}}\n"
    text = SUITE.split("claims:\n")[0] + "claims:\n"
    (tmp_path / "a.yaml").write_text(text + bound)
    with pytest.raises(SuiteError, match=rf"claims\[0\].expect: claim 'never' claims an "
                                         rf"absence \({what}\): name a positive control"):
        Study(load_suite(tmp_path / "a.yaml"), registry())
    sanity = bound.replace("{id: never,", "{kind: sanity, id: never,")
    (tmp_path / "a.yaml").write_text(text + sanity)
    Study(load_suite(tmp_path / "a.yaml"), registry())  # an identity needs no control
    last = bound.replace("stat: max, ", "").replace("stat: min, ", "")
    (tmp_path / "a.yaml").write_text(text + last)
    Study(load_suite(tmp_path / "a.yaml"), registry())  # the last value: not "never"


def test_an_absence_holds_only_where_its_control_fires(tmp_path, capsys, recompute_claims):
    fired, args = _claims(tmp_path / "fired", capsys, CONTROL.replace("TAG", "u"),
                          {"u": 1.0, "v": 0.0})
    assert fired["verdict"] == fired["verdict_holm"] == "holds"
    assert [c["verdict"] for c in fired["controls"]] == ["holds"]

    quiet, args = _claims(tmp_path / "quiet", capsys, CONTROL.replace("TAG", "v"),
                          {"u": 1.0, "v": 0.0})
    # the same absence, but the measurement never fired at the control's design points
    assert (quiet["verdict"], quiet["verdict_holm"]) == ("inconclusive", "inconclusive")
    assert quiet["p_value"] == pytest.approx(2 * 0.5 ** 6)  # the absence itself is clear
    assert [c["verdict"] for c in quiet["controls"]] == ["fails"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "inconclusive§" in text and "did not fire" in text and "control 1" in text
    assert main(args + ["--units", "--csv"]) == 0
    (tmp_path / "units.csv").write_text(capsys.readouterr().out)
    assert {r["verdict"] for (c, part), r in recompute_claims.recompute_controls(
        str(tmp_path / "units.csv")).items() if part == "c1"} == {"fails"}
    again = recompute_claims.recompute_claims(str(tmp_path / "units.csv"))["stays"]
    assert (again["verdict"], again["verdict_holm"]) == ("inconclusive", "inconclusive")


def test_an_absence_that_fails_fails_whatever_its_control(tmp_path, capsys):
    got, _ = _claims(tmp_path, capsys, CONTROL.replace("TAG", "v"), {"u": 1.0, "v": 0.0},
                     stays=1.0)
    assert got["verdict"] == "fails"  # the event happened: the measurement fired anyway


def test_a_control_with_no_cell_in_a_profile_that_tests_the_claim_is_refused(tmp_path):
    (tmp_path / "a.yaml").write_text(SUITE.replace("CONTROL", CONTROL.replace("TAG", "w")))
    with pytest.raises(SuiteError, match=r"claims\[0\].control\[0\].where"):
        Study(load_suite(tmp_path / "a.yaml"), registry())


def test_a_claim_not_in_the_profile_has_no_control_to_fire():
    claim = Claim(id="c", statement="s", metric="m.f", expect="< 0.5")
    control = Verdict(claim, None, None, None, 0, 0, 0, 0, NOT_IN_PROFILE)
    absent = Verdict(claim, None, None, None, 0, 0, 0, 0, NOT_IN_PROFILE, controls=[control])
    assert not absent.unfired  # no § on a claim the profile cannot test
    tested = Verdict(claim, 0.1, 0.0, 0.2, 5, 5, 0, 0, "inconclusive", controls=[control])
    assert tested.unfired
