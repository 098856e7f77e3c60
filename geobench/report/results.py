"""A results store as flat rows, one per cell and measured value, for pandas and CSV.

Every row starts with the cell's ``cell``, ``suite``, ``profile``, ``trial_seed`` and
``status`` (that of the arm the value measures: a complete cell's diverged arm reads
``diverged``, and so does a cross-arm label with a diverged arm), then the config of the
arm it measures flattened to dotted columns (``head.activation``, ``optimizer.lr``; lists
as JSON text so that every cell of a table is a scalar; a config key that would name one of
the fixed columns is prefixed ``config.``, e.g. ``config.status``), and ends with ``arm``
(the label as stored: ``main``, ``cl`` or the cross-arm ``cl~nscl``, whose config is
``nscl``'s), ``metric``, ``field``, [``step``,] ``value`` (NaN where the store holds NULL).
The store is only read, never created.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import gzip
import io
import json
import math
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from geobench.records import (
    Cell,
    MetricKey,
    Status,
    label_status,
    measured_arm,
    metric_key,
    parse_metric_key,
)
from geobench.run.store import (
    LOCK_TIMEOUT_S,
    Store,
    StoreError,
    check_exists,
    describe_store_error,
)

if TYPE_CHECKING:
    import pandas

Row = dict[str, Any]
Measured = list[tuple[MetricKey, Row]]  # a cell's values: key, then value (and step)
LEAD = ("cell", "suite", "profile", "trial_seed", "status")
RESULT_TAIL = ("arm", "metric", "field", "value")
SERIES_TAIL = ("arm", "metric", "field", "step", "value")
FIXED = frozenset(LEAD + SERIES_TAIL)  # config columns never take these names
CONFIG_PREFIX = "config."
PANDAS_HINT = "pip install 'geobench[pandas]'"

_WHERE = ("WHERE (:suite IS NULL OR c.suite = :suite) "
          "AND (:profile IS NULL OR c.profile = :profile)")
_CELLS = f"SELECT c.id, c.suite, c.profile, c.seed, c.status, c.config FROM cells c {_WHERE}"
_FINALS = f"SELECT f.cell, f.key, f.value FROM finals f JOIN cells c ON c.id = f.cell {_WHERE}"
_SERIES = ("SELECT s.cell, s.arm, s.metric, s.step, s.value FROM series s "
           f"JOIN cells c ON c.id = s.cell {_WHERE}")
_ARMS = f"SELECT a.cell, a.arm, a.status FROM arms a JOIN cells c ON c.id = a.cell {_WHERE}"


def result_rows(store: str | Path, suite: str | None = None, profile: str | None = None,
                cells: list[str] | None = None) -> list[Row]:
    """One row per stored cell and final value (columns: see the module), ordered by suite,
    profile, trial_seed, cell, arm, metric, field; only the cells of ``suite``, ``profile``
    and ids ``cells`` where given. A cell without values (failed early) gives one row with
    arm, metric and field None, value NaN and the config its arms share."""
    heads, finals, statuses = _read(store, _FINALS, suite, profile, cells)
    measured = _by_cell((cell, parse_metric_key(key), {"value": _float(value)})
                        for cell, key, value in finals)
    rows = []
    for head, arms in heads:
        flats = _flat_arms(arms)
        rows += (_measured_rows(head, flats, measured.get(head["cell"], []),
                                statuses.get(head["cell"]))
                 or [_unmeasured_row(head, flats)])
    return sorted(rows, key=_order)


def series_rows(store: str | Path, suite: str | None = None, profile: str | None = None,
                cells: list[str] | None = None) -> list[Row]:
    """One row per stored series point: ``result_rows``' columns with ``step`` before
    ``value``, ordered likewise and then by step; a cell without series gives no row."""
    heads, series, statuses = _read(store, _SERIES, suite, profile, cells)
    measured = _by_cell((cell, parse_metric_key(metric_key(arm, name)),
                         {"step": step, "value": _float(value)})
                        for cell, arm, name, step, value in series)
    rows = [row for head, arms in heads
            for row in _measured_rows(head, _flat_arms(arms), measured.get(head["cell"], []),
                                      statuses.get(head["cell"]))]
    return sorted(rows, key=_order)


def cell_records(store: str | Path, cells: list[Cell]) -> list[Row]:
    """One object per cell of ``cells``, in their order: id, trial seed, config, status
    (``missing`` where the store has none), error, each arm's status (status, step, error),
    final values and the metrics that failed on an arm (arm, metric, step, error,
    traceback)."""
    opened = Store(store, read_only=True)
    try:
        stored = opened.cells([c.id for c in cells])
    finally:
        opened.close()
    records = []
    for cell in cells:
        row = stored.get(cell.id)
        records.append({"cell": cell.id, "trial_seed": cell.trial_seed, "config": cell.config(),
                        "status": row["status"] if row else str(Status.MISSING),
                        "error": row["error"] if row else None,
                        "arms": {name: dataclasses.asdict(a)
                                 for name, a in row["arms"].items()} if row else {},
                        "metrics": row["metrics"] if row else {},
                        "failed_metrics": [dataclasses.asdict(f) for f in
                                           row["metric_failures"]] if row else []})
    return records


def failure_records(store: str | Path, cells: list[Cell]) -> list[Row]:
    """One object per failure among ``cells``, in their order: each failed cell (``cell``,
    ``varied`` as ``Cell.label`` writes it, ``error``, ``traceback``; ``metric`` None), then
    each metric that failed on an arm of a cell (with ``arm``, ``metric`` and ``step``)."""
    opened = Store(store, read_only=True)
    try:
        ids = [c.id for c in cells]
        stored, tracebacks = opened.cells(ids), opened.tracebacks(ids)
    finally:
        opened.close()
    records = []
    for cell in cells:
        row = stored.get(cell.id)
        if row is None:
            continue
        base = {"cell": cell.id, "varied": cell.label(width=1000)}
        if row["status"] == Status.FAILED.value:
            records.append({**base, "arm": None, "metric": None, "step": None,
                            "error": row["error"], "traceback": tracebacks.get(cell.id)})
        records += [{**base, "arm": f.arm, "metric": f.metric, "step": f.step,
                     "error": f.error, "traceback": f.traceback}
                    for f in row["metric_failures"]]
    return records


def missing_rows(cells: Iterable[Cell]) -> list[Row]:
    """One row per cell of ``cells`` with status ``missing``, shaped as ``result_rows``' row
    of a cell without values: for the cells of a suite that the store does not hold."""
    return [_unmeasured_row({"cell": c.id, "suite": c.suite, "profile": c.profile,
                             "trial_seed": c.trial_seed, "status": str(Status.MISSING)},
                            _flat_arms(c.arms))
            for c in cells]


def load_results(store: str | Path, suite: str | None = None, profile: str | None = None,
                 cells: list[str] | None = None) -> pandas.DataFrame:
    """``result_rows`` as a pandas DataFrame, columns in the rows' order."""
    return _frame(_pandas("load_results"), result_rows(store, suite, profile, cells),
                  LEAD + RESULT_TAIL)


