"""SQLite results store (WAL): one row per finished cell (a failed one with its error and
traceback), each arm's status, the metrics that failed on an arm, its metric series and
finals, a lease per running cell, the store's id (``meta``), which the pages published
from it record, and the records of complete or diverged cells that a rerun replaced
(``run.revisions``).

A store written before arms had statuses of their own (no ``arms`` rows for a cell) reads
each arm as the cell's status, and one written before metrics could fail on an arm alone
(no ``metric_failures`` table) reads no such failure; writing to it adds the tables.

A cell is written in a single transaction when it finishes, so a run killed at any point
leaves either the whole cell or nothing; rerunning completes exactly the missing cells.
Before a cell runs it is leased (owner, expiry) in the store, so two runs sharing a store
run each cell once; a lease its owner has not renewed before it expires is taken over.
Every SQLite or file-system problem is raised as a one-line ``StoreError``; the store file
is never truncated or rewritten on such an error.
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal, TypeVar

from geobench.records import DONE, ArmStatus, Cell, CellResult, MetricFailure, Status
from geobench.run.revisions import SCHEMA as REVISIONS
from geobench.run.revisions import keep_replaced

SCHEMA = """
CREATE TABLE IF NOT EXISTS cells (
    id TEXT PRIMARY KEY, suite TEXT NOT NULL, profile TEXT NOT NULL, seed INTEGER,
    config TEXT NOT NULL, status TEXT NOT NULL, error TEXT, traceback TEXT,
    started REAL, finished REAL, seconds REAL, provenance TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS series (
    cell TEXT NOT NULL REFERENCES cells(id), arm TEXT NOT NULL, metric TEXT NOT NULL,
    step INTEGER NOT NULL, value REAL
);
CREATE INDEX IF NOT EXISTS series_cell ON series(cell, metric);
CREATE TABLE IF NOT EXISTS finals (
    cell TEXT NOT NULL REFERENCES cells(id), key TEXT NOT NULL, value REAL,
    PRIMARY KEY (cell, key)
);
CREATE TABLE IF NOT EXISTS leases (
    cell TEXT PRIMARY KEY, owner TEXT NOT NULL, expires REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS arms (
    cell TEXT NOT NULL REFERENCES cells(id), arm TEXT NOT NULL, status TEXT NOT NULL,
    step INTEGER, error TEXT, PRIMARY KEY (cell, arm)
);
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS metric_failures (
    cell TEXT NOT NULL REFERENCES cells(id), arm TEXT NOT NULL, metric TEXT NOT NULL,
    step INTEGER NOT NULL, error TEXT NOT NULL, traceback TEXT, PRIMARY KEY (cell, arm, metric)
);
"""
LOCK_TIMEOUT_S = 60.0
_PROBLEMS = {  # SQLite's message -> what it means for the user
    "database is locked": f"locked by another process (waited {LOCK_TIMEOUT_S:.0f} s)",
    "file is not a database": "not a SQLite database (corrupt, or another kind of file); "
                              "left untouched",
    "database disk image is malformed": "corrupt (malformed database image); left untouched",
    "attempt to write a readonly database": "read-only: make it writable or give another "
                                            "--store",
    "unable to open database file": "cannot be opened (unreadable, a folder, or its folder is "
                                    "not writable)",
    "database or disk is full": "the disk is full; nothing of the unfinished cell was written",
}
F = TypeVar("F", bound=Callable[..., Any])
# a cell no run should start again; binds the complete and diverged statuses, then
# _rerun's two values, then since
_SETTLED = "((status IN (?, ?) AND NOT ? AND status != ?) OR finished >= ?)"
Rerun = bool | Literal["diverged"]  # True: every stored cell runs again; "diverged": those


def _rerun(rerun: Rerun) -> tuple[bool, str]:
    """``_SETTLED``'s bindings for ``rerun``: rerun all, the status rerun ('' for none)."""
    return rerun is True, rerun if isinstance(rerun, str) else ""


class StoreError(RuntimeError):
    """A problem with the results store, phrased as one line naming the file."""


def _guarded(method: F) -> F:
    """Raise SQLite and file-system errors of ``method`` as a one-line ``StoreError``."""

    @functools.wraps(method)
    def call(self: Store, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (sqlite3.Error, OSError) as exc:
            if not _about_the_store(exc):
                raise
            raise StoreError(f"{self.path}: results store: {describe_store_error(exc)}") from None

    return call  # type: ignore[return-value]


def _about_the_store(exc: BaseException) -> bool:
    """SQLite's errors about the file (locked, corrupt, read-only, full) and file-system
    errors; not those of a wrong statement or binding (a bug, which keeps its traceback)."""
    return (isinstance(exc, sqlite3.OperationalError | OSError)
            or type(exc) is sqlite3.DatabaseError)


def describe_store_error(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    for problem, meaning in _PROBLEMS.items():
        if problem in text:
            return meaning
    if isinstance(exc, OSError):
        return f"cannot be created: {exc.strerror or text}"
    return f"error: {text}"


def check_exists(path: Path) -> None:
    """A store that readers open must be a file already: they never create one."""
    if not path.is_file():
        raise StoreError(f"{path}: results store: "
                         f"{'not a file' if path.exists() else 'no such file'}")


class Store:
    @_guarded
    def __init__(self, path: str | Path, read_only: bool = False) -> None:
        """Open (and create) the store at ``path``; ``read_only``: open an existing store
        for reading, creating and changing nothing (a missing store is a ``StoreError``)."""
        self.path = Path(path)
        self.db: sqlite3.Connection | None = None
        if read_only:
            check_exists(self.path)
            self.db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True,
                                      timeout=LOCK_TIMEOUT_S, isolation_level=None)
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # autocommit: every write is an explicit BEGIN IMMEDIATE (see _writing)
        self.db = sqlite3.connect(self.path, timeout=LOCK_TIMEOUT_S, isolation_level=None)
        self._use_wal()
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(f"BEGIN IMMEDIATE; {SCHEMA}{REVISIONS} COMMIT;")  # see _writing
        with self._writing():  # the store's identity, made once (a store older than it: now)
            self.db.execute("INSERT OR IGNORE INTO meta VALUES ('id', ?)", (uuid.uuid4().hex,))

    def _use_wal(self) -> None:
        """Switch to WAL. Two runs creating the store at once race here, and SQLite answers a
        busy journal-mode switch at once instead of waiting: retry until the lock timeout."""
        deadline = time.monotonic() + LOCK_TIMEOUT_S
        while True:
            try:
                self.db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """One write transaction that takes the write lock before it reads: with several
        processes writing, a deferred transaction that reads and then writes can find its
        snapshot stale and fail at once (SQLITE_BUSY_SNAPSHOT) instead of waiting."""
        self.db.execute("BEGIN IMMEDIATE")
        try:
            yield
            self.db.execute("COMMIT")
        except BaseException:
            if self.db.in_transaction:  # SQLite may have rolled back already (disk full)
                self.db.execute("ROLLBACK")
            raise

    def close(self) -> None:
        if self.db is not None:
            self.db.close()

    @_guarded
    def identity(self) -> str | None:
        """The id the store was given when it was first opened for writing (a random hex
        string, kept in its ``meta`` table): what a published page records of its store, so
        a copy or a move keeps it and another store in the same folder never has it. None
        for a store no run has written since stores had one, opened read-only."""
        if not self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'meta'").fetchone():
            return None
        row = self.db.execute("SELECT value FROM meta WHERE key = 'id'").fetchone()
        return row[0] if row else None

    @_guarded
    def done_ids(self, ids: list[str]) -> set[str]:
        """Those of ``ids`` already finished (complete or diverged)."""
        rows = self._select("SELECT id FROM cells WHERE status IN (?, ?) AND id IN ({})",
                            list(DONE), ids)
        return {r[0] for r in rows}

    @_guarded
    def write(self, cell: Cell, result: CellResult, provenance: dict[str, Any],
              owner: str | None = None) -> None:
        """Replace whatever the store holds for ``cell`` by ``result`` and release ``owner``'s
        lease on it (not a lease another run has taken over meanwhile), atomically.

        The provenance records where the cell's time went (``timing``, a ``Timing``: what
        ``geobench.run.calibrate.measured`` prices from) and keeps ``claims`` and
        ``registration``, the claim definitions and the registration's sha256 in force when
        the cell's values were first stored: a rerun of a complete or diverged cell keeps
        the earlier record (or its lack), since its values were already there to see."""
        prov = {**provenance, "device": result.device, "threads": result.threads,
                "batch_digest": result.batch_digest, "peak_mb": result.peak_mb,
                "timing": asdict(result.timing)}
        with self._writing():
            prior = self.db.execute("SELECT status, provenance FROM cells WHERE id = ?",
                                    (cell.id,)).fetchone()
            first = json.loads(prior[1]) if prior and prior[0] in DONE else \
                {"claims": result.claims, "registration": result.registration}
            prov.update({k: first[k] for k in ("claims", "registration")
                         if first.get(k) is not None})
            if prior and prior[0] in DONE:
                keep_replaced(self.db, cell.id, time.time())
            self.db.execute("DELETE FROM series WHERE cell = ?", (cell.id,))
            self.db.execute("DELETE FROM finals WHERE cell = ?", (cell.id,))
            self.db.execute("DELETE FROM arms WHERE cell = ?", (cell.id,))
            self.db.execute("DELETE FROM metric_failures WHERE cell = ?", (cell.id,))
            self.db.execute("DELETE FROM cells WHERE id = ?", (cell.id,))
            self.db.execute(
                "INSERT INTO cells VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                (cell.id, cell.suite, cell.profile, cell.trial_seed, json.dumps(cell.config()),
                 str(result.status), result.error, result.traceback, result.started,
                 result.finished, result.finished - result.started, json.dumps(prov)))
            self.db.executemany("INSERT INTO series VALUES (?,?,?,?,?)",
                                [(cell.id, *row) for row in result.series])
            self.db.executemany("INSERT INTO finals VALUES (?,?,?)",
                                [(cell.id, k, v) for k, v in result.finals.items()])
            failed = str(result.status) == Status.FAILED.value  # a rerun retries every arm
            arms = {name: ArmStatus(str(result.status)) if failed
                    else result.arms.get(name, ArmStatus(str(result.status)))
                    for name in cell.arms}
            self.db.executemany("INSERT INTO arms VALUES (?,?,?,?,?)",
                                [(cell.id, name, str(a.status), a.step, a.error)
                                 for name, a in arms.items()])
            self.db.executemany("INSERT INTO metric_failures VALUES (?,?,?,?,?,?)",
                                [(cell.id, f.arm, f.metric, f.step, f.error, f.traceback)
                                 for f in result.metric_failures])
            self.db.execute("DELETE FROM leases WHERE cell = ? AND owner = ?", (cell.id, owner))

    @_guarded
    def lease(self, cell_id: str, owner: str, timeout: float, since: float,
              rerun: Rerun = False) -> bool:
        """Take the lease of ``cell_id`` for ``owner`` until ``timeout`` seconds from now, in
        one statement (so two runs never both get it): only if the cell is not settled (see
        ``settled``) and no other owner holds an unexpired lease. True if ``owner`` holds it."""
        now = time.time()
        with self._writing():
            cur = self.db.execute(
                "INSERT INTO leases (cell, owner, expires) SELECT ?, ?, ? WHERE NOT EXISTS "
                f"(SELECT 1 FROM cells WHERE id = ? AND {_SETTLED}) "
                "ON CONFLICT(cell) DO UPDATE SET owner = excluded.owner, "
                "expires = excluded.expires "
                "WHERE leases.owner = excluded.owner OR leases.expires < ?",
                (cell_id, owner, now + timeout, cell_id, *DONE, *_rerun(rerun), since, now))
        return cur.rowcount == 1

    @_guarded
    def settled(self, ids: list[str], since: float, rerun: Rerun = False) -> set[str]:
        """Those of ``ids`` no run should start again: finished as complete or diverged
        (unless ``rerun`` is True, or names their status), or finished in any status at or
        after ``since`` (by another run sharing the store: a failure is not retried by every
        run at once)."""
        rows = self._select(f"SELECT id FROM cells WHERE {_SETTLED} AND id IN ({{}})",
                            [*DONE, *_rerun(rerun), since], ids)
        return {r[0] for r in rows}

    @_guarded
    def hand_over(self, cell_id: str, owner: str, to: str, timeout: float) -> bool:
        """Pass ``owner``'s lease of ``cell_id`` to ``to`` until ``timeout`` seconds from now;
        False (and nothing changed) when ``owner`` no longer holds it."""
        with self._writing():
            cur = self.db.execute("UPDATE leases SET owner = ?, expires = ? "
                                  "WHERE cell = ? AND owner = ?",
                                  (to, time.time() + timeout, cell_id, owner))
        return cur.rowcount == 1

    @_guarded
    def renew(self, owner: str, timeout: float) -> None:
        """Heartbeat: extend every lease ``owner`` holds to ``timeout`` seconds from now."""
        with self._writing():
            self.db.execute("UPDATE leases SET expires = ? WHERE owner = ?",
                            (time.time() + timeout, owner))

    @_guarded
    def release(self, owner: str) -> None:
        """Give up every lease ``owner`` still holds (its cells did not finish)."""
        with self._writing():
            self.db.execute("DELETE FROM leases WHERE owner = ?", (owner,))

    @_guarded
    def leases(self, ids: list[str]) -> dict[str, tuple[str, float]]:
        """Current leases of ``ids``: cell -> (owner, expiry time)."""
        rows = self._select("SELECT cell, owner, expires FROM leases WHERE cell IN ({})",
                            [], ids)
        return {r[0]: (r[1], r[2]) for r in rows}

    @_guarded
    def cells(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """Stored rows of ``ids`` with their finals: id -> {status, error, config, ...}."""
        rows = self._select("SELECT id, status, error, config, provenance, seconds, started, "
                            "finished FROM cells WHERE id IN ({})", [], ids)
        out = {r[0]: {"status": r[1], "error": r[2], "config": json.loads(r[3]),
                      "provenance": json.loads(r[4]), "seconds": r[5], "started": r[6],
                      "finished": r[7], "metrics": {}}
               for r in rows}
        for cell, key, value in self._select("SELECT cell, key, value FROM finals "
                                             "WHERE cell IN ({})", [], list(out)):
            out[cell]["metrics"][key] = math.nan if value is None else value
        arms = self.arm_statuses(list(out))
        failures = self.metric_failures(list(out))
        for cell, row in out.items():
            row["arms"] = arms.get(cell) or {
                name: ArmStatus(row["status"]) for name in row["config"]["arms"]}
            row["metric_failures"] = failures.get(cell, [])
        return out

    @_guarded
    def metric_failures(self, ids: list[str]) -> dict[str, list[MetricFailure]]:
        """The metrics that failed on an arm of those of ``ids`` that had any, by step (a
        store written before such failures were recorded has none)."""
        if not self._has("metric_failures"):
            return {}
        out: dict[str, list[MetricFailure]] = {}
        for cell, *fields in self._select(
                "SELECT cell, arm, metric, step, error, traceback FROM metric_failures "
                "WHERE cell IN ({}) ORDER BY step, arm, metric", [], ids):
            out.setdefault(cell, []).append(MetricFailure(*fields))
        return out

    @_guarded
    def tracebacks(self, ids: list[str]) -> dict[str, str]:
        """The stored traceback of each of ``ids`` that failed with one."""
        rows = self._select("SELECT id, traceback FROM cells WHERE traceback IS NOT NULL "
                            "AND id IN ({})", [], ids)
        return dict(rows)

    def _has(self, table: str) -> bool:
        """Whether the store has ``table`` (an older store opened read-only may not)."""
        return self.db.execute("SELECT 1 FROM sqlite_master WHERE name = ?",
                               (table,)).fetchone() is not None

    @_guarded
    def configs(self) -> list[tuple[str, dict[str, Any], float | None]]:
        """(id, config, finished) of every stored cell: each cell's recorded suite, profile,
        trial seed, resolved arms and versions."""
        rows = self.db.execute("SELECT id, config, finished FROM cells ORDER BY id").fetchall()
        return [(r[0], json.loads(r[1]), r[2]) for r in rows]

    @_guarded
    def arm_statuses(self, ids: list[str]) -> dict[str, dict[str, ArmStatus]]:
        """Each arm's stored status of those of ``ids`` that have them (a cell written
        before arms had statuses has none: its arms read as the cell's status)."""
        if not self._has("arms"):
            return {}  # an older store opened read-only
        out: dict[str, dict[str, ArmStatus]] = {}
        for cell, arm, status, step, error in self._select(
                "SELECT cell, arm, status, step, error FROM arms WHERE cell IN ({})", [], ids):
            out.setdefault(cell, {})[arm] = ArmStatus(status, step, error)
        return out

    @_guarded
    def series(self, ids: list[str], metric: str | None = None
               ) -> list[tuple[str, str, str, int, float]]:
        """(cell, arm, metric, step, value) rows of ``ids``, ordered by step."""
        query = "SELECT cell, arm, metric, step, value FROM series WHERE cell IN ({})"
        if metric is not None:
            query += " AND metric = ?"
        rows = []
        for chunk in _chunks(ids):
            marks = ",".join("?" * len(chunk))
            args = [*chunk] + ([metric] if metric is not None else [])
            rows += self.db.execute(query.format(marks) + " ORDER BY step", args).fetchall()
        # SQLite stores NaN as NULL: read it back as NaN
        return [(*r[:4], math.nan if r[4] is None else r[4]) for r in rows]

    def _select(self, query: str, params: list[Any], ids: list[str]) -> list[tuple]:
        rows: list[tuple] = []
        for chunk in _chunks(ids):
            marks = ",".join("?" * len(chunk))
            rows += self.db.execute(query.format(marks), [*params, *chunk]).fetchall()
        return rows


def _chunks(ids: list[str], size: int = 500) -> list[list[str]]:
    return [ids[i:i + size] for i in range(0, len(ids), size)]


def stored_configs(path: str | Path) -> list[tuple[str, dict[str, Any], float | None]]:
    """``Store.configs`` of the store at ``path``, read only; none where it cannot be read
    (the command that reads it reports why)."""
    try:
        store = Store(path, read_only=True)
    except StoreError:
        return []
    try:
        return store.configs()
    except StoreError:
        return []
    finally:
        store.close()
