"""The published leaderboards a site is built from: each page's record (``<stem>.json``,
``report.page_record``) with its claims' units and its results read from the CSVs beside it."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geobench.publish.output import OutputError
from geobench.report.page_record import RECORD_FORMAT, RECORD_SUFFIX

PROFILE_ORDER = ("smoke", "mid", "full")


@dataclass
class Board:
    """One published page: its record, its units by section heading and claim id, and its
    results CSV's header and rows."""

    record: dict[str, Any]
    folder: Path
    units: dict[str, dict[str, list[dict[str, str]]]] = field(default_factory=dict)
    results: list[dict[str, str]] = field(default_factory=list)

    @property
    def stem(self) -> str:
        return Path(self.record["page"]).stem

    @property
    def suite(self) -> str:
        return self.record["suite"]

    @property
    def profile(self) -> str:
        return self.record["profile"]

    @property
    def paper(self) -> str:
        return self.record["paper"] or "other"

    @property
    def decided(self) -> dict[str, Any] | None:
        """The claims section that decides the verdicts (the first), None without claims."""
        return self.record["claims"][0] if self.record["claims"] else None

    def files(self) -> list[tuple[str, str]]:
        """The files beside the page that the site copies: (name, ``img`` or ``data``)."""
        record = self.record
        images = [s["forest"] for s in record["claims"] if s["forest"]] \
            + [f["file"] for f in record["figures"]]
        data = [s["units"] for s in record["claims"]] + [record["results"], record["values"]] \
            + ([record["cells_file"]] if record.get("cells_file") else [])
        return [(n, "img") for n in images] + [(n, "data") for n in data]

    def sort_key(self) -> tuple[str, int, str]:
        order = PROFILE_ORDER.index(self.profile) if self.profile in PROFILE_ORDER \
            else len(PROFILE_ORDER)
        return self.suite, order, self.profile


def _rows(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        raise OutputError(f"{path}: missing (a leaderboard record names it); publish the page "
                          "again with geobench leaderboard")
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def read_board(path: Path) -> Board | None:
    """The board whose record is ``path``; None for a JSON file that is not a page record."""
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise OutputError(f"{path}: not readable as JSON ({exc})") from None
    if not isinstance(record, dict) or "page" not in record or "format" not in record:
        return None
    if record["format"] != RECORD_FORMAT:
        raise OutputError(f"{path}: format {record['format']}, this geobench reads format "
                          f"{RECORD_FORMAT}; publish the page again with geobench leaderboard")
    board = Board(record, path.parent)
    for name, _ in board.files():
        if Path(name).name != name or name in (".", ".."):
            raise OutputError(f"{path}: file name {name!r} is not a plain file name beside "
                              "the page")
    for section in record["claims"]:
        units: dict[str, list[dict[str, str]]] = {}
        for row in _rows(path.parent / section["units"]):
            units.setdefault(row["claim"], []).append(row)
        board.units[section["heading"]] = units
    board.results = _rows(path.parent / record["results"])
    return board


def read_boards(folder: Path) -> list[Board]:
    """Every page record in ``folder`` (``*.json``), by suite and profile."""
    if not folder.is_dir():
        raise OutputError(f"{folder}: no such folder (the published leaderboards, e.g. "
                          "leaderboards/)")
    boards = [b for p in sorted(folder.glob(f"*{RECORD_SUFFIX}")) if (b := read_board(p))]
    if not boards:
        raise OutputError(f"{folder}: no leaderboard records (<suite>.json beside each page); "
                          "publish the pages with geobench leaderboard")
    return sorted(boards, key=Board.sort_key)
