"""Pre-registration enforced by the store: a claim counts as pre-registered only when every
stored cell it reads ran under a suite that already held its exact definition; confirmation
seeds apart from exploration seeds."""

import json

import pytest

from geobench.claims.registration import (
    AFTER,
    CHANGED,
    UNRECORDED,
    claim_digest,
    claim_digests,
    claims_digest,
)
from geobench.cli import main
from geobench.contract.manager import registry
from geobench.records import CellResult
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from geobench.suite.schema import Claim
from geobench.suite.seeds import seed_cells
from geobench.suite.yamlio import SuiteError
from tests.core.suite_text import CLAIMS_BASE

SUITE = "name: reg\n" + CLAIMS_BASE + """\
  metrics: [{name: nccc}]
seeds: 3
confirm: [100, 101, 102]
claims:
  - {id: above, statement: s, metric: nccc.accuracy, expect: "> 0.1"}
"""
LOSS = '  - {id: loss, statement: s, metric: loss.train, expect: "> 0"}\n'


def _claims(capsys, tmp_path, text: str, *flags: str) -> dict[str, dict]:
    (tmp_path / "r.yaml").write_text(text)
    args = ["claims", str(tmp_path / "r.yaml"), "--store", str(tmp_path / "db.sqlite"), "--json"]
    assert main(args + list(flags)) == 0
    return {c["id"]: c for c in map(json.loads, capsys.readouterr().out.splitlines())}


def _run(capsys, tmp_path, text: str, *flags: str) -> None:
    (tmp_path / "r.yaml").write_text(text)
    assert main(["run", str(tmp_path / "r.yaml"), "--store", str(tmp_path / "db.sqlite"),
                 "--quiet", "--no-leaderboard", *flags]) == 0
    capsys.readouterr()


def test_a_claim_edited_or_added_after_its_data_turns_post_hoc(tmp_path, capsys):
    _run(capsys, tmp_path, SUITE, "--seeds", "explore")
    explore = _claims(capsys, tmp_path, SUITE, "--seeds", "explore")["above"]
    assert (explore["posthoc"], explore["n"]) == (None, 3)  # declared before its cells ran
    assert explore["verdict_holm"] == explore["verdict"] == "holds"

    edited = SUITE.replace('"> 0.1"', '"> 0.2"') + LOSS  # seen the data, moved the bar
    got = _claims(capsys, tmp_path, edited, "--seeds", "explore")
    assert got["above"]["posthoc"] == CHANGED and got["loss"]["posthoc"] == AFTER
    assert got["above"]["verdict_holm"] is None and not got["above"]["posthoc_declared"]
    _run(capsys, tmp_path, edited, "--seeds", "explore", "--rerun")  # a rerun launders nothing
    got = _claims(capsys, tmp_path, edited, "--seeds", "explore")
    assert (got["above"]["posthoc"], got["loss"]["posthoc"]) == (CHANGED, AFTER)

    _run(capsys, tmp_path, edited, "--seeds", "confirm")  # fresh seeds under the edited claims
    got = _claims(capsys, tmp_path, edited)  # the default reads the confirmation seeds
    assert {c: (r["posthoc"], r["n"]) for c, r in got.items()} == {
        "above": (None, 3), "loss": (None, 3)}
    again = _claims(capsys, tmp_path, edited.replace("> 0.2", "> 0.25"))
    assert again["above"]["posthoc"] == CHANGED  # edited after its confirmation run


def test_a_declared_post_hoc_reason_speaks_of_the_exploration_seeds_only(tmp_path, capsys):
    shaped = SUITE.replace('"> 0.1"}', '"> 0.1", posthoc: "bar set after exploring"}')
    _run(capsys, tmp_path, shaped)  # both sets, every cell under the claim as declared
    explore = _claims(capsys, tmp_path, shaped, "--seeds", "explore")["above"]
    assert (explore["posthoc"], explore["posthoc_declared"]) == ("bar set after exploring", True)
    assert explore["verdict_holm"] is None
    confirm = _claims(capsys, tmp_path, shaped)["above"]  # seeds the reason never saw
    assert (confirm["posthoc"], confirm["posthoc_declared"]) == (None, False)
    assert confirm["verdict_holm"] == confirm["verdict"] == "holds"


def test_cells_stored_without_a_record_make_every_claim_post_hoc(tmp_path, capsys):
    (tmp_path / "r.yaml").write_text(SUITE)
    loaded = load_suite(tmp_path / "r.yaml")
    cells = Study(loaded, registry()).cells
    store = Store(tmp_path / "db.sqlite")
    for cell in cells:  # as a store written before runs recorded their claims
        v = 0.5 + 0.01 * cell.trial_seed
        store.write(cell, CellResult(cell.id, "complete", finals={"nccc.accuracy": v},
                                     series=[("main", "nccc.accuracy", 30, v)]), {})
    store.close()
    got = _claims(capsys, tmp_path, SUITE)["above"]
    assert (got["posthoc"], got["verdict"], got["verdict_holm"]) == (UNRECORDED, "holds", None)
    assert main(["claims", str(tmp_path / "r.yaml"), "--store", str(tmp_path / "db.sqlite")]) \
        == 0
    text = capsys.readouterr().out
    assert f"† post hoc, {UNRECORDED}" in text and "Post hoc: 1" in text


def test_the_store_keeps_the_first_record_of_a_finished_cell(tmp_path):
    (tmp_path / "r.yaml").write_text(SUITE)
    cell = Study(load_suite(tmp_path / "r.yaml"), registry()).cells[0]
    store = Store(tmp_path / "db.sqlite")

    def write(status: str, claims: dict) -> dict:
        store.write(cell, CellResult(cell.id, status, claims=claims), {})
        return store.cells([cell.id])[cell.id]["provenance"].get("claims")

    assert write("failed", {"a": "1"}) == {"a": "1"}
    assert write("complete", {"a": "2"}) == {"a": "2"}  # a failure left nothing to see
    assert write("complete", {"a": "3", "b": "4"}) == {"a": "2"}  # values were there
    store.close()


