"""How filters read cells: a config key's value in a cell, whether it matches a filter value
(claims', plots' and tables' ``where``), the cells and pairs of cells a claim part reads,
and the keys and values the cells of a suite have."""

from __future__ import annotations

from typing import Any

from geobench.records import Cell
from geobench.suite.merge import get_dotted
from geobench.suite.schema import Claim, Suite

EXTRA_KEYS = ("arm", "trial_seed")
"""Row and filter keys that are not config keys."""
MIN_TREND_POINTS = 3
"""A trend is fitted over at least this many distinct x values."""


def config_value(cell: Cell, key: str) -> Any:
    """The value of config ``key`` in ``cell``: a grid key, else ``arms.<arm>.<key>`` in that
    arm's spec, else the first arm's spec."""
    if key in cell.varied:
        return cell.varied[key]
    head, _, rest = key.partition(".")
    if head == "arms":
        arm, _, inner = rest.partition(".")
        return get_dotted(cell.arms.get(arm), inner)
    return get_dotted(next(iter(cell.arms.values())), key)


def matches(value: Any, wanted: Any) -> bool:
    """A config value matches a ``where`` value, or one of a list of them."""
    return value == wanted or (isinstance(wanted, list) and value in wanted)


def selects(where: dict[str, Any], cell: Cell) -> bool:
    """Every config key of ``where`` (``arm`` aside) matches ``cell``."""
    return all(matches(config_value(cell, k), v) for k, v in where.items() if k != "arm")


def named_arms(where: dict[str, Any]) -> list[Any]:
    """The arms ``where`` names as a list ([None] when it names none)."""
    arm = where.get("arm")
    return arm if isinstance(arm, list) else [arm]


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


def decidable(suite: Suite, part: Claim, cells: list[Cell]) -> bool:
    """``cells`` (one profile's) hold a unit of the claim part: a cell its ``where``
    selects, for ``compare: {key}`` a selected pair with an arm both sides were selected
    with, for a trend a group of selected cells with ``MIN_TREND_POINTS`` values of its key."""
    chosen = selected_cells(part, cells)
    compare = part.compare
    if part.trend is not None:
        key = part.trend.key
        return any(distinct_values(group, key) >= MIN_TREND_POINTS
                   for group in key_groups(suite, [c for c, _ in chosen.values()], key))
    if compare is None or compare.key is None:
        return bool(chosen)
    for a, b in key_pairs(suite, [c for c, _ in chosen.values()], compare.key, compare.a,
                          compare.b):
        if a is not None and b is not None \
                and any(arm in chosen[b.id][1] for arm in chosen[a.id][1]):
            return True
    return False


def config_keys(cells: list[Cell]) -> set[str]:
    """Every key a filter may name in ``cells``: the grid keys, and every dotted path into
    each arm's resolved spec, also as ``arms.<arm>.<path>``."""
    keys: set[str] = set()
    seen: set[int] = set()
    for cell in cells:
        keys.update(cell.varied)
        if id(cell.arms) in seen:  # the trial seeds of a grid point share one spec
            continue
        seen.add(id(cell.arms))
        for arm, spec in cell.arms.items():
            for path in _paths(spec):
                keys.update((path, f"arms.{arm}.{path}"))
    return keys


def _paths(doc: dict[str, Any], prefix: str = "") -> list[str]:
    out = []
    for key, value in doc.items():
        path = f"{prefix}{key}"
        out.append(path)
        if isinstance(value, dict):
            out += _paths(value, path + ".")
    return out


def values_taken(cells: list[Cell], key: str) -> list[Any]:
    """The distinct values of config ``key`` in ``cells``, in order of first appearance."""
    out: list[Any] = []
    for cell in cells:
        value = config_value(cell, key)
        if not any(value == v for v in out):
            out.append(value)
    return out
