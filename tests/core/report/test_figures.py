"""The figure commands' options and read helper (geobench.figures, reading through
geobench.report.stored) on a real store."""

import argparse
import sqlite3
from dataclasses import replace

import pytest

import geobench.report.stored as figures
from geobench.contract.manager import registry
from geobench.figures import figure_folder, figure_options, figure_path
from geobench.figures import read_stored as read_args
from geobench.records import DEFAULT_STORE, CellResult
from geobench.run.store import Store, StoreError
from geobench.study import Study
from geobench.suite import load_suite
from tests.core.suite_text import small_suite


def figure_parser(description: str = "doc", out_help: str = "PNG path",
                  out_required: bool = False) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="geobench x-figures")
    figure_options(parser, description, out_help, out_required)
    return parser


def read_stored(suite, profile="smoke", store=DEFAULT_STORE, series=(), argv=()):
    """``geobench.figures.read_stored`` on the options a figure command parses."""
    args = figure_parser().parse_args([str(suite), "--profile", profile, "--store",
                                       str(store), *argv])
    return read_args(args, series)


class SpyStore(Store):
    """A Store that remembers every instance the helper opens."""

    opened: list["SpyStore"] = []

    def __init__(self, path, read_only=False):
        super().__init__(path, read_only)
        SpyStore.opened.append(self)


def closed(store: Store) -> bool:
    try:
        store.db.execute("SELECT 1")
    except sqlite3.ProgrammingError:  # "Cannot operate on a closed database"
        return True
    return False


@pytest.fixture
def stored(tmp_path):
    """The small suite (lr 0.05 and 0.1 x trial seeds 0 and 1) with three of its four cells
    stored: lr 0.05 complete, lr 0.1 seed 0 complete, lr 0.1 seed 1 failed."""
    suite = tmp_path / "s.yaml"
    suite.write_text(small_suite(steps=5, lrs=(0.05, 0.1)))
    cells = Study(load_suite(suite), registry(), "smoke").cells
    db = tmp_path / "db.sqlite"
    store = Store(db)
    for cell in cells:
        lr, seed = cell.varied["optimizer.lr"], cell.trial_seed
        if (lr, seed) == (0.1, 1):
            store.write(cell, CellResult(cell.id, "failed", error="boom",
                                         series=[("main", "loss.train", 0, 9.0)]), {})
            continue
        series = [("main", "loss.train", step, lr * 10 + seed + step) for step in (4, 0)]
        series.append(("main", "nccc.accuracy", 4, 0.5 + seed))
        store.write(cell, CellResult(cell.id, "complete", series=series,
                                     finals={"loss.train": lr * 10 + seed + 4}), {})
    store.close()
    return suite, db


def test_read_returns_the_suites_cells_with_their_stored_rows(stored):
    suite, db = stored
    got = read_stored(suite, "smoke", db, series=["loss.train"])
    assert got.name == got.stem == "small" and got.profile == "smoke"
    # another profile's figures are named as its leaderboard is: <suite>_<profile>
    assert replace(got, profile="mid").stem == "small_mid"
    settings = sorted((c.varied["optimizer.lr"], c.trial_seed) for c in got.cells)
    assert settings == [(0.05, 0), (0.05, 1), (0.1, 0), (0.1, 1)]
    by_setting = {(c.varied["optimizer.lr"], c.trial_seed): c.id for c in got.cells}
    assert set(got.rows) == set(by_setting.values())  # every cell was written
    assert got.rows[by_setting[(0.1, 1)]]["status"] == "failed"
    assert got.rows[by_setting[(0.1, 1)]]["error"] == "boom"
    assert got.finals() == {by_setting[(0.05, 0)]: {"loss.train": 4.5},
                            by_setting[(0.05, 1)]: {"loss.train": 5.5},
                            by_setting[(0.1, 0)]: {"loss.train": 5.0}}
    assert got.finals("failed") == {by_setting[(0.1, 1)]: {}}
    # only the series asked for, of every stored cell, ordered by step
    assert all(metric == "loss.train" for _, _, metric, _, _ in got.series)
    assert [step for *_, step, _ in got.series] == [0, 0, 0, 0, 4, 4, 4]
    assert sorted((cell, step, value) for cell, _, _, step, value in got.series) == sorted([
        (by_setting[(0.05, 0)], 0, 0.5), (by_setting[(0.05, 0)], 4, 4.5),
        (by_setting[(0.05, 1)], 0, 1.5), (by_setting[(0.05, 1)], 4, 5.5),
        (by_setting[(0.1, 0)], 0, 1.0), (by_setting[(0.1, 0)], 4, 5.0),
        (by_setting[(0.1, 1)], 0, 9.0)])
    assert read_stored(suite, "smoke", db).series == []


