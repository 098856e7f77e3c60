"""Preflight: every distinct design point of a profile, run for a few steps.

A design point is a cell without its trial seed (the same arms, hence the same components,
data, schedule and metrics); the preflight runs the first seed's cell of each. Runs are
shortened to ``steps`` steps (epochs become steps, a warmup is cut to fit) and may be made
smaller (batch size and split sizes capped), but every component is built as the profile
declares it and every metric runs at least once (at the last step), so a missing key, a
loader that rejects its files or a metric that fails on the real model shows up in minutes
instead of hours into a run. The timings say where a step's time goes.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from geobench.contract.registry import Registry
from geobench.records import Cell, CellResult
from geobench.suite import cell_id
from geobench.suite.resolve import resolve_record
from geobench.train.engine import run_cell


def design_points(cells: list[Cell]) -> list[Cell]:
    """The first cell of each distinct design point, in the profile's order."""
    first: dict[str, Cell] = {}
    for cell in cells:
        first.setdefault(json.dumps(cell.arms, sort_keys=True), cell)
    return list(first.values())


@dataclass(frozen=True)
class Shortening:
    """How a design point is cut down: ``steps`` steps; ``batch`` caps ``data.batch_size``;
    ``samples`` caps ``data.n_train`` and ``data.n_test`` (a whole split becomes that many);
    ``device`` replaces ``train.device``; ``data`` sets dataset params where the dataset has
    them (``verify_md5: false`` for re-packed CIFAR files) and ``metrics`` metric params
    where a metric has them (``max_iter: 8`` bounds a Lanczos run)."""

    steps: int = 2
    batch: int | None = None
    samples: int | None = None
    device: str | None = None
    data: dict[str, Any] = field(default_factory=dict)
    metrics: dict[str, Any] = field(default_factory=dict)


def _cap(value: int | None, cap: int | None) -> int | None:
    if cap is None:
        return value
    return cap if value is None else min(value, cap)


def shortened(cell: Cell, registry: Registry, how: Shortening) -> Cell:
    """``cell`` cut down as ``how`` says, validated again, under a new id."""
    arms, specs = {}, {}
    for name, record in cell.arms.items():
        record = copy.deepcopy(record)
        train, data = record["train"], record["data"]
        train.update(steps=how.steps, epochs=None,
                     warmup_steps=min(train["warmup_steps"], how.steps))
        train["device"] = how.device or train["device"]
        data["batch_size"] = _cap(data["batch_size"], how.batch)
        for key in ("n_train", "n_test"):
            if key in data:
                data[key] = _cap(data[key], how.samples)
        data.update({k: v for k, v in how.data.items() if k in data})
        for metric in record["metrics"]:
            metric.update({k: v for k, v in how.metrics.items() if k in metric})
        arms[name], specs[name] = resolve_record(registry, record,
                                                 f"{cell.suite} cell {cell.id} arm {name}")
    payload = {"suite": cell.suite, "profile": cell.profile, "trial_seed": cell.trial_seed,
               "arms": arms, "versions": cell.versions}
    return replace(cell, id=cell_id(payload), arms=arms, specs=specs)


@dataclass(frozen=True)
class PointRun:
    """A design point's preflight: the shortened cell and what running it produced."""

    cell: Cell
    result: CellResult

    def label(self) -> str:
        """The design point's varied keys (without the trial seed), long values cut."""
        varied = {k: v for k, v in self.cell.varied.items() if k != "trial_seed"}
        return replace(self.cell, varied=varied).label(width=32)

    def row(self) -> list[Any]:
        """Design point, status, steps, start-up s, s per step, metric share of the loop."""
        t = self.result.timing
        per_step = t.step_seconds()
        share = sum(t.metric.values()) / t.loop if t.loop else None
        return [self.label(), self.result.status.value, t.steps, round(t.start, 2),
                None if per_step is None else round(per_step, 3),
                None if share is None else f"{share:.0%}"]


HEADERS = ["design point", "status", "steps", "start s", "s/step", "metrics"]


def preflight(cells: list[Cell], registry: Registry, how: Shortening,
              each: Callable[[PointRun], None] | None = None) -> list[PointRun]:
    """Run every design point of ``cells`` shortened; ``each`` hears of each as it ends."""
    runs = []
    for cell in design_points(cells):
        short = shortened(cell, registry, how)
        run = PointRun(short, run_cell(short, registry))
        runs.append(run)
        if each is not None:
            each(run)
    return runs
