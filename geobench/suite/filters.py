"""Filters that can match (docs/suites.md, "Validation and limits"), checked once every
profile is expanded:

- every key a filter or a leaderboard names (exclude entries, claims' ``where`` and
  ``compare``, leaderboard rows, columns, labels, plot ``x`` and ``where``, tables' rows and
  ``where``) is a config key of some cell, with a did-you-mean when it is not, and every
  arm a ``where`` names exists;
- every value a filter names is one some cell takes (``true`` is not 1), and each
  ``where`` selects a cell of some profile;
- every claim has a profile that holds a unit of each of its parts (a profile without one
  lists the claim as not in this profile);
- every exclude entry drops a grid point of a profile it applies to.

Each problem is one line through ``loaded.fail``."""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass, field
from typing import Any

from geobench.contract.errors import did_you_mean
from geobench.records import SINGLE_ARM, Cell
from geobench.suite.load import LoadedSuite, Loc
from geobench.suite.merge import get_dotted
from geobench.suite.schema import Claim
from geobench.suite.where import (
    EXTRA_KEYS,
    MIN_TREND_POINTS,
    config_keys,
    config_value,
    decidable,
    key_sides,
    selected_cells,
    selects,
    values_taken,
)

SHOWN = 12
"""Most values an error lists."""


@dataclass
class ExcludeUse:
    """What one exclude entry met while the profiles it applies to expanded: the grid points
    it saw and dropped, the profiles, and each key's values as the suite writes them (grid,
    zip or base: what an exclude compares)."""

    points: int = 0
    dropped: int = 0
    profiles: list[str] = field(default_factory=list)
    written: dict[str, list[Any]] = field(default_factory=dict)

    def see(self, profile: str, written: dict[str, Any], dropped: bool) -> None:
        self.points += 1
        self.dropped += dropped
        if profile not in self.profiles:
            self.profiles.append(profile)
        for key, value in written.items():
            seen = self.written.setdefault(key, [])
            if not any(same(value, v) for v in seen):
                seen.append(value)


def same(value: Any, other: Any) -> bool:
    """Equal as a suite means it: ``true`` is not 1, 1 is 1.0."""
    return value == other and isinstance(value, bool) == isinstance(other, bool)


def show(value: Any) -> str:
    """A value as a suite writes it (JSON, which YAML reads): ``"relu"``, ``0.1``, ``null``."""
    return json.dumps(value, default=str)


def listing(values: list[Any]) -> str:
    """At most ``SHOWN`` values, then how many there are."""
    text = ", ".join(show(v) for v in values[:SHOWN])
    return text + (f", … ({len(values)} in all)" if len(values) > SHOWN else "")


def check_known(loaded: LoadedSuite, loc: Loc, key: str, known: set[str], what: str) -> None:
    """``key`` is a config key of some cell (or ``arm`` / ``trial_seed``)."""
    if key in EXTRA_KEYS or key in known:
        return
    parent = key
    while "." in parent and parent not in known:
        parent = parent.rpartition(".")[0]
    if parent in known:
        names = sorted(k[len(parent) + 1:] for k in known if k.startswith(parent + ".")
                       and "." not in k[len(parent) + 1:])
        close = difflib.get_close_matches(key[len(parent) + 1:], names, n=1, cutoff=0.6)
        hint = f" (did you mean '{parent}.{close[0]}'?)" if close else ""
        keys = f"; keys under {parent!r}: {', '.join(names)}" if names else \
            f"; no cell has keys under {parent!r}"
    else:
        hint, keys = did_you_mean(key, sorted(known)), ""
    raise loaded.fail(loc, f"{what}: no cell has a key {key!r}{hint}{keys}")


def check_filters(loaded: LoadedSuite, cells: dict[str, list[Cell]],
                  uses: dict[Loc, ExcludeUse]) -> None:
    """The exclude entries (``uses``: what each met), keys of the leaderboard and the
    claims, every ``where`` and ``compare``, and that some profile can test each claim, as
    the module says."""
    every = [c for profile in cells.values() for c in profile]
    known = config_keys(every)
    _check_excludes(loaded, uses, known)
    taken: dict[str, list[Any]] = {}

    def values(key: str) -> list[Any]:
        if key not in taken:
            taken[key] = values_taken(every, key)
        return taken[key]

    for loc, key in _board_keys(loaded):
        check_known(loaded, loc, key, known, "leaderboard")
    for loc, what, where in _wheres(loaded):
        for key, value in where.items():
            if isinstance(value, list) and not value:
                raise loaded.fail(loc + (key,), f"{what}: a list of values needs at least one")
            if key == "arm":
                _check_arms(loaded, loc + (key,), what, value)
                continue
            check_known(loaded, loc + (key,), key, known, what)
            _check_value(loaded, loc + (key,), what, key, value, values(key), every)
        if not any(selects(where, c) for c in every):
            raise loaded.fail(loc, f"{what} selects no cell in any profile (no cell has all "
                                   f"of {_pairs_text(where)})")
    for loc, what, compare in _compares(loaded):
        check_known(loaded, loc + ("key",), compare.key, known, what)
        for side in ("a", "b"):
            value = getattr(compare, side)
            if not any(same(value, v) for v in values(compare.key)):
                raise loaded.fail(loc + (side,), f"{what}: {side} = {show(value)} is not a "
                                  f"value of {compare.key!r} in any cell; it takes: "
                                  f"{listing(values(compare.key))}")
    for loc, what, trend, part in _trends(loaded):
        check_known(loaded, loc + ("key",), trend.key, known, what)
        _check_trend_values(loaded, loc + ("key",), what, trend, part, every)
    for i, claim in enumerate(loaded.suite.claims):
        _check_decidable(loaded, i, claim, cells)
        _check_one_cell_a_side(loaded, i, claim, cells)


