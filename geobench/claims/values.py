"""Stored values of a suite's cells, read one way for leaderboards and claims.

A result key is ``<metric id>.<field>`` (a single-arm run), ``<arm>/<metric id>.<field>``
or, for a cross-arm metric, ``<reference>~<arm>/<metric id>.<field>``.  ``loss.train`` is
the training loss the engine records.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections import defaultdict
from typing import TYPE_CHECKING

from geobench.contract.param_models import FieldDoc
from geobench.contract.registry import Registry, RegistryError
from geobench.records import (
    SINGLE_ARM,
    TRAIN_LOSS_KEY,
    Cell,
    MetricFailure,
    Status,
    cross_arm,
    label_status,
    measured_arm,
    metric_key,
    parse_metric_key,
)

if TYPE_CHECKING:
    from geobench.run.store import Store

TRAIN_LOSS = FieldDoc("training loss of the step's batch", "", "lower")


def series_stat(values: list[float], stat: str) -> float:
    """``stat`` (first, last, min, max, mean) of a run's series, NaN entries left out."""
    values = [v for v in values if not math.isnan(v)]
    if not values:
        return math.nan
    return {"first": values[0], "last": values[-1], "min": min(values), "max": max(values),
            "mean": sum(values) / len(values)}[stat]


class StoredValues:
    """The store's rows and series of ``cells``, loaded once."""

    def __init__(self, store: Store, cells: list[Cell]) -> None:
        ids = [c.id for c in cells]
        self.rows = store.cells(ids)
        self.series: dict[tuple[str, str], list[float]] = defaultdict(list)
        self._points: dict[str, list[tuple[str, str, int, float]]] = defaultdict(list)
        for cell, arm, metric, step, value in store.series(ids):
            self.series[(cell, metric_key(arm, metric))].append(value)
            self._points[cell].append((arm, metric, step, value))

    def digest(self, cell: Cell) -> str | None:
        """A fingerprint of ``cell``'s stored values — status, finals and every series
        point, sha256 of their canonical JSON, 16 hex digits; None: not stored.  A rerun that
        leaves them as they were leaves it as it was."""
        row = self.rows.get(cell.id)
        if row is None:
            return None
        text = json.dumps([row["status"], sorted(row["metrics"].items()),
                           sorted(self._points.get(cell.id, []))])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def stored(self, cell: Cell) -> bool:
        """Whether the store holds ``cell`` (in any status)."""
        return cell.id in self.rows

    def claims(self, cell: Cell) -> dict[str, str] | None:
        """The claim definitions (id -> digest) in force when ``cell``'s values were first
        stored; None: stored without a record (or not stored)."""
        row = self.rows.get(cell.id)
        return None if row is None else row["provenance"].get("claims")

    def registration(self, cell: Cell) -> str | None:
        """The sha256 of the registration in force when ``cell``'s values were first stored
        (``study.registered``); None: stored without one (or not stored)."""
        row = self.rows.get(cell.id)
        return None if row is None else row["provenance"].get("registration")

    def finished(self, cell: Cell) -> float | None:
        """When ``cell`` was stored (seconds since the epoch); None: not stored."""
        row = self.rows.get(cell.id)
        return None if row is None else row["finished"]

    def status(self, cell: Cell, arm: str | None = None, key: str | None = None) -> str:
        """complete | diverged | failed | missing (not in the store): the cell's, or, given
        ``key`` (and ``arm``, as ``value`` takes them), the status of the arm whose values
        ``value`` reads: a cell may be complete with one arm diverged, and a cross-arm
        label's values are diverged when either of its arms diverged."""
        row = self.rows.get(cell.id)
        if row is None:
            return Status.MISSING.value
        label = None if key is None else self._label(cell, arm, key)
        if label is None:
            return row["status"]
        return label_status({name: a.status for name, a in row["arms"].items()}, label)

    def _label(self, cell: Cell, arm: str | None, key: str) -> str | None:
        """The arm label of the values ``value(cell, arm, key)`` reads (None: the cell's)."""
        keys = _lookup_keys(cell, arm, key)
        row = self.rows[cell.id]
        found = next((k for k in keys if k in row["metrics"] or (cell.id, k) in self.series),
                     keys[0])
        label = parse_metric_key(found).arm
        return None if label == SINGLE_ARM and SINGLE_ARM not in cell.arms else label

    def failure(self, cell: Cell, arm: str | None, key: str) -> MetricFailure | None:
        """The failure of the metric whose values ``value(cell, arm, key)`` reads, where it
        raised on that arm (or arm pair) and so left no value; None: it did not."""
        row = self.rows.get(cell.id)
        if row is None:
            return None
        for k in _lookup_keys(cell, arm, key):
            wanted = parse_metric_key(k)
            found = next((f for f in row["metric_failures"]
                          if (f.arm, f.metric) == (wanted.arm, wanted.metric)), None)
            if found is not None:
                return found
        return None

    def failures(self, cells: list[Cell]) -> list[tuple[Cell, MetricFailure]]:
        """Every metric that failed on an arm of ``cells``, cell by cell."""
        return [(cell, f) for cell in cells if cell.id in self.rows
                for f in self.rows[cell.id]["metric_failures"]]

    def value(self, cell: Cell, arm: str | None, key: str, stat: str = "last") -> float | None:
        """``stat`` of ``key``'s series for ``arm`` of ``cell`` (None: never recorded).

        ``key`` may carry its arm (``<arm>/<metric>.<field>``); else ``arm`` selects it, the
        arm's own series first, then the cross-arm series against the reference arm."""
        row = self.rows.get(cell.id)
        if row is None:
            return None
        for k in _lookup_keys(cell, arm, key):
            if stat == "last" and k in row["metrics"]:
                return row["metrics"][k]
            if (cell.id, k) in self.series:
                return series_stat(self.series[(cell.id, k)], stat)
        return None


def _lookup_keys(cell: Cell, arm: str | None, key: str) -> list[str]:
    if "/" in key or arm is None or list(cell.arms) == [SINGLE_ARM]:
        return [key]
    ref = next(iter(cell.arms))
    return [metric_key(arm, key), metric_key(cross_arm(ref, arm), key)]


def declared(registry: Registry, cells: list[Cell], key: str) -> FieldDoc | None:
    """The declared meaning of result ``key`` in the first of ``cells`` that measures it
    (design points may measure different metrics)."""
    return next((d for c in cells if (d := field_doc(registry, c, key)) is not None), None)


def field_doc(registry: Registry, cell: Cell, key: str) -> FieldDoc | None:
    """The declared meaning of result ``key`` in ``cell`` (None: undeclared or unknown)."""
    parsed = parse_metric_key(key)
    if parsed.series == TRAIN_LOSS_KEY:
        return TRAIN_LOSS
    spec = cell.arms.get(measured_arm(parsed.arm)) or next(iter(cell.arms.values()))
    for metric in spec["metrics"]:
        if metric.get("id", metric["name"]) == parsed.metric:
            try:
                return registry.get("metrics", metric["name"]).field_doc(parsed.field)
            except RegistryError:
                return None
    return None
