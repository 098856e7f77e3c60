"""Replication seeds (``replicate:``): registered apart, run on request, each verdict decided
again, the page's ``replicates`` column equal to the two seed sets' own verdicts, and
``geobench verify`` recomputing the replication from the published files."""

import json
import re
import shutil
from pathlib import Path

import pytest

from geobench.claims.values import StoredValues
from geobench.cli import main
from geobench.run.store import Store
from geobench.study.registered import REPLICATE_SEEDS, file_sha256
from tests.core.claims.test_registration import SUITE

REPLICATED = SUITE.replace("confirm: [100, 101, 102]",
                           "confirm: [100, 101, 102]\nreplicate: [300, 301, 302]") \
    + '  - {id: below, statement: s, metric: nccc.accuracy, expect: "< 0.5"}\n'


def _claims(capsys, suite: Path, store: Path, seeds: str) -> dict[str, dict]:
    assert main(["claims", str(suite), "--store", str(store), "--json", "--seeds", seeds]) == 0
    return {c["id"]: c for c in map(json.loads, capsys.readouterr().out.splitlines())}


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    """suites/r.yaml with its two registrations, run on every seed set and published."""
    root = tmp_path_factory.mktemp("replicated")
    (root / "suites").mkdir()
    suite, store = root / "suites" / "r.yaml", root / "db.sqlite"
    suite.write_text(REPLICATED)
    assert main(["register", str(suite), "--store", str(store)]) == 0
    assert main(["run", str(suite), "--store", str(store), "--quiet", "--no-leaderboard"]) == 0
    assert main(["run", str(suite), "--store", str(store), "--quiet", "--seeds", "replicate",
                 "--out", str(root / "board")]) == 0
    return root


def test_replication_seeds_run_only_when_asked_and_record_their_own_registration(published):
    registrations = published / "registrations"
    main_sha = file_sha256(registrations / "reg_smoke.json")
    again = json.loads((registrations / "reg_smoke.replicate.json").read_text())
    assert again["replicate"] == [300, 301, 302] and again["replicates"] == main_sha
    replicate_sha = file_sha256(registrations / "reg_smoke.replicate.json")
    store = Store(str(published / "db.sqlite"), read_only=True)
    try:
        cells = _cells(published)
        values = StoredValues(store, cells)
        recorded = {c.trial_seed: values.registration(c) for c in cells}
    finally:
        store.close()
    assert {s for s, sha in recorded.items() if sha == replicate_sha} == {300, 301, 302}
    assert {s for s, sha in recorded.items() if sha == main_sha} == {0, 1, 2, 100, 101, 102}


def _cells(root: Path) -> list:
    from geobench.contract.manager import registry
    from geobench.study import Study
    return Study.open(root / "suites" / "r.yaml", registry=registry()).cells


def test_the_replicates_column_is_the_two_seed_sets_own_verdicts(published, capsys):
    suite, store = published / "suites" / "r.yaml", published / "db.sqlite"
    confirm = _claims(capsys, suite, store, "confirm")
    replicate = _claims(capsys, suite, store, "replicate")
    assert {c["n"] for c in replicate.values()} == {3}
    assert all(c["posthoc"] is None for c in replicate.values())
    record = json.loads((published / "board" / "reg.json").read_text())
    assert record["seeds"]["replicate"] == [300, 301, 302]
    sections = {s["seeds"]: s for s in record["claims"]}
    assert set(sections) == {"confirm", "replicate", "explore"}
    for claim in sections["confirm"]["claims"]:
        mine, again = confirm[claim["id"]], replicate[claim["id"]]
        assert claim["replicated"] == again["verdict"]
        assert claim["replicates"] == (again["verdict"] == mine["verdict"])
    page = (published / "board" / "reg.md").read_text()
    assert re.search(r"\| Holm +\| replicates +\|", page)
    assert "## Claims on the replication seeds" in page
    assert "replication seeds 300–302 (ran" in page and "reg_smoke.replicate.json" in page


def test_a_replicated_page_verifies_and_a_flipped_replicates_is_found(published, tmp_path,
                                                                     capsys):
    board = published / "board"
    assert main(["verify", str(board / "reg.md")]) == 0
    out = capsys.readouterr().out
    assert "replication ../registrations/reg_smoke.replicate.json (3 replicating cells ran " \
           "under it)" in out
    shutil.copytree(published, tmp_path / "copy")
    record_path = tmp_path / "copy" / "board" / "reg.json"
    record = json.loads(record_path.read_text())
    claim = next(s for s in record["claims"] if s["seeds"] == "confirm")["claims"][0]
    claim["replicates"] = not claim["replicates"]
    record_path.write_text(json.dumps(record))
    assert main(["verify", str(record_path)]) == 1
    assert f"claim {claim['id']}: replicates is {claim['replicates']!r} on the page, " \
           f"{not claim['replicates']!r} recomputed" in capsys.readouterr().out


