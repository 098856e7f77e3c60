"""How filters read cells: a config key's value in a cell, whether it matches a filter value
(claims', plots' and tables' ``where``), and the keys and values the cells of a suite have."""

from __future__ import annotations

from typing import Any

from geobench.records import Cell
from geobench.suite.merge import get_dotted

EXTRA_KEYS = ("arm", "trial_seed")
"""Row and filter keys that are not config keys."""


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
