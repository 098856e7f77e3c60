"""The values a rerun replaces: a rerun of a complete or diverged cell (``--rerun``,
``--rerun-diverged``, a code change) writes new values over the old, and the store keeps the
old ones in ``revisions`` — its status, provenance, series and finals as they were, and when
they were replaced — so that both records stay and a page that published the old values can
say its verdicts were revised (docs/claims.md, "Revised verdicts")."""

from __future__ import annotations

import json
import sqlite3

SCHEMA = """
CREATE TABLE IF NOT EXISTS revisions (
    cell TEXT NOT NULL, replaced REAL NOT NULL, status TEXT NOT NULL, provenance TEXT NOT NULL,
    series TEXT NOT NULL, finals TEXT NOT NULL
);
"""


def keep_replaced(db: sqlite3.Connection, cell_id: str, now: float) -> None:
    """Copy ``cell_id``'s stored record into ``revisions`` before it is replaced (inside the
    writer's transaction); nothing for a cell not stored."""
    row = db.execute("SELECT status, provenance FROM cells WHERE id = ?", (cell_id,)).fetchone()
    if row is None:
        return
    series = db.execute("SELECT arm, metric, step, value FROM series WHERE cell = ? "
                        "ORDER BY arm, metric, step", (cell_id,)).fetchall()
    finals = db.execute("SELECT key, value FROM finals WHERE cell = ? ORDER BY key",
                        (cell_id,)).fetchall()
    db.execute("INSERT INTO revisions VALUES (?,?,?,?,?,?)",
               (cell_id, now, row[0], row[1], json.dumps(series), json.dumps(finals)))
