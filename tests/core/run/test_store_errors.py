"""A locked, corrupt, read-only, full or unopenable store is one line and exit 2; the
store file is never truncated or rewritten."""

import hashlib
import multiprocessing
import sqlite3

import pytest

import geobench.run.store
from geobench.cli import main
from geobench.contract.manager import registry
from geobench.records import CellResult, Status
from geobench.run.store import Store, StoreError
from geobench.study import Study
from geobench.suite import load_suite
from tests.core.suite_text import small_suite


@pytest.fixture
def suite(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "suite.yaml").write_text(small_suite(steps=5, lrs=(0.1,)))
    return tmp_path


def _digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _one_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [ln for ln in err.strip().splitlines() if not ln.startswith("warning: plugin")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _filled_store(path) -> None:
    assert main(["run", "suite.yaml", "--store", str(path), "--quiet",
                 "--no-leaderboard"]) == 0


def test_a_file_that_is_not_a_database_is_left_byte_identical(suite, capsys):
    bad = suite / "db.sqlite"
    bad.write_bytes(bytes(range(256)) * 64)
    before = _digest(bad)
    assert main(["run", "suite.yaml", "--store", "db.sqlite"]) == 2
    assert _one_line(capsys) == ("db.sqlite: results store: not a SQLite database (corrupt, "
                                 "or another kind of file); left untouched")
    assert _digest(bad) == before


def test_a_truncated_store_is_reported_and_left_byte_identical(suite, capsys):
    db = suite / "db.sqlite"
    _filled_store(db)
    with sqlite3.connect(db) as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    data = db.read_bytes()
    db.write_bytes(data[:len(data) // 2])  # a copy cut short
    for extra in ("-wal", "-shm"):
        (suite / f"db.sqlite{extra}").unlink(missing_ok=True)
    before = _digest(db)
    capsys.readouterr()
    assert main(["results", "suite.yaml", "--store", "db.sqlite"]) == 2
    assert _one_line(capsys).startswith("db.sqlite: results store: ")
    assert _digest(db) == before


def test_a_locked_store_is_one_line(suite, capsys, monkeypatch):
    db = suite / "db.sqlite"
    _filled_store(db)
    monkeypatch.setattr(geobench.run.store, "LOCK_TIMEOUT_S", 0.2)
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        capsys.readouterr()
        assert main(["run", "suite.yaml", "--store", "db.sqlite", "--rerun"]) == 2
        assert _one_line(capsys).startswith("db.sqlite: results store: locked by another process")
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_read_only_store_is_one_line_and_unchanged(suite, capsys, monkeypatch):
    db = suite / "db.sqlite"
    _filled_store(db)
    before = _digest(db)
    connect = sqlite3.connect

    def read_only(path, **kw):  # what opening a file without write permission gives
        if kw.pop("uri", False):  # a read-only open already
            return connect(path, uri=True, **kw)
        return connect(f"file:{path}?mode=ro", uri=True, **kw)

    monkeypatch.setattr(geobench.run.store.sqlite3, "connect", read_only)
    capsys.readouterr()
    assert main(["run", "suite.yaml", "--store", "db.sqlite", "--rerun"]) == 2
    assert _one_line(capsys).startswith("db.sqlite: results store: read-only")
    assert _digest(db) == before


def test_a_folder_or_an_impossible_path_is_one_line(suite, capsys):
    (suite / "adir.sqlite").mkdir()
    assert main(["run", "suite.yaml", "--store", "adir.sqlite"]) == 2
    assert _one_line(capsys).startswith("adir.sqlite: results store: cannot be opened")
    (suite / "afile").write_text("x")
    assert main(["run", "suite.yaml", "--store", "afile/db.sqlite", "--no-leaderboard"]) == 2
    assert _one_line(capsys).startswith("afile/db.sqlite: results store: cannot be created")


def test_a_full_disk_keeps_every_cell_already_stored(suite):
    cells = Study(load_suite("suite.yaml"), registry()).cells
    store = Store(suite / "db.sqlite")
    small = CellResult(cells[0].id, Status.COMPLETE, started=0.0, finished=1.0,
                       finals={"x": 1.0}, series=[("main", "x", 0, 1.0)])
    store.write(cells[0], small, {})
    pages = store.db.execute("PRAGMA page_count").fetchone()[0]
    store.db.execute(f"PRAGMA max_page_count = {pages + 2}")  # the disk fills up
    big = CellResult(cells[1].id, Status.COMPLETE, started=0.0, finished=1.0,
                     series=[("main", f"m{i}", i, float(i)) for i in range(20000)])
    with pytest.raises(StoreError, match="results store: the disk is full"):
        store.write(cells[1], big, {})
    assert store.done_ids([c.id for c in cells]) == {cells[0].id}
    assert store.cells([cells[0].id])[cells[0].id]["metrics"] == {"x": 1.0}
    store.close()


def _race(path: str, owner: str, barrier, out) -> None:
    barrier.wait()
    store = Store(path)  # every process creates the store at the same moment
    out.put(sorted(i for i in range(40) if store.lease(f"c{i}", owner, 60, since=0)))
    store.close()


def test_processes_creating_one_store_at_once_lease_each_cell_once(tmp_path):
    ctx = multiprocessing.get_context("fork")
    for trial in range(3):
        path = str(tmp_path / f"race{trial}.sqlite")
        barrier, out = ctx.Barrier(4), ctx.Queue()
        procs = [ctx.Process(target=_race, args=(path, f"o{i}", barrier, out))
                 for i in range(4)]
        for proc in procs:
            proc.start()
        got = [out.get(timeout=120) for _ in procs]
        for proc in procs:
            proc.join(timeout=60)
        assert [p.exitcode for p in procs] == [0] * 4
        assert sorted(i for leased in got for i in leased) == list(range(40))


@pytest.mark.parametrize("command", [["claims"], ["results"], ["results", "--json"],
                                     ["results", "--csv"], ["leaderboard"]])
def test_a_reader_on_a_missing_store_creates_nothing(command, suite, capsys):
    claim = ("claims:\n- {id: c, statement: s, metric: nccc.accuracy, expect: '> 0.5'}\n")
    (suite / "suite.yaml").write_text(small_suite(steps=5, lrs=(0.1,)).replace(
        "seeds: 2", "seeds: 3") + claim)
    store = suite / "mistyped" / "db.sqlite"
    assert main([command[0], "suite.yaml", "--store", str(store), *command[1:]]) == 2
    assert _one_line(capsys) == f"{store}: results store: no such file"
    assert not (suite / "mistyped").exists() and not (suite / "leaderboards").exists()
    with pytest.raises(StoreError, match="no such file"):  # the API gives the same answer
        geobench.load_results(store)
