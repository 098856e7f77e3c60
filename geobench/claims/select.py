"""Which cells a claim part reads: the cells its ``where`` selects (with the arms each
alternative names), and those cells grouped by trial seed and every grid key that does not
go with a compared or fitted key, as pairs (``compare: {key}``) or groups (``trend``)."""

from __future__ import annotations

from typing import Any

from geobench.records import Cell
from geobench.suite.schema import Claim, Suite
from geobench.suite.where import config_value, named_arms, selects

MIN_TREND_POINTS = 3
"""A trend is fitted over at least this many distinct x values."""


def selected_cells(claim: Claim, cells: list[Cell]) -> dict[str, tuple[Cell, list[str | None]]]:
    """The cells some alternative of ``where`` selects, each with the arms it names (None:
    the metric's own arm), by cell id, in cell order; a unit selected twice counts once.
    A pair of the ``compare: {key}`` form reads the arms both of its cells were selected
    with."""
    chosen: dict[str, tuple[Cell, list[str | None]]] = {}
    for cell in cells:
        for where in claim.alternatives:
            if not selects(where, cell):
                continue
            arms = chosen.setdefault(cell.id, (cell, []))[1]
            for name in named_arms(where):
                if name not in arms:
                    arms.append(name)
    return chosen


def key_sides(suite: Suite, cells: list[Cell], key: str, a: Any, b: Any
              ) -> list[dict[str, list[Cell]]]:
    """Per trial seed and values of every grid key that does not go with ``key``: the cells
    with ``key == a`` (under ``"a"``) and with ``key == b`` (under ``"b"``)."""
    sides = []
    for group in key_groups(suite, cells, key):
        split: dict[str, list[Cell]] = {}
        for cell in group:
            value = config_value(cell, key)
            side = "a" if value == a else "b" if value == b else None
            if side is not None:
                split.setdefault(side, []).append(cell)
        if split:
            sides.append(split)
    return sides


def distinct_values(cells: list[Cell], key: str) -> int:
    """How many different values ``key`` takes in ``cells``."""
    return len({repr(config_value(c, key)) for c in cells})


def key_groups(suite: Suite, cells: list[Cell], key: str) -> list[list[Cell]]:
    """``cells`` grouped by trial seed and the values of every grid key that does not go
    with ``key`` (keys zipped with it change with it), in cell order."""
    drop = _going_with(suite, cells[0].profile if cells else "smoke", key)
    groups: dict[str, list[Cell]] = {}
    for cell in cells:
        ident = repr(sorted((k, repr(v)) for k, v in cell.varied.items()
                            if k not in drop and not _related(k, key)))
        groups.setdefault(ident, []).append(cell)
    return list(groups.values())


def key_pairs(suite: Suite, cells: list[Cell], key: str, a: Any, b: Any
              ) -> list[tuple[Cell | None, Cell | None]]:
    """Cells with ``key == a`` matched to cells with ``key == b`` of the same trial seed and
    the same values of every grid key that does not go with ``key`` (None: no partner).  A
    side holds one cell: validation refuses a claim whose ``where`` selects more."""
    return [(s["a"][0] if "a" in s else None, s["b"][0] if "b" in s else None)
            for s in key_sides(suite, cells, key, a, b)]


def _related(grid_key: str, key: str) -> bool:
    return grid_key == key or key.startswith(grid_key + ".") or grid_key.startswith(key + ".")


def _going_with(suite: Suite, profile: str, key: str) -> set[str]:
    """Grid keys zipped together with ``key`` (they change with it)."""
    prof = suite.profiles.get(profile)
    zips = prof.zip if prof is not None and prof.zip is not None else suite.zip
    return {k for group in zips if any(_related(g, key) for g in group) for k in group}
