"""Filters that can match (docs/suites.md, "Validation and limits"), checked once every
profile is expanded (the claims' own filters are checked by ``geobench.claims.validate`` with
the helpers here):

- every key a filter or a leaderboard names (exclude entries, leaderboard rows, columns,
  labels, plot ``x`` and ``where``, tables' rows and ``where``) is a config key of some
  cell, with a did-you-mean when it is not, and every arm a ``where`` names exists;
- every value a filter names is one some cell takes (``true`` is not 1), and each
  ``where`` selects a cell of some profile;
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
from geobench.suite.where import EXTRA_KEYS, config_keys, selects, values_taken

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


@dataclass
class Checking:
    """Every profile's cells as the filter checks read them: all cells, the keys a filter
    may name, and the values each key takes (found once per key)."""

    loaded: LoadedSuite
    profiles: dict[str, list[Cell]]
    every: list[Cell] = field(init=False)
    known: set[str] = field(init=False)
    taken: dict[str, list[Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.every = [c for cells in self.profiles.values() for c in cells]
        self.known = config_keys(self.every)

    def values(self, key: str) -> list[Any]:
        """The distinct values of ``key`` in every profile's cells."""
        if key not in self.taken:
            self.taken[key] = values_taken(self.every, key)
        return self.taken[key]


def check_filters(loaded: LoadedSuite, cells: dict[str, list[Cell]],
                  uses: dict[Loc, ExcludeUse]) -> None:
    """The exclude entries (``uses``: what each met), the leaderboard's keys and its plots'
    and tables' ``where``, as the module says."""
    checking = Checking(loaded, cells)
    _check_excludes(loaded, uses, checking.known)
    for loc, key in _board_keys(loaded):
        check_known(loaded, loc, key, checking.known, "leaderboard")
    for loc, what, where in _board_wheres(loaded):
        check_where(checking, loc, what, where)


def check_where(checking: Checking, loc: Loc, what: str, where: dict[str, Any]) -> None:
    """Every key of ``where`` is one some cell has, every value one it takes, every arm
    exists, and some cell of some profile has all of them."""
    loaded = checking.loaded
    for key, value in where.items():
        if isinstance(value, list) and not value:
            raise loaded.fail(loc + (key,), f"{what}: a list of values needs at least one")
        if key == "arm":
            _check_arms(loaded, loc + (key,), what, value)
            continue
        check_known(loaded, loc + (key,), key, checking.known, what)
        _check_value(loaded, loc + (key,), what, key, value, checking.values(key),
                     checking.every)
    if not any(selects(where, c) for c in checking.every):
        raise loaded.fail(loc, f"{what} selects no cell in any profile (no cell has all "
                               f"of {_pairs_text(where)})")


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


def _board_wheres(loaded: LoadedSuite) -> list[tuple[Loc, str, dict[str, Any]]]:
    """The ``where`` of every plot and table of the leaderboard."""
    board = loaded.suite.leaderboard
    out: list[tuple[Loc, str, dict[str, Any]]] = [
        (("leaderboard", "plots", i, "where"), f"plot {p.key!r}", p.where)
        for i, p in enumerate(board.plots) if not isinstance(p, str) and p.where]
    return out + [(("leaderboard", "tables", i, "where"), f"table {t.title!r}", t.where)
                  for i, t in enumerate(board.tables or [])]


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