def test_cells_not_in_the_store_have_no_row(stored, tmp_path):
    suite, db = stored
    con = sqlite3.connect(db)
    with con:
        (gone,) = con.execute("SELECT id FROM cells WHERE status = 'failed'").fetchone()
        con.execute("DELETE FROM series WHERE cell = ?", (gone,))
        con.execute("DELETE FROM cells WHERE id = ?", (gone,))
    con.close()
    got = read_stored(suite, store=db, series=["loss.train"])
    assert len(got.cells) == 4 and len(got.rows) == 3 and gone not in got.rows
    assert gone in {c.id for c in got.cells}
    assert gone not in {row[0] for row in got.series}


def test_the_store_is_closed_when_read_returns_or_fails(stored, monkeypatch):
    suite, db = stored
    SpyStore.opened = []
    monkeypatch.setattr(figures, "Store", SpyStore)
    read_stored(suite, store=db, series=["loss.train"])
    assert len(SpyStore.opened) == 1 and closed(SpyStore.opened[0])

    def broken(self, ids, metric=None):
        raise StoreError(f"{self.path}: results store: corrupt")

    monkeypatch.setattr(SpyStore, "series", broken)
    with pytest.raises(StoreError, match="corrupt"):
        read_stored(suite, store=db, series=["loss.train"])
    assert len(SpyStore.opened) == 2 and closed(SpyStore.opened[1])


def test_a_missing_store_is_an_error_and_is_not_created(stored, tmp_path):
    suite, _ = stored
    with pytest.raises(StoreError, match="no such file"):
        read_stored(suite, store=tmp_path / "none" / "db.sqlite")
    assert not (tmp_path / "none").exists()


def test_reading_changes_nothing_in_the_store_file(stored, tmp_path):
    suite, db = stored
    before = db.read_bytes()
    read_stored(suite, store=db, series=["loss.train"])
    assert db.read_bytes() == before
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")  # not a store: refused, and not turned into one
    with pytest.raises(StoreError):
        read_stored(suite, store=empty)
    assert empty.read_bytes() == b""


def test_set_and_only_select_the_cells_as_claims_does(stored):
    suite, db = stored
    kept = read_stored(suite, store=db, series=["loss.train"], argv=["--only",
                                                                      "optimizer.lr=0.1"])
    assert sorted(c.varied["optimizer.lr"] for c in kept.cells) == [0.1, 0.1]
    assert set(kept.rows) == {c.id for c in kept.cells}
    moved = read_stored(suite, store=db, argv=["--set", "train.steps=6"])
    assert len(moved.cells) == 4 and moved.rows == {}  # other cells: none of them stored


def test_the_shared_options_match_geobench(tmp_path):
    assert DEFAULT_STORE == "results/geobench.sqlite"  # geobench's own --store default
    ap = figure_parser()
    args = ap.parse_args(["s.yaml"])
    assert (args.suite, args.profile, args.store, args.out) == ("s.yaml", "smoke",
                                                                DEFAULT_STORE, None)
    assert (args.set, args.only, args.cell_limit, ap.description) == ([], [], None, "doc")
    args = ap.parse_args(["s.yaml", "--profile", "full", "--store", "a/b.sqlite",
                          "--out", "o.png"])
    assert (args.profile, args.store, str(args.out)) == ("full", "a/b.sqlite", "o.png")
    with pytest.raises(SystemExit):
        figure_parser(out_required=True).parse_args(["s.yaml"])
    # figures go where `geobench leaderboard` writes by default: leaderboards/ by the store
    assert str(figure_folder("results/geobench.sqlite")) == "results/leaderboards"
    assert str(figure_folder("db.sqlite")) == "leaderboards"


def test_out_is_the_figures_folder():
    stored = argparse.Namespace(stem="s_mid")
    at = figure_parser().parse_args
    assert str(figure_path(at(["s.yaml", "--store", "r/db.sqlite"]), stored, "loss")) == \
        "r/leaderboards/s_mid_loss.png"
    assert str(figure_path(at(["s.yaml", "--out", "figs"]), stored, "loss")) == \
        "figs/s_mid_loss.png"
    assert str(figure_path(at(["s.yaml", "--out", "figs/one.png"]), stored, "loss")) == \
        "figs/one.png"