def test_the_digest_covers_what_is_tested_and_not_the_wording():
    claim = Claim(id="c", statement="s", metric="m.f", expect="> 0")
    same = claim.model_copy(update={"statement": "t", "source": "P1", "posthoc": "why"})
    assert claim_digest(same) == claim_digest(claim)
    for change in ({"expect": "> 1"}, {"margin": 0.1}, {"where": {"arm": "a"}},
                   {"stat": "max"}, {"scale": "log", "expect": "> 1"}):
        assert claim_digest(claim.model_copy(update=change)) != claim_digest(claim), change


def test_confirmation_seeds_are_disjoint_from_exploration_and_expand_after_them(tmp_path):
    (tmp_path / "r.yaml").write_text(SUITE.replace("[100, 101, 102]",
                                                   "{first: 100, count: 3}"))
    loaded = load_suite(tmp_path / "r.yaml")
    cells = Study(loaded, registry()).cells
    assert [c.trial_seed for c in cells] == [0, 1, 2, 100, 101, 102]
    assert [c.trial_seed for c in seed_cells(loaded, "smoke", cells, "confirm")] == [100, 101,
                                                                                     102]
    (tmp_path / "r.yaml").write_text(SUITE.replace("[100, 101, 102]", "[2, 100]"))
    with pytest.raises(SuiteError, match=r"r.yaml:11: confirm: profile 'smoke': trial seed 2 is "
                                         r"in both 'seeds' and 'confirm'"):
        Study(load_suite(tmp_path / "r.yaml"), registry())


def test_replication_seeds_are_disjoint_from_both_sets_and_expand_last(tmp_path):
    (tmp_path / "r.yaml").write_text(SUITE.replace("confirm: [100, 101, 102]",
                                                   "confirm: [100, 101, 102]\n"
                                                   "replicate: {first: 300, count: 3}"))
    loaded = load_suite(tmp_path / "r.yaml")
    cells = Study(loaded, registry()).cells
    assert [c.trial_seed for c in cells] == [0, 1, 2, 100, 101, 102, 300, 301, 302]
    assert [c.trial_seed for c in seed_cells(loaded, "smoke", cells, "replicate")] == [
        300, 301, 302]
    (tmp_path / "r.yaml").write_text(SUITE.replace("confirm: [100, 101, 102]",
                                                   "confirm: [100, 101, 102]\n"
                                                   "replicate: [102, 300]"))
    with pytest.raises(SuiteError, match=r"r.yaml:12: replicate: profile 'smoke': trial seed "
                                         r"102 is in both 'confirm' and 'replicate'"):
        Study(load_suite(tmp_path / "r.yaml"), registry())
    (tmp_path / "r.yaml").write_text(SUITE.replace("confirm: [100, 101, 102]",
                                                   "replicate: [300]"))
    with pytest.raises(SuiteError, match=r"replicate: profile 'smoke' declares replication "
                                         r"seeds \('replicate'\) but no confirmation seeds"):
        Study(load_suite(tmp_path / "r.yaml"), registry())


def test_confirmation_seeds_that_a_profile_lacks_are_refused_in_one_line(tmp_path, capsys):
    text = SUITE.replace("confirm: [100, 101, 102]\n", "")
    (tmp_path / "r.yaml").write_text(text)
    code = main(["run", str(tmp_path / "r.yaml"), "--store", str(tmp_path / "db.sqlite"),
                 "--seeds", "confirm", "--quiet"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1
    assert "profile 'smoke' declares no confirmation seeds" in err
    assert not (tmp_path / "db.sqlite").exists()


def test_a_run_records_the_digest_of_every_claim_with_each_cell(tmp_path, capsys):
    _run(capsys, tmp_path, SUITE + LOSS, "--seeds", "explore")
    loaded = load_suite(tmp_path / "r.yaml")
    store = Store(tmp_path / "db.sqlite", read_only=True)
    rows = store.cells([c.id for c in Study(loaded, registry()).cells])
    store.close()
    assert len(rows) == 3
    assert all(r["provenance"]["claims"] == claim_digests(loaded.suite) for r in rows.values())


def test_the_page_decides_on_confirmation_seeds_and_shows_exploration_apart(tmp_path, capsys):
    _run(capsys, tmp_path, SUITE)
    out = tmp_path / "board" / "reg.md"
    assert main(["leaderboard", str(tmp_path / "r.yaml"), "--store", str(tmp_path / "db.sqlite"),
                 "--out", str(out)]) == 0
    page = out.read_text()
    digest = claims_digest(load_suite(tmp_path / "r.yaml").suite)
    assert f"- claims: 1, definitions digest `{digest}`; confirmation seeds 100–102 (ran " \
        in page and "decide the verdicts; no registration; exploration seeds 0–2\n" in page
    main_part, explore_part = page.split("## Claims on the exploration seeds")
    assert "Decided on the confirmation seeds" in main_part and "## Claims\n" in main_part
    seeds = {part: {r.split(",")[11] for r in (out.parent / name).read_text().splitlines()[1:]}
             for part, name in (("confirm", "reg_claims.csv"),
                                ("explore", "reg_claims_explore.csv"))}
    assert seeds == {"confirm": {"100", "101", "102"}, "explore": {"0", "1", "2"}}
    assert "Post hoc" not in page  # the claim was in force when every cell ran
