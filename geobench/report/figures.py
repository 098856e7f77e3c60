"""The read side of the plugins' figure commands: a suite's cells for one profile with what
the results store holds of them, returned as plain data once the store is closed; and the
options those commands share.

A plugin publishes its figures as a command of its own (``register_commands``:
``cli.add("<plugin>-figures", summary, main)``, e.g. ``geobench projection-figures``). Its
``main(argv)`` parses ``figure_parser``'s options, calls ``read_stored`` and draws. Problems
are raised as ``SuiteError`` (no such suite file, an invalid suite or profile) and
``StoreError`` (no such store, not a store), which ``geobench`` prints as one line and
answers with exit status 2. A store is only read here: a missing one is an error, not a new
empty file.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geobench.records import Cell, Status
from geobench.run.store import DEFAULT_STORE, Store
from geobench.suite import LoadedSuite, expand, load_suite

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
        return self.name if self.profile == "smoke" else f"{self.name}_{self.profile}"

    def finals(self, status: str = Status.COMPLETE) -> dict[str, dict[str, float]]:
        """Cell id -> final values (result key -> value) of the cells stored as ``status``,
        in the order of ``cells``."""
        return {c.id: self.rows[c.id]["metrics"] for c in self.cells
                if c.id in self.rows and self.rows[c.id]["status"] == status}


def read_stored(suite: str | Path, profile: str = "smoke", store: str | Path = DEFAULT_STORE,
                series: Iterable[str] = ()) -> StoredSuite:
    """Load ``suite``, expand its ``profile`` through the loaded plugins' registry and read
    the stored rows of its cells and their ``series`` (``<metric>.<field>`` names) from
    ``store``, which is closed before this returns."""
    from geobench.contract.plugins import registry

    loaded = load_suite(suite)
    cells = expand(loaded, registry(), profile)
    ids = [c.id for c in cells]
    opened = Store(store, read_only=True)
    try:
        rows = opened.cells(ids)
        found = [c for c in ids if c in rows]
        points = sorted((row for name in dict.fromkeys(series)
                         for row in opened.series(found, name)), key=lambda r: r[3])
    finally:
        opened.close()
    return StoredSuite(loaded, profile, cells, rows, points)


def figure_parser(command: str, description: str, out_help: str,
                  out_required: bool = False) -> argparse.ArgumentParser:
    """The parser of ``geobench COMMAND`` with the options every figure command shares: the
    suite path, ``--profile`` (default smoke), ``--store`` (geobench's default) and
    ``--out`` (a ``Path``; None when not given and not required)."""
    ap = argparse.ArgumentParser(prog=f"geobench {command}", description=description,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("suite", help="path of the suite YAML file")
    ap.add_argument("--profile", default="smoke", help="profile to expand (default: smoke)")
    ap.add_argument("--store", default=DEFAULT_STORE,
                    help=f"results store (default: {DEFAULT_STORE})")
    ap.add_argument("--out", type=Path, required=out_required, help=out_help)
    return ap


def figure_folder(store: str | Path) -> Path:
    """Where figures go by default: ``leaderboards/`` beside the store, the folder of the
    leaderboard that ``geobench leaderboard`` writes by default (its images link there)."""
    return Path(store).parent / "leaderboards"