def test_replication_seeds_changed_after_their_registration_are_post_hoc(published, tmp_path,
                                                                        capsys):
    shutil.copytree(published, tmp_path / "copy")
    suite, store = tmp_path / "copy" / "suites" / "r.yaml", tmp_path / "copy" / "db.sqlite"
    suite.write_text(REPLICATED.replace("replicate: [300, 301, 302]",
                                        "replicate: [300, 301, 302, 303]"))
    assert {c["posthoc"] for c in _claims(capsys, suite, store, "replicate").values()} == {
        REPLICATE_SEEDS}
    assert {c["posthoc"] for c in _claims(capsys, suite, store, "confirm").values()} == {None}


def test_register_refuses_once_replication_cells_are_stored(tmp_path, capsys):
    (tmp_path / "suites").mkdir()
    suite, store = tmp_path / "suites" / "r.yaml", tmp_path / "db.sqlite"
    suite.write_text(REPLICATED.replace("replicate: [300, 301, 302]", ""))
    assert main(["register", str(suite), "--store", str(store)]) == 0
    suite.write_text(REPLICATED)
    assert main(["run", str(suite), "--store", str(store), "--quiet", "--no-leaderboard",
                 "--seeds", "replicate", "--max-cells", "1"]) == 0
    assert "its replication seeds run without a registration" in capsys.readouterr().err
    assert main(["register", str(suite), "--store", str(store)]) == 2
    out = capsys.readouterr()
    assert "reg_smoke.json: registered already" in out.out  # the confirmation's, unchanged
    assert "profile 'smoke': 1 of its 3 replication cells are stored in" in out.err
    assert len(out.err.strip().splitlines()) == 1
    assert not (tmp_path / "registrations" / "reg_smoke.replicate.json").exists()


def test_validate_plans_the_seeds_each_claim_needs_to_replicate(published, capsys):
    suite, store = published / "suites" / "r.yaml", published / "db.sqlite"
    assert main(["validate", str(suite), "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert "two sets of 3 seeds (the deciding set's size)" in out
    rows = {line.split("|")[1].strip(): [c.strip() for c in line.split("|")[2:-1]]
            for line in out.splitlines() if line.startswith("| above") or
            line.startswith("| below")}
    explore = _claims(capsys, suite, store, "explore")
    assert {k: r[0] for k, r in rows.items()} == {k: explore[k]["verdict"] for k in rows}
    assert all(r[3].isdigit() and int(r[3]) >= 3 for r in rows.values())
    assert main(["validate", str(suite), "--store", str(published / "none.sqlite")]) == 2
    assert "none.sqlite: no store there (--store)" in capsys.readouterr().err


def test_the_replicates_text_reads_each_case():
    from geobench.claims.claims_table import replicates_text, replication_line
    from geobench.claims.verdicts import NOT_IN_PROFILE, Verdict
    from geobench.suite.schema import Claim

    def verdict(cid: str, mine: str, again: str | None, posthoc: str | None = None) -> Verdict:
        claim = Claim.model_validate({"id": cid, "statement": "s", "metric": "m.f",
                                      "expect": "> 0"})
        v = Verdict(claim, None, None, None, 3, 3, 0, 0, mine)
        v.replicated, v.replicated_posthoc = again, posthoc
        return v

    same, flipped = verdict("a", "holds", "holds"), verdict("b", "holds", "inconclusive")
    seen, absent = verdict("c", "fails", "fails", "why"), verdict("d", NOT_IN_PROFILE,
                                                                   NOT_IN_PROFILE)
    assert [replicates_text(v) for v in (same, flipped, seen, absent, verdict("e", "holds",
                                                                             None))] == [
        "yes (holds)", "**no** (inconclusive)", "— (fails, post hoc)", "—", "—"]
    assert [v.replicates for v in (same, flipped, seen, absent)] == [True, False, None, None]
    assert replication_line([same, flipped, seen, absent]).startswith(
        "**Replication:** 1 of the 3 counted claims tested here give the same raw verdict")
    assert "not: `b` holds → inconclusive; 1 not replicated" in replication_line(
        [same, flipped, seen, absent])


def test_show_counts_the_replication_cells_apart(published, capsys):
    assert main(["show", str(published / "suites" / "r.yaml")]) == 0
    assert capsys.readouterr().out.startswith(
        "reg [smoke]: 6 cells (and 3 on the replication seeds: --seeds replicate), arms:")
