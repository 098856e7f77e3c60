"""Retired claims: a claim removed after a published verdict stays in its suite's
``retired:`` list and on the page with the verdict it last had there; a page is not
rewritten while a claim with a verdict on it is neither a claim nor retired."""

import json

from geobench.cli import main
from tests.core.claims.test_registration import LOSS, SUITE

RETIRED = """\
retired:
  - id: loss
    statement: s
    reason: "the training loss is positive by construction"
    commit: 0123abc
    verdicts: {reg: "holds, p = 0.001; Holm holds"}
"""


def _publish(tmp_path, capsys, text: str, command: str = "leaderboard") -> tuple[int, str]:
    (tmp_path / "r.yaml").write_text(text)
    args = [command, str(tmp_path / "r.yaml"), "--store", str(tmp_path / "db.sqlite"),
            "--out", str(tmp_path / "board")]
    code = main(args + (["--quiet"] if command == "run" else []))
    return code, capsys.readouterr().err


def test_a_claim_removed_after_its_verdict_is_kept_as_retired(tmp_path, capsys):
    assert _publish(tmp_path, capsys, SUITE + LOSS, "run")[0] == 0
    page = tmp_path / "board" / "reg.md"
    published = page.read_bytes()

    code, err = _publish(tmp_path, capsys, SUITE)  # the claim deleted
    assert code == 2 and len(err.splitlines()) == 1
    assert err.startswith(f"{page}: claim 'loss' has a published verdict there; keep it in ")
    assert "or move it to retired: (id, statement, reason, commit, verdicts)" in err
    assert page.read_bytes() == published
    code, err = _publish(tmp_path, capsys, SUITE, "run")  # refused before any cell trains
    assert code == 2 and "claim 'loss' has a published verdict" in err

    assert _publish(tmp_path, capsys, SUITE + RETIRED)[0] == 0
    text = page.read_text()
    assert "## Retired claims" in text
    assert "| `loss`  | s           | the training loss is positive by construction | " \
           "`0123abc`    | holds, p = 0.001; Holm holds |" in text
    record = json.loads((tmp_path / "board" / "reg.json").read_text())
    assert record["retired"] == [{"id": "loss", "statement": "s", "reason": "the training "
                                  "loss is positive by construction", "commit": "0123abc",
                                  "verdict": "holds, p = 0.001; Holm holds"}]
    assert [c["id"] for c in record["claims"][0]["claims"]] == ["above"]
    assert main(["claims", str(tmp_path / "r.yaml"), "--store", str(tmp_path / "db.sqlite")]) \
        == 0
    assert capsys.readouterr().out.endswith(
        "Retired claims (removed after a published verdict; outside every count and family):\n"
        "loss (removed in 0123abc): the training loss is positive by construction. Last "
        "verdicts: reg: holds, p = 0.001; Holm\n  holds\n")


def test_a_retired_id_that_is_a_claim_is_refused(tmp_path, capsys):
    (tmp_path / "r.yaml").write_text(SUITE + LOSS + RETIRED)
    assert main(["validate", str(tmp_path / "r.yaml")]) == 2
    err = capsys.readouterr().err
    assert "claim id 'loss' appears twice; claim ids are unique, retired ones included" in err


def test_every_claim_of_a_shipped_page_is_kept_or_retired_in_its_suite():
    from pathlib import Path

    from geobench.suite import load_suite

    root = Path(__file__).resolve().parents[3]
    for record in sorted((root / "leaderboards").glob("*.json")):
        page = json.loads(record.read_text())
        suite = load_suite(root / "suites" / f"{page['suite']}.yaml").suite
        kept = {c.id for c in suite.claims} | {r.id for r in suite.retired}
        shown = {c["id"] for section in page["claims"] for c in section["claims"]}
        assert shown <= kept, (record.name, sorted(shown - kept))
