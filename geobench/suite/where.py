"""How filters read cells: a config key's value in a cell, and whether it matches a filter
value (claims' and tables' ``where``, exclude entries)."""

from __future__ import annotations

from typing import Any

from geobench.records import Cell
from geobench.suite.merge import get_dotted


def config_value(cell: Cell, key: str) -> Any:
    """The value of config ``key`` in ``cell``: a grid key, else the first arm's spec."""
    if key in cell.varied:
        return cell.varied[key]
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