def _check_arms(loaded: LoadedSuite, loc: Loc, what: str, value: Any) -> None:
    arms = list(loaded.suite.arms) or [SINGLE_ARM]
    for arm in value if isinstance(value, list) else [value]:
        if arm not in arms:
            raise loaded.fail(loc, f"{what} names arm {arm!r}; arms: {', '.join(arms)}")


def _check_value(loaded: LoadedSuite, loc: Loc, what: str, key: str, value: Any,
                 taken: list[Any], cells: list[Cell]) -> None:
    """``value`` (or, for a list, each of its values) is one some cell takes; where it is
    another arm's value (a plain key reads the first arm's spec), the line says how to
    read that arm's."""
    whole = any(same(v, value) for v in taken)  # a list can be one value (data.classes)
    for wanted in [value] if whole or not isinstance(value, list) else value:
        if any(same(v, wanted) for v in taken):
            continue
        arms = list(dict.fromkeys(arm for c in cells for arm, spec in c.arms.items()
                                  if same(get_dotted(spec, key), wanted)))
        hint = f"; it is the value of arm {arms[0]!r}: filter on 'arms.{arms[0]}.{key}'" \
            if arms else ""
        raise loaded.fail(loc, f"{what}: {show(wanted)} is not a value of {key!r} in any "
                               f"cell; it takes: {listing(taken)}{hint}")


def _check_decidable(loaded: LoadedSuite, index: int, claim: Claim,
                     cells: dict[str, list[Cell]]) -> None:
    """Some profile holds a unit of every part of ``claim``."""
    parts = claim.parts
    testable = {name: [decidable(loaded.suite, p, cs) for p in parts]
                for name, cs in cells.items()}
    if any(all(flags) for flags in testable.values()):
        return
    for j, part in enumerate(parts):
        if any(flags[j] for flags in testable.values()):
            continue
        loc: Loc = ("claims", index) + (("also", j - 1) if j else ())
        compare = part.compare
        if part.trend is not None:
            raise loaded.fail(loc + ("trend",), f"claim {claim.id!r}: no profile has "
                              f"{MIN_TREND_POINTS} values of {part.trend.key} among the cells "
                              "its 'where' selects, alike in every other grid key")
        if compare is not None and compare.key is not None:
            raise loaded.fail(loc + ("compare",), f"claim {claim.id!r}: no profile has a pair "
                              f"of cells its 'where' selects with {compare.key} = "
                              f"{show(compare.a)} and {show(compare.b)}, alike in every other "
                              "grid key")
        raise loaded.fail(loc + ("where",), f"claim {claim.id!r} selects no cell in any profile")
    where = "; ".join(f"part {j + 1}: " + (", ".join(n for n, f in testable.items() if f[j]))
                      for j in range(len(parts)))
    raise loaded.fail(("claims", index), f"claim {claim.id!r}: no profile can test every part "
                                         f"({where})")


def _check_one_cell_a_side(loaded: LoadedSuite, index: int, claim: Claim,
                           cells: dict[str, list[Cell]]) -> None:
    """A ``compare: {key}`` part pairs one cell with one: its ``where`` may not select two
    cells of one side that differ only in keys zipped with ``key``."""
    for j, part in enumerate(claim.parts):
        compare = part.compare
        if compare is None or compare.key is None:
            continue
        for profile, cs in cells.items():
            chosen = [c for c, _ in selected_cells(part, cs).values()]
            for sides in key_sides(loaded.suite, chosen, compare.key, compare.a, compare.b):
                for side, group in sides.items():
                    if len(group) < 2:
                        continue
                    differ = sorted({k for c in group for k, v in c.varied.items()
                                     if v != group[0].varied.get(k)})
                    loc: Loc = ("claims", index) + (("also", j - 1) if j else ()) + ("where",)
                    raise loaded.fail(loc, f"claim {claim.id!r}: {compare.key} = "
                                      f"{show(getattr(compare, side))} selects {len(group)} "
                                      f"cells of one trial seed in profile {profile!r}, "
                                      f"differing in {', '.join(differ)}; narrow its 'where' "
                                      "to the one to compare")


def _pairs_text(where: dict[str, Any]) -> str:
    return ", ".join(f"{k}={show(v)}" for k, v in where.items() if k != "arm")


