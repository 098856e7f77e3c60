"""The tables of a leaderboard: cells grouped by row keys, one aggregate over trial seeds per
metric and group, rendered as markdown of at most ``MAX_COLUMNS`` columns.

A row key that takes one value over a table's rows is left out of it and stated once above
it (``All rows: tags.T = 16.``); metrics beyond the column limit go into continuation
tables that repeat the row keys.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from geobench.claims.stats import t_half_width
from geobench.claims.values import StoredValues
from geobench.contract.interfaces import FieldDoc
from geobench.publish.markdown import markdown_table
from geobench.records import SINGLE_ARM, Cell, Status
from geobench.suite import LoadedSuite
from geobench.suite.schema import LeaderboardMetric
from geobench.suite.where import config_value, matches, named_arms, selects

MISSING = "—"
FAILED_MARK = "✗"  # ✗k: the metric failed on the arm in k of the seeds
MAX_COLUMNS = 10

Members = list[tuple[Cell, str | None]]
Groups = dict[tuple, Members]


@dataclass
class Aggregate:
    """One table cell: the values over trial seeds of one group."""

    values: list[float]
    expected: int
    diverged: int
    agg: str
    nan: int = 0  # seeds whose value is NaN, counted when the column names what NaN means
    failed: int = 0  # seeds whose metric failed on the arm (no value)

    @property
    def center(self) -> float | None:
        if not self.values:
            return None
        if self.agg == "median":
            return statistics.median(self.values)
        return statistics.fmean(self.values)

    @property
    def half_width(self) -> float:
        return t_half_width(self.values) if self.agg == "mean" else math.nan

    def text(self, fmt: str, nan: str | None = None, binary: bool = False) -> str:
        """``mean ± h (n=k)``; for a 0/1 outcome (``binary``, mean over runs) the count
        ``k/n`` of runs at 1."""
        center = self.center
        if binary and self.agg == "mean" and set(self.values) <= {0.0, 1.0} and self.values:
            n = len(self.values)
            text = f"{int(sum(self.values))}/{n}" + ("" if n == self.expected
                                                     else f" (n={n}/{self.expected})")
        elif center is None and self.nan:
            text = f"{nan} (n={self.nan}/{self.expected})"
        elif center is None:
            text = MISSING
        else:
            text = format(center, fmt)
            if not math.isnan(self.half_width):
                text += f" ± {format(self.half_width, fmt)}"
            n = len(self.values)
            text += f" (n={n})" if n == self.expected else f" (n={n}/{self.expected})"
            text += f" {nan} {self.nan}/{self.expected}" if self.nan else ""
        return (text + (f" †{self.diverged}" if self.diverged else "")
                + (f" {FAILED_MARK}{self.failed}" if self.failed else ""))


def cell_text(a: Aggregate, metric: LeaderboardMetric, doc: FieldDoc | None) -> str:
    """``a`` as a table prints it: in the metric's format and NaN word, a 0/1 outcome (a
    ``binary`` field) as a count."""
    return a.text(metric.fmt, metric.nan, doc is not None and doc.binary)


def aggregate(values: StoredValues, members: Members, metric: LeaderboardMetric) -> Aggregate:
    """``metric`` over ``members`` (a key naming its arm reads each cell once)."""
    if "/" in metric.key:
        members = list({cell.id: (cell, None) for cell, _ in members}.values())
    found, diverged, nan, failed = [], 0, 0, 0
    for cell, arm in members:
        status = values.status(cell, arm, metric.key)
        if status == Status.DIVERGED:
            diverged += 1
        if status != Status.COMPLETE:
            continue
        value = values.value(cell, arm, metric.key, metric.stat)
        if value is not None and not math.isnan(value):
            found.append(value)
        elif value is not None and metric.nan is not None:
            nan += 1
        elif value is None and values.failure(cell, arm, metric.key) is not None:
            failed += 1
    return Aggregate(found, len(members), diverged, metric.agg, nan, failed)


def row_keys(loaded: LoadedSuite, cells: list[Cell]) -> list[str]:
    """The keys a leaderboard's rows group cells by: the suite's ``leaderboard.rows``, else
    the varied keys (seed aside) that differ between ``cells``, and ``arm`` with several."""
    spec = loaded.suite.leaderboard
    if spec.rows is not None:
        return spec.rows
    varied = [k for k in (cells[0].varied if cells else {}) if k != "trial_seed"]
    keys = [k for k in varied if len({repr(c.varied[k]) for c in cells}) > 1]
    return keys + (["arm"] if len(cells[0].arms) > 1 else []) if cells else keys


def selected(cells: list[Cell], where: dict[str, Any]) -> tuple[list[Cell], list[str] | None]:
    """The cells matching every config key of ``where``, and the arms it names (None: all)."""
    chosen = [c for c in cells if selects(where, c)]
    return chosen, None if where.get("arm") is None else [str(a) for a in named_arms(where)]


def group(cells: list[Cell], rows: list[str], extra: str | None = None,
          arms: list[str] | None = None) -> Groups:
    """Cells (and arms) by their values of the row keys (and ``extra``, when given).

    ``arms``: the arms to read (one row each when ``arm`` is a row key, else pooled); None:
    every arm when ``arm`` is a row key, else the metric key names its arm."""
    if arms is None:
        arms = (list(cells[0].arms) if cells else [SINGLE_ARM]) if "arm" in rows else [None]
    groups: Groups = defaultdict(list)
    for cell in cells:
        for arm in arms:
            if arm is not None and arm not in cell.arms:
                continue
            key = tuple(arm if r == "arm" else config_value(cell, r) for r in rows)
            if extra is not None:
                key += (config_value(cell, extra),)
            groups[key].append((cell, arm))
    return groups


def ordered(groups: Groups, rows: list[str], where: dict[str, Any]) -> Groups:
    """``groups`` sorted by the row keys left to right: a key's values in the order ``where``
    lists them, else in the order they first appear."""
    ranks: list[dict[str, tuple[int, int]]] = []
    for i, row in enumerate(rows):
        seen = list({repr(k[i]): k[i] for k in groups}.items())
        wanted = where.get(row)
        listed = wanted if isinstance(wanted, list) else []
        first = [next((j for j, w in enumerate(listed) if matches(v, w)), len(listed))
                 for _, v in seen]
        ranks.append({r: (f, n) for n, ((r, _), f) in enumerate(zip(seen, first))})
    return dict(sorted(groups.items(),
                       key=lambda kv: tuple(r[repr(v)] for r, v in zip(ranks, kv[0]))))


def column(values: StoredValues, groups: Groups, metric: LeaderboardMetric,
           doc: FieldDoc | None) -> list[str]:
    """One table column: the aggregate text per group, the best bold when it has a direction."""
    aggs = [aggregate(values, members, metric) for members in groups.values()]
    texts = [cell_text(a, metric, doc) for a in aggs]
    centers = [a.center for a in aggs]
    present = [c for c in centers if c is not None]
    if doc is not None and doc.direction != "diagnostic" and len(present) > 1:
        best = max(present) if doc.direction == "higher" else min(present)
        texts = [f"**{t}**" if c == best else t for t, c in zip(texts, centers)]
    return texts


def markdown(rows: list[str], keys: list[tuple], headers: list[str],
             columns: list[list[str]], labels: dict[str, str],
             max_columns: int | None = MAX_COLUMNS) -> tuple[str, list[str]]:
    """The ``All rows: ...`` line of the constant row keys ('' for none) and the tables:
    the other row keys (headers renamed by ``labels``), then the columns, at most
    ``max_columns`` in all per table (None: one table); the first holds the first columns."""
    constant = [i for i in range(len(rows)) if len({repr(k[i]) for k in keys}) == 1] \
        if columns else []
    shown = [i for i in range(len(rows)) if i not in constant]
    stated = ", ".join(f"{labels.get(rows[i], rows[i])} = {keys[0][i]}" for i in constant)
    names = [labels.get(rows[i], rows[i]) for i in shown]
    body = [[str(k[i]) for i in shown] for k in keys]
    width = max(1, (max_columns or len(shown) + len(columns)) - len(shown))
    blocks = []
    for start in range(0, max(1, len(columns)), width):
        part = columns[start:start + width]
        table = [b + [col[j] for col in part] for j, b in enumerate(body)]
        blocks.append(markdown_table(table, names + headers[start:start + width]))
    return (f"All rows: {stated}.\n\n" if stated else ""), blocks
