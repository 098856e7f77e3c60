"""SQLite results store (WAL): one row per finished cell, its metric series and finals.

A cell is written in a single transaction when it finishes, so a run killed at any point
leaves either the whole cell or nothing; rerunning completes exactly the missing cells.
"""

from __future__ import annotations

import json
import math
import sqlite3
from pathlib import Path
from typing import Any

from geobench.records import DONE, Cell, CellResult

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
"""


class Store:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(self.path, timeout=60)
        self.db.execute("PRAGMA journal_mode=WAL")
        self.db.execute("PRAGMA foreign_keys=ON")
        self.db.executescript(SCHEMA)

    def close(self) -> None:
        self.db.close()

    def done_ids(self, ids: list[str]) -> set[str]:
        """Those of ``ids`` already finished (complete or diverged)."""
        rows = self._select("SELECT id FROM cells WHERE status IN (?, ?) AND id IN ({})",
                            list(DONE), ids)
        return {r[0] for r in rows}

    def write(self, cell: Cell, result: CellResult, provenance: dict[str, Any]) -> None:
        """Replace whatever the store holds for ``cell`` by ``result``, atomically."""
        prov = {**provenance, "device": result.device, "batch_digest": result.batch_digest}
        with self.db:
            self.db.execute("DELETE FROM series WHERE cell = ?", (cell.id,))
            self.db.execute("DELETE FROM finals WHERE cell = ?", (cell.id,))
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

    def cells(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """Stored rows of ``ids`` with their finals: id -> {status, error, config, ...}."""
        rows = self._select("SELECT id, status, error, config, provenance, seconds FROM cells "
                            "WHERE id IN ({})", [], ids)
        out = {r[0]: {"status": r[1], "error": r[2], "config": json.loads(r[3]),
                      "provenance": json.loads(r[4]), "seconds": r[5], "metrics": {}}
               for r in rows}
        for cell, key, value in self._select("SELECT cell, key, value FROM finals "
                                             "WHERE cell IN ({})", [], list(out)):
            out[cell]["metrics"][key] = math.nan if value is None else value
        return out

    def series(self, ids: list[str], metric: str | None = None
               ) -> list[tuple[str, str, str, int, float]]:
        """(cell, arm, metric, step, value) rows of ``ids``, ordered by step."""
        query = "SELECT cell, arm, metric, step, value FROM series WHERE cell IN ({})"
        params: list[Any] = []
        if metric is not None:
            query += " AND metric = ?"
        rows = []
        for chunk in _chunks(ids):
            marks = ",".join("?" * len(chunk))
            args = [*params, *chunk] + ([metric] if metric is not None else [])
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
