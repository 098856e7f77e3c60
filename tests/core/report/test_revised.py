"""Published confirmation cells are immutable: a rerun that changes a cell's values keeps
the record it replaces in the store, and a republished page marks every claim that reads
the cell revised, beside the verdict it published before; values that come back the same
revise nothing; the suite's ``revised:`` list shows under "Revised verdicts"."""

import csv
import hashlib
import json
import sqlite3

from geobench.claims.registration import claim_digests
from geobench.cli import main
from geobench.contract.manager import registry
from geobench.records import CellResult
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from tests.core.claims.test_registration import SUITE


def _write(store: Store, loaded, cell, value: float) -> None:
    store.write(cell, CellResult(cell.id, "complete", finals={"nccc.accuracy": value},
                                 series=[("main", "nccc.accuracy", 30, value)],
                                 claims=claim_digests(loaded.suite)), {})


def _publish(tmp_path) -> dict:
    assert main(["leaderboard", str(tmp_path / "r.yaml"), "--store",
                 str(tmp_path / "db.sqlite"), "--out", str(tmp_path / "board")]) == 0
    return json.loads((tmp_path / "board" / "reg.json").read_text())


def _claim(record: dict) -> dict:
    return next(s for s in record["claims"] if s["seeds"] == "confirm")["claims"][0]


def test_a_rerun_that_changes_a_published_cell_marks_its_claims_revised(tmp_path, capsys):
    (tmp_path / "r.yaml").write_text(SUITE)
    loaded = load_suite(tmp_path / "r.yaml")
    cells = Study(loaded, registry()).cells
    store = Store(tmp_path / "db.sqlite")
    for cell in cells:  # nccc > 0.1 in every seed: holds
        _write(store, loaded, cell, 0.5 + 0.01 * cell.trial_seed % 7)
    store.close()
    first = _claim(_publish(tmp_path))
    assert (first["verdict"], first["revised"]) == ("holds", None)

    confirm = next(c for c in cells if c.trial_seed == 101)
    store = Store(tmp_path / "db.sqlite")
    _write(store, loaded, confirm, 0.5 + 0.01 * 101 % 7)  # the same values: no revision
    store.close()
    assert _claim(_publish(tmp_path))["revised"] is None

    store = Store(tmp_path / "db.sqlite")
    _write(store, loaded, confirm, 0.05)  # a rerun that changed the cell after publication
    store.close()
    with sqlite3.connect(tmp_path / "db.sqlite") as db:  # both records kept
        kept = db.execute("SELECT cell, status, finals FROM revisions").fetchall()
    assert [(c, s, json.loads(f)) for c, s, f in kept] == [
        (confirm.id, "complete", [["nccc.accuracy", 0.5 + 0.01 * 101 % 7]])] * 2
    for _ in range(2):  # and again: a revision stays one
        claim = _claim(_publish(tmp_path))
        assert claim["revised"] == (f"1 of the cells it reads changed after the page "
                                    f"published them: {confirm.id}")
        assert (claim["revised_from"], claim["verdict_holm"]) == ("holds", None)
    page = (tmp_path / "board" / "reg.md").read_text()
    assert "↻" in page and "— (revised)" in page and "**Revised: 1**↻" in page
    assert f"↻ revised after publication, `above`: holds before, {claim['verdict']} now" in page
    with (tmp_path / "board" / "reg_cells.csv").open(newline="") as fh:
        rows = {r["cell"]: r for r in csv.DictReader(fh)}
    assert rows[confirm.id]["values"] != rows[confirm.id]["published"]
    assert sum(r["values"] != r["published"] for r in rows.values()) == 1
    assert main(["verify", str(tmp_path / "board" / "reg.md")]) == 0, capsys.readouterr().out


def test_the_suites_record_of_revised_verdicts_is_on_its_page(tmp_path):
    text = SUITE + """revised:
  - {id: above, page: reg, before: "Holm: inconclusive", after: "Holm: holds",
     reason: "diverged cells ran again", commit: d16ed29}
"""
    (tmp_path / "r.yaml").write_text(text)
    Store(tmp_path / "db.sqlite").close()
    _publish(tmp_path)
    page = (tmp_path / "board" / "reg.md").read_text()
    assert "## Revised verdicts\n" in page
    assert "- `above`: Holm: inconclusive → Holm: holds (diverged cells ran again; d16ed29)" \
        in page


def test_verify_finds_a_counted_claim_that_reads_a_revised_cell(tmp_path, capsys):
    (tmp_path / "r.yaml").write_text(SUITE)
    loaded = load_suite(tmp_path / "r.yaml")
    store = Store(tmp_path / "db.sqlite")
    for cell in Study(loaded, registry()).cells:
        _write(store, loaded, cell, 0.5 + 0.01 * cell.trial_seed % 7)
    store.close()
    _publish(tmp_path)
    path = tmp_path / "board" / "reg_cells.csv"
    with path.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    rows[-1]["published"] = "0" * 16  # as if the cell's values had changed since
    with path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    record = json.loads((tmp_path / "board" / "reg.json").read_text())
    record["sha256"][path.name] = hashlib.sha256(path.read_bytes()).hexdigest()
    (tmp_path / "board" / "reg.json").write_text(json.dumps(record))
    assert main(["verify", str(tmp_path / "board" / "reg.md")]) == 1
    assert (f"INCONSISTENT: reg_cells.csv: claim above: cell {rows[-1]['cell']} changed after "
            "the page published it, yet the claim counts (it reads revised)") in \
        capsys.readouterr().out
