"""Calibration: the step, metric and start-up seconds that ``geobench.run.estimate`` prices
cells with, measured by running design points shortened (``geobench.run.preflight``)."""

from __future__ import annotations

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


def merge(doc: dict[str, Any], new: dict[str, Any]) -> None:
    """Merge ``new``'s tables into ``doc``, entry by entry."""
    for section, table in new.items():
        target = doc.setdefault(section, {})
        for key, value in table.items():
            if isinstance(value, dict):
                target.setdefault(key, {}).update(value)
            else:
                target[key] = value


def calibrate(cells: list[Cell], registry: Registry, how: Shortening,
              each: Callable[[Cell, Any], None] | None = None,
              done: set[tuple[str, ...]] | None = None) -> dict[str, Any]:
    """Run the design points of ``cells`` shortened by ``how`` that price something not yet
    in ``done`` (updated), and return their figures as calibration tables. The first point
    runs twice, the first time unmeasured: a process's one-time costs (imports, kernels
    built on first use) belong to no cell."""
    done = set() if done is None else done
    tables: dict[str, Any] = {}
    for i, cell in enumerate(design_points(cells)):
        short = shortened(cell, registry, how)
        if prices(short) <= done:
            continue
        if i == 0:
            run_cell(short, registry)
        result = run_cell(short, registry)
        if each is not None:
            each(cell, result)
        if result.status == Status.COMPLETE:
            done |= prices(short)
            merge(tables, measured(short, result.timing))
    return tables
