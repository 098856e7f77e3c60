"""A page is never overwritten from another store (unless forced), and a rewrite removes
the files of its earlier write that it no longer writes, and nothing else."""

import json
import sqlite3

import pytest

from geobench.cli import main
from geobench.contract.manager import registry
from geobench.publish.output import OutputError
from geobench.records import CellResult
from geobench.report.leaderboard import render
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import load_suite
from tests.core.site.helpers import publish


def _files(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def _other_store(root, name="other.sqlite"):
    """A second store beside the first, holding every cell of the suite (accuracy 0.6)."""
    loaded = load_suite(root / "suites" / "tiny.yaml")
    store = Store(root / name)
    for cell in Study(loaded, registry()).cells:
        store.write(cell, CellResult(cell.id, "complete", finals={"nccc.accuracy": 0.6}), {})
    return loaded, store


def test_a_second_store_is_refused_and_force_overwrites(tmp_path, monkeypatch, capsys):
    folder, _ = publish(tmp_path)  # tiny.md from db.sqlite
    before = _files(folder)
    loaded, store = _other_store(tmp_path)
    with pytest.raises(OutputError) as refused:
        render(Study(loaded, registry()), store, folder / "tiny.md")
    with sqlite3.connect(tmp_path / "db.sqlite") as db:  # the first store's id, read directly
        first = db.execute("SELECT value FROM meta WHERE key = 'id'").fetchone()[0]
    assert str(refused.value) == (
        f"{folder / 'tiny.md'}: written from another store (db.sqlite, id {first[:12]}); "
        "publish this store's (other.sqlite) elsewhere with --out, or overwrite it with "
        "--force")
    assert _files(folder) == before  # nothing of the first page lost

    monkeypatch.chdir(tmp_path)  # the command refuses in one line, exit 2
    assert main(["leaderboard", "suites/tiny.yaml", "--store", "other.sqlite",
                 "--out", "leaderboards/tiny.md"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "written from another store (db.sqlite, id" in err
    assert _files(folder) == before

    assert main(["leaderboard", "suites/tiny.yaml", "--store", "other.sqlite",
                 "--out", "leaderboards/tiny.md", "--force"]) == 0
    record = json.loads((folder / "tiny.json").read_text())
    assert record["store"]["name"] == "other.sqlite" and record["store"]["id"] != first
    assert "|           0.2  | **0.6 ± 0 (n=4)** |" in (folder / "tiny.md").read_text()


def test_the_store_that_wrote_a_page_rewrites_it(tmp_path):
    folder, db = publish(tmp_path)
    loaded = load_suite(tmp_path / "suites" / "tiny.yaml")
    store = Store(db, read_only=True)
    render(Study(loaded, registry()), store, folder / "tiny.md")
    record = json.loads((folder / "tiny.json").read_text())
    assert record["store"] == {"id": store.identity(), "name": "db.sqlite",
                               "path": "../db.sqlite"}
    assert len(record["store"]["id"]) == 32


def test_a_run_with_a_new_store_is_refused_before_any_cell_trains(tmp_path, monkeypatch,
                                                                 capsys):
    folder, _ = publish(tmp_path)
    before = _files(folder)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "suites/tiny.yaml", "--store", "new.sqlite", "--quiet"]) == 2
    assert "leaderboards/tiny.md: written from another store (db.sqlite, id" \
        in capsys.readouterr().err
    assert not (tmp_path / "new.sqlite").exists() and _files(folder) == before


def test_a_store_made_anew_at_the_same_path_republishes_its_page(tmp_path, monkeypatch):
    folder, db = publish(tmp_path)
    db.unlink()  # the store that wrote the page is gone; a new one takes its place
    loaded, other = _other_store(tmp_path, "db.sqlite")
    first = json.loads((folder / "tiny.json").read_text())["store"]["id"]
    assert other.identity() != first
    render(Study(loaded, registry()), other, folder / "tiny.md")
    assert json.loads((folder / "tiny.json").read_text())["store"]["id"] == other.identity()
    assert "|           0.2  | **0.6 ± 0 (n=4)** |" in (folder / "tiny.md").read_text()


def test_a_rewrite_removes_its_stale_figures_and_keeps_other_files(tmp_path):
    folder, db = publish(tmp_path)
    suite = tmp_path / "suites" / "tiny.yaml"
    assert (folder / "tiny_nccc.accuracy.png").is_file()
    (folder / "notes.txt").write_text("mine")
    (folder / "tiny_extra.png").write_text("a file no record names")
    loaded, other = _other_store(tmp_path)  # another page in the same folder
    render(Study(loaded, registry()), other, folder / "other.md")
    others = {n: b for n, b in _files(folder).items() if n.startswith("other")}
    suite.write_text(suite.read_text().replace("  plots: [nccc.accuracy]\n", ""))
    store = Store(db, read_only=True)
    render(Study(load_suite(suite), registry()), store, folder / "tiny.md")
    names = set(_files(folder))
    assert "tiny_nccc.accuracy.png" not in names  # the figure the page no longer draws
    assert {"notes.txt", "tiny_extra.png", "tiny.md", "tiny.json", "tiny.csv",
            "tiny_claims.csv"} <= names
    assert {n: b for n, b in _files(folder).items() if n.startswith("other")} == others
    record = json.loads((folder / "tiny.json").read_text())
    assert "tiny_nccc.accuracy.png" not in record["files"] and "tiny.md" in record["files"]
    assert sorted(record["files"]) == sorted(n for n in names if n.startswith("tiny")
                                             and n != "tiny_extra.png")


def test_a_store_far_from_its_page_is_recorded_by_id_and_name_only(tmp_path):
    folder, db = publish(tmp_path)
    loaded = load_suite(tmp_path / "suites" / "tiny.yaml")
    far = tmp_path / "pub" / "deep"
    render(Study(loaded, registry()), Store(db, read_only=True), far / "tiny.md")
    record = json.loads((far / "tiny.json").read_text())
    assert record["store"]["path"] is None and record["store"]["name"] == "db.sqlite"
    assert str(tmp_path) not in (far / "tiny.json").read_text()


def test_a_json_beside_the_page_that_is_no_record_of_it_removes_nothing(tmp_path):
    folder, db = publish(tmp_path)
    (folder / "tiny.md").unlink()
    (folder / "keep.txt").write_text("mine")
    (folder / "tiny.json").write_text(json.dumps({"files": ["keep.txt"], "store": {}}))
    loaded = load_suite(tmp_path / "suites" / "tiny.yaml")
    render(Study(loaded, registry()), Store(db, read_only=True), folder / "tiny.md")
    assert (folder / "keep.txt").read_text() == "mine"
    assert json.loads((folder / "tiny.json").read_text())["page"] == "tiny.md"
