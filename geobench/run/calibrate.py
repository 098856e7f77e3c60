"""Calibration: the step, metric and start-up seconds that ``geobench.run.estimate`` prices
cells with, measured by running design points shortened (``geobench.run.preflight``), or
read from the timing that real runs stored with their cells (``from_runs``)."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any

from geobench.contract.registry import Registry
from geobench.records import Cell, Status, Timing
from geobench.run.estimate import cost_key, evaluations
from geobench.run.preflight import Shortening, design_points, shortened
from geobench.train.engine import run_cell


def prices(cell: Cell) -> set[tuple[str, ...]]:
    """What running ``cell`` prices: its steps per (key, batch), its metrics per key."""
    out = set()
    for record in cell.arms.values():
        key = cost_key(record)
        out.add(("step", key, str(record["data"]["batch_size"])))
        out.update(("metric", m["name"], key) for m in record["metrics"])
    return out


def measured(cell: Cell, timing: Timing) -> dict[str, dict[str, Any]]:
    """Seconds per arm step (the loop without its metrics, over steps x arms), per metric
    evaluation and arm, and of the start-up, from one run of ``cell``."""
    arms = len(cell.arms)
    first = next(iter(cell.arms.values()))
    key, batch = cost_key(first), str(first["data"]["batch_size"])
    specs = {m["id"]: m for record in cell.arms.values() for m in record["metrics"]}
    metric_s: dict[str, dict[str, float]] = {}
    for mid, seconds in timing.metric.items():
        spec = specs[mid]
        metric_s.setdefault(spec["name"], {})[key] = seconds / (
            evaluations(spec.get("every"), timing.steps) * arms)
    return {"step_s": {key: {batch: timing.step_seconds() / arms}}, "metric_s": metric_s,
            "start_s": {key: timing.start}}


def peak(cell: Cell, peak_mb: float) -> dict[str, dict[str, float]]:
    """The peak resident memory (MiB) of one run of ``cell``, under its cost key."""
    return {"peak_mb": {cost_key(next(iter(cell.arms.values()))): peak_mb}}


def merge(doc: dict[str, Any], new: dict[str, Any]) -> None:
    """Merge ``new``'s tables into ``doc``, entry by entry; a key's peak memory is the
    largest measured under it (its design points may need more or less)."""
    for section, table in new.items():
        target = doc.setdefault(section, {})
        for key, value in table.items():
            if isinstance(value, dict):
                target.setdefault(key, {}).update(value)
            elif section == "peak_mb" and key in target:
                target[key] = max(target[key], value)
            else:
                target[key] = value


def calibrate(cells: list[Cell], registry: Registry, how: Shortening,
              each: Callable[[Cell, Any], None] | None = None,
              done: set[tuple[str, ...]] | None = None, memory: bool = False
              ) -> dict[str, Any]:
    """Run the design points of ``cells`` shortened by ``how`` that price something not yet
    in ``done`` (updated), and return their figures as calibration tables; with ``memory``,
    run every design point and return only each cost key's largest peak memory (a design
    point's memory does not follow its step's cost: its metrics' state does). The first
    point runs twice, the first time unmeasured: a process's one-time costs (imports,
    kernels built on first use) belong to no cell."""
    done = set() if done is None else done
    tables: dict[str, Any] = {}
    for i, cell in enumerate(design_points(cells)):
        short = shortened(cell, registry, how)
        if prices(short) <= done and not memory:
            continue
        if i == 0:
            run_cell(short, registry)
        result = run_cell(short, registry)
        if each is not None:
            each(cell, result)
        if result.status != Status.COMPLETE:
            continue
        if memory and result.peak_mb is not None:
            merge(tables, peak(short, result.peak_mb))
        elif not memory:
            done |= prices(short)
            merge(tables, measured(short, result.timing))
    return tables


def from_runs(cells: list[Cell], stored: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Calibration tables from the timing that ``cells`` stored with their results
    (``Store.cells``; ``Store.write`` records it): each figure is the median, over the cells
    whose every arm ran to the end, of what ``measured`` makes of each one's timing. Cells
    not stored, stored without a timing or with an arm that stopped early are left out."""
    tables = []
    for cell in cells:
        row = stored.get(cell.id)
        timing = row["provenance"].get("timing") if row else None
        if timing and timing["steps"] and \
                all(a.status == Status.COMPLETE for a in row["arms"].values()):
            tables.append(measured(cell, Timing(**timing)))
    return _medians(tables)


def _medians(tables: list[dict[str, Any]]) -> dict[str, Any]:
    """Entry by entry (nested tables alike), the median over the ``tables`` that have it."""
    out: dict[str, Any] = {}
    for key in dict.fromkeys(k for table in tables for k in table):
        values = [table[key] for table in tables if key in table]
        out[key] = _medians(values) if isinstance(values[0], dict) else \
            statistics.median(values)
    return out