def load_series(store: str | Path, suite: str | None = None, profile: str | None = None,
                cells: list[str] | None = None) -> pandas.DataFrame:
    """``series_rows`` as a pandas DataFrame, columns in the rows' order."""
    return _frame(_pandas("load_series"), series_rows(store, suite, profile, cells),
                  LEAD + SERIES_TAIL)


def cells_rows(store: str | Path, cells: list[Cell], series: bool = False) -> list[Row]:
    """``result_rows`` (``series_rows`` with ``series``) of ``cells``, then a row for each
    cell that has none: its stored status without values, or ``missing``."""
    ids = [c.id for c in cells]
    rows = series_rows(store, cells=ids) if series else result_rows(store, cells=ids)
    held = {r["cell"] for r in rows}
    if series:  # a cell stored without series (failed early) as result_rows gives it
        rows += result_rows(store, cells=[i for i in ids if i not in held])
        held = {r["cell"] for r in rows}
    return rows + missing_rows([c for c in cells if c.id not in held])


def values_csv_gz(store: str | Path, cells: list[Cell]) -> bytes:
    """Every stored value of ``cells`` (``cells_rows`` with series) as gzip-compressed CSV,
    the same bytes for the same values (no time stamp in the gzip header): what ``geobench
    results --csv --series`` prints, published beside a leaderboard."""
    text = io.StringIO()
    write_csv(cells_rows(store, cells, series=True), text)
    return gzip.compress(text.getvalue().encode(), mtime=0)


def write_csv(rows: list[Row], out: TextIO) -> None:
    """``rows`` as CSV on ``out``. The header is the union of the rows' columns in first-seen
    order, with arm, metric, field, step and value last; None is an empty cell, NaN ``nan``.
    No rows: the header of ``result_rows`` alone."""
    writer = csv.DictWriter(out, _columns(rows) or list(LEAD + RESULT_TAIL), lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)


