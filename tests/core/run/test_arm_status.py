"""Each arm's status from the run to every reader: a cell complete with one arm diverged
keeps that arm's status in the store; results, claims and the leaderboard leave out only
that arm's values; a store written before arms had statuses reads each arm as its cell."""

import csv
import json
import sqlite3

from geobench.cli import main
from geobench.contract.manager import registry
from geobench.records import ArmStatus, CellResult
from geobench.report.results import result_rows
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from tests.core.suite_text import small_suite

CLAIMS = """\
claims:
  - {id: good_learns, statement: the good arm classifies, metric: nccc.accuracy,
     where: {arm: good}, expect: "> 0.4"}
  - {id: bad_learns, statement: the bad arm classifies, metric: nccc.accuracy,
     where: {arm: bad}, expect: "> 0.4"}
  - {id: good_beats_bad, statement: the good arm classifies better, metric: nccc.accuracy,
     compare: {arm: [good, bad]}, expect: "a > b"}
arms:
  good: {}
  bad: {objective: {name: toy_ce_nan_at, at: 13}}
"""


def _suite(tmp_path):
    text = small_suite(steps=30, lrs=(0.1,)).replace("seeds: 2", "seeds: 3")
    text = text.replace("every: 10", "every: 5").replace("rows: [optimizer.lr]", "rows: [arm]")
    (tmp_path / "arms.yaml").write_text(text + CLAIMS)
    return tmp_path / "arms.yaml"


def test_one_diverged_arm_leaves_out_its_own_values_only(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    _suite(tmp_path)
    assert main(["run", "arms.yaml", "--store", "s.sqlite", "--out", "board.md"]) == 0
    out = capsys.readouterr()
    assert "3 run (3 complete, 0 diverged, 0 failed)" in out.out
    assert "arm bad diverged at step 13: non-finite loss nan at step 13 (arm bad)" in out.err

    assert main(["results", "arms.yaml", "--store", "s.sqlite", "--json"]) == 0
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["status"] for r in records] == ["complete"] * 3
    assert {json.dumps(r["arms"], sort_keys=True) for r in records} == {json.dumps({
        "bad": {"error": "non-finite loss nan at step 13 (arm bad)", "status": "diverged",
                "step": 13},
        "good": {"error": None, "status": "complete", "step": None}}, sort_keys=True)}
    assert main(["results", "arms.yaml", "--store", "s.sqlite"]) == 0
    assert capsys.readouterr().out.count("complete (diverged: bad at step 13)") == 3

    rows = result_rows(tmp_path / "s.sqlite")
    assert {(r["arm"], r["status"]) for r in rows} == {("good", "complete"),
                                                        ("bad", "diverged")}

    assert main(["claims", "arms.yaml", "--store", "s.sqlite", "--json"]) == 0
    claims = {c["id"]: c for c in map(json.loads, capsys.readouterr().out.splitlines())}
    assert (claims["good_learns"]["n"], claims["good_learns"]["excluded"]) == (3, 0)
    assert claims["good_learns"]["verdict"] == "holds"
    for cid in ("bad_learns", "good_beats_bad"):
        assert (claims[cid]["n"], claims[cid]["excluded"]) == (0, 3)
        assert claims[cid]["verdict"] == "insufficient"

    board = (tmp_path / "board.md").read_text()
    assert "- cells: 3 (3 complete; arm diverged in a complete cell: bad in 3); " in board
    assert json.loads((tmp_path / "board.json").read_text())["arms_diverged"] == {"bad": 3}
    with open(tmp_path / "board_claims.csv") as fh:
        units = list(csv.DictReader(fh))
    assert sorted((u["claim"], u["arm"], u["excluded"]) for u in units) == sorted(
        [("good_learns", "good", "")] * 3 + [("bad_learns", "bad", "diverged")] * 3
        + [("good_beats_bad", "good-bad", "diverged")] * 3)
    table = board[board.index("| arm "):].split("\n\n")[0].splitlines()
    cells = {row.split("|")[1].strip(): row.split("|")[2:4] for row in table[2:]}
    assert [c.strip().endswith("(n=3)") for c in cells["good"]] == [True, True]
    assert [c.strip() for c in cells["bad"]] == ["— †3", "— †3"]


def test_a_store_without_arm_statuses_reads_each_arm_as_its_cell(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    path = _suite(tmp_path)
    assert main(["run", "arms.yaml", "--store", "s.sqlite", "--no-leaderboard",
                 "--quiet"]) == 0
    with sqlite3.connect(tmp_path / "s.sqlite") as con:  # as a store of before
        first = con.execute("SELECT id FROM cells ORDER BY seed").fetchone()[0]
        con.execute("UPDATE cells SET status = 'diverged' WHERE id = ?", (first,))
        con.execute("DROP TABLE arms")
    cells = Study(load_suite(path), registry()).cells
    old = Store(tmp_path / "s.sqlite", read_only=True)
    rows = old.cells([c.id for c in cells])
    old.close()
    assert {cid: {n: a.status for n, a in row["arms"].items()} for cid, row in rows.items()} \
        == {c.id: dict.fromkeys(["good", "bad"], "diverged" if c.id == first else "complete")
            for c in cells}
    assert {r["status"] for r in result_rows(tmp_path / "s.sqlite") if r["cell"] == first} \
        == {"diverged"}
    Store(tmp_path / "s.sqlite").close()  # opened for writing: the table is added, empty
    with sqlite3.connect(tmp_path / "s.sqlite") as con:
        assert con.execute("SELECT count(*) FROM arms").fetchone() == (0,)
    assert main(["run", "arms.yaml", "--store", "s.sqlite", "--no-leaderboard", "--quiet",
                 "--rerun-diverged"]) == 0
    again = Store(tmp_path / "s.sqlite", read_only=True)
    rows = again.cells([c.id for c in cells])
    again.close()
    assert rows[first]["status"] == "complete"
    assert rows[first]["arms"]["bad"].status == "diverged"
    assert rows[first]["arms"]["bad"].step == 13


def test_a_failed_cell_fails_every_arm_even_one_that_diverged(tmp_path):
    cell = Study(load_suite(_suite(tmp_path)), registry()).cells[0]
    store = Store(tmp_path / "s.sqlite")
    store.write(cell, CellResult(cell.id, "failed", "boom", arms={
        "bad": ArmStatus("diverged", 13, "non-finite loss nan")}), {})
    assert {n: a.status for n, a in store.cells([cell.id])[cell.id]["arms"].items()} == {
        "good": "failed", "bad": "failed"}  # a rerun retries the whole cell
    store.close()