def _board_keys(loaded: LoadedSuite) -> list[tuple[Loc, str]]:
    board = loaded.suite.leaderboard
    keys: list[tuple[Loc, str]] = [(("leaderboard", "rows", i), k)
                                   for i, k in enumerate(board.rows or [])]
    if board.columns is not None:
        keys.append((("leaderboard", "columns"), board.columns))
    keys += [(("leaderboard", "labels", k), k) for k in board.labels]
    keys += [(("leaderboard", "plots", i, "x"), p.x) for i, p in enumerate(board.plots)
             if not isinstance(p, str) and p.x is not None]
    keys += [(("leaderboard", "tables", i, "rows", j), k)
             for i, t in enumerate(board.tables or []) for j, k in enumerate(t.rows or [])]
    return keys


def _wheres(loaded: LoadedSuite) -> list[tuple[Loc, str, dict[str, Any]]]:
    """Every ``where`` map: plots', tables', and each alternative of each claim's and each
    ``also`` part's own."""
    board, suite = loaded.suite.leaderboard, loaded.suite
    out: list[tuple[Loc, str, dict[str, Any]]] = [
        (("leaderboard", "plots", i, "where"), f"plot {p.key!r}", p.where)
        for i, p in enumerate(board.plots) if not isinstance(p, str) and p.where]
    out += [(("leaderboard", "tables", i, "where"), f"table {t.title!r}", t.where)
            for i, t in enumerate(board.tables or [])]
    for i, claim in enumerate(suite.claims):
        owners = [(("claims", i), claim.where)]
        owners += [(("claims", i, "also", j), c.where) for j, c in enumerate(claim.also)
                   if c.where is not None]
        for loc, where in owners:
            if isinstance(where, dict):
                out.append((loc + ("where",), f"claim {claim.id!r}", where))
            else:
                out += [(loc + ("where", k), f"claim {claim.id!r}", w)
                        for k, w in enumerate(where)]
    return out


def _compares(loaded: LoadedSuite) -> list[tuple[Loc, str, Any]]:
    """Every claim part's ``compare: {key, a, b}``."""
    out = []
    for i, claim in enumerate(loaded.suite.claims):
        conditions = [(("claims", i), claim)]
        conditions += [(("claims", i, "also", j), c) for j, c in enumerate(claim.also)]
        out += [(loc + ("compare",), f"claim {claim.id!r}", c.compare)
                for loc, c in conditions if c.compare is not None and c.compare.key]
    return out


def _trends(loaded: LoadedSuite) -> list[tuple[Loc, str, Any, Claim]]:
    """Every claim part's ``trend``, with the part."""
    return [(("claims", i) + (("also", j - 1) if j else ()) + ("trend",),
             f"claim {claim.id!r}", part.trend, part)
            for i, claim in enumerate(loaded.suite.claims)
            for j, part in enumerate(claim.parts) if part.trend is not None]


def _check_trend_values(loaded: LoadedSuite, loc: Loc, what: str, trend: Any, part: Claim,
                        cells: list[Cell]) -> None:
    """In every cell the part selects, the trend's key holds a number (positive for
    ``x: log``)."""
    for cell, _ in selected_cells(part, cells).values():
        value = config_value(cell, trend.key)
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or (trend.x == "log" and value <= 0):
            need = "a positive number (x: log)" if trend.x == "log" else "a number"
            raise loaded.fail(loc, f"{what}: the trend's x, {trend.key!r}, is {value!r} in a "
                                   f"{cell.profile!r} cell its 'where' selects; it must be "
                                   f"{need} in every selected cell")


def _check_excludes(loaded: LoadedSuite, uses: dict[Loc, ExcludeUse], known: set[str]
                    ) -> None:
    """Every key of an exclude entry is a config key of some cell or written by the suite,
    and every entry drops a grid point of a profile it applies to; else one line says why:
    a key no cell has, a key the suite never writes, a value its key never takes there, or
    values that never meet."""
    for loc, use in uses.items():
        entry = loaded.suite.exclude[loc[-1]] if loc[0] == "exclude" else \
            loaded.suite.profiles[loc[1]].exclude[loc[-1]]
        for key in entry:
            if all(v is None for v in use.written.get(key, [])):
                check_known(loaded, loc + (key,), key, known, "exclude")
        if use.dropped:
            continue
        if not use.points:
            raise loaded.fail(loc, "exclude: this entry applies to no profile (each profile "
                                   "gives its own 'exclude')")
        where = f"profile{'s' if len(use.profiles) > 1 else ''} {', '.join(use.profiles)}"
        for key, value in entry.items():
            seen = use.written[key]
            if seen == [None]:
                raise loaded.fail(loc + (key,), f"exclude: {key!r} is not written by the "
                                  f"grid, zip or base of {where}; an exclude entry matches "
                                  "values the suite writes")
            if not any(same(value, v) for v in seen):
                raise loaded.fail(loc + (key,), f"exclude: {show(value)} is not a value of "
                                  f"{key!r} in {where}; it takes: {listing(seen)}")
        raise loaded.fail(loc, f"exclude: no grid point of {where} has all of "
                               f"{_pairs_text(entry)}; the entry drops no cell")