def _read(store: str | Path, values: str, suite: str | None, profile: str | None,
          cells: list[str] | None
          ) -> tuple[list[tuple[Row, dict[str, Any]]], list[tuple], dict[str, dict[str, str]]]:
    """The selected cells (identity columns, arm records), their ``values`` query's rows and
    their arms' statuses (cell -> arm -> status, for the cells stored with them), read
    read-only in one snapshot; every SQLite problem as a one-line ``StoreError``."""
    path = Path(store)
    check_exists(path)
    params = {"suite": suite, "profile": profile}
    try:
        uri = f"{path.resolve().as_uri()}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True, timeout=LOCK_TIMEOUT_S,
                                                isolation_level=None)) as db:
            db.execute("BEGIN")  # one snapshot: a run writing meanwhile adds whole cells
            found = db.execute(_CELLS, params).fetchall()
            rows = db.execute(values, params).fetchall()
            has_arms = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'arms'").fetchone()
            arm_rows = db.execute(_ARMS, params).fetchall() if has_arms else []
    except (sqlite3.Error, OSError) as exc:
        raise StoreError(f"{path}: results store: {describe_store_error(exc)}") from None
    wanted = None if cells is None else set(cells)
    heads = [(dict(zip(LEAD, (cell, *rest))), json.loads(config)["arms"])
             for cell, *rest, config in found if wanted is None or cell in wanted]
    statuses: dict[str, dict[str, str]] = {}
    for cell, arm, status in arm_rows:
        statuses.setdefault(cell, {})[arm] = status
    return heads, [r for r in rows if wanted is None or r[0] in wanted], statuses


def _by_cell(values: Iterable[tuple[str, MetricKey, Row]]) -> dict[str, Measured]:
    out: dict[str, Measured] = {}
    for cell, key, tail in values:
        out.setdefault(cell, []).append((key, tail))
    return out


def _measured_rows(head: Row, flats: dict[str, Row], values: Measured,
                   statuses: dict[str, str] | None) -> list[Row]:
    """A row per value: the config of the arm its label measures (``ref~arm``: ``arm``) and
    that label's status (``statuses``: each arm's; None: every arm has the cell's)."""
    return [{**head, "status": head["status"] if statuses is None
             else label_status(statuses, key.arm),
             **flats.get(measured_arm(key.arm), {}), **key._asdict(), **tail}
            for key, tail in values]


def _unmeasured_row(head: Row, flats: dict[str, Row]) -> Row:
    """The row of a cell without values: the config columns all its arms share."""
    first, *others = flats.values()
    shared = {k: v for k, v in first.items() if all(k in o and o[k] == v for o in others)}
    return {**head, **shared, "arm": None, "metric": None, "field": None, "value": math.nan}


def _flat_arms(arms: dict[str, dict[str, Any]]) -> dict[str, Row]:
    """Each arm's record as config columns, a fixed column's name prefixed ``config.``."""
    return {arm: {CONFIG_PREFIX + k if k in FIXED else k: v for k, v in _flatten(rec).items()}
            for arm, rec in arms.items()}


def _flatten(record: dict[str, Any], prefix: str = "") -> Row:
    """Nested dicts to dotted keys (an empty dict gives none), lists to JSON text."""
    out: Row = {}
    for key, value in record.items():
        if isinstance(value, dict):
            out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[prefix + key] = json.dumps(value) if isinstance(value, list | tuple) else value
    return out


def _float(value: float | None) -> float:
    """A stored value; SQLite stores NaN as NULL."""
    return math.nan if value is None else float(value)


def _order(row: Row) -> tuple:
    return (row["suite"], row["profile"], row["trial_seed"], row["cell"], row["arm"] or "",
            row["metric"] or "", row["field"] or "", row.get("step", 0))


def _columns(rows: list[Row]) -> list[str]:
    """The union of the rows' columns in first-seen order, the trailing fixed ones last."""
    seen = dict.fromkeys(key for row in rows for key in row)
    tail = [key for key in SERIES_TAIL if key in seen]
    return [key for key in seen if key not in tail] + tail


def _pandas(caller: str) -> Any:
    try:
        import pandas
    except ImportError:
        raise ImportError(f"{caller} needs pandas: {PANDAS_HINT}") from None
    return pandas


def _frame(pd: Any, rows: list[Row], empty: tuple[str, ...]) -> pandas.DataFrame:
    """``rows`` as a DataFrame; no rows: an empty one with the ``empty`` columns."""
    return pd.DataFrame(rows, columns=_columns(rows) or list(empty))
