"""The read side of the plugins' figure commands: a suite's cells for one profile with what
the results store holds of them, returned as plain data once the store is closed.

A plugin publishes its figures as a command of its own; ``geobench.figures`` is its stable
path to this (docs/plugins.md). A store is only read here: a missing one is an error
(``StoreError``, one line, exit 2), not a new empty file.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geobench.records import Cell, Status, label_status, parse_metric_key
from geobench.report.paths import stem
from geobench.report.tables import row_keys
from geobench.run.store import Store
from geobench.study import Study
from geobench.suite import LoadedSuite

SeriesRow = tuple[str, str, str, int, float]  # (cell, arm, metric, step, value)


@dataclass(frozen=True)
class StoredSuite:
    """A suite's cells for one profile and what the store holds of them.

    ``rows``: cell id -> its stored row (``status``, ``error``, ``metrics``: result key ->
    final value, ...), for the stored cells only. ``series``: the rows of the series asked
    for, of every stored cell, ordered by step."""

    loaded: LoadedSuite
    profile: str
    cells: list[Cell]
    rows: dict[str, dict[str, Any]]
    series: list[SeriesRow]

    @property
    def name(self) -> str:
        """The suite's name."""
        return self.loaded.suite.name

    @property
    def stem(self) -> str:
        """``<suite>`` for the smoke profile, else ``<suite>_<profile>``: the name of the
        leaderboard ``geobench leaderboard`` writes by default, which figures start with."""
        return stem(self.name, self.profile)

    @property
    def row_keys(self) -> list[str]:
        """The keys the suite's leaderboard rows group its cells by (``tables.row_keys``)."""
        return row_keys(self.loaded, self.cells)

    def finals(self, status: str = Status.COMPLETE) -> dict[str, dict[str, float]]:
        """Cell id -> final values (result key -> value) of the cells stored as ``status``,
        in the order of ``cells``: only the values of arms in that status (a complete cell
        leaves out what its diverged arm measured)."""
        out = {}
        for cell in self.cells:
            row = self.rows.get(cell.id)
            if row is None or row["status"] != status:
                continue
            arms = {name: a.status for name, a in row["arms"].items()}
            out[cell.id] = {key: value for key, value in row["metrics"].items()
                            if label_status(arms, parse_metric_key(key).arm) == status}
        return out


def stored_suite(study: Study, store: str | Path, series: Iterable[str] = ()) -> StoredSuite:
    """The stored rows of ``study``'s cells and their ``series`` (``<metric>.<field>``
    names), read from ``store``, which is closed before this returns."""
    ids = [c.id for c in study.cells]
    opened = Store(store, read_only=True)
    try:
        rows = opened.cells(ids)
        found = [c for c in ids if c in rows]
        points = sorted((row for name in dict.fromkeys(series)
                         for row in opened.series(found, name)), key=lambda r: r[3])
    finally:
        opened.close()
    return StoredSuite(study.loaded, study.profile, study.cells, rows, points)
