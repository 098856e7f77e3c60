"""Runs a suite's missing cells through an executor and writes each result to the store."""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
from pydantic import ValidationError
from tqdm import tqdm

from geobench.api import BuildContext
from geobench.engine import run_cell
from geobench.errors import describe_validation_error
from geobench.leases import LEASE_TIMEOUT_S, Heartbeat, new_owner, release_dead
from geobench.plugins import describe_failure, registry
from geobench.provenance import provenance
from geobench.records import Cell, CellResult, Status
from geobench.registry import Registry, RegistryError
from geobench.store import Store
from geobench.suite import CELL_LIMIT, expand, load_suite

POLL_S = 5.0  # seconds between looks at the leases other runs hold


@dataclass
class RunSummary:
    cells: list[Cell]
    skipped: int
    statuses: Counter = field(default_factory=Counter)
    elsewhere: int = 0  # cells another run sharing the store finished meanwhile


def describe(cell: Cell) -> str:
    return ", ".join(f"{k}={v}" for k, v in cell.varied.items()) or "base"


class _Progress:
    """A grid bar (cells) and a cell bar (steps) on a TTY; else one line per finished cell."""

    def __init__(self, total: int, done: int, quiet: bool) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty() and not quiet
        self.finished = done
        self.total = total
        self.grid = tqdm(total=total, initial=done, desc="cells", unit="cell",
                         position=0, file=sys.stderr) if self.tty else None
        self.cell_bar: tqdm | None = None

    def start(self, cell: Cell) -> None:
        if self.tty:
            self.cell_bar = tqdm(desc=describe(cell)[:60], unit="step", position=1,
                                 leave=False, file=sys.stderr)

    def step(self, step: int, total: int, loss: float) -> None:
        if self.cell_bar is not None:
            self.cell_bar.total = total
            self.cell_bar.n = step
            self.cell_bar.set_postfix(loss=f"{loss:.4g}", refresh=False)
            self.cell_bar.refresh()

    def finish(self, cell: Cell, result: CellResult) -> None:
        self.finished += 1
        if self.cell_bar is not None:
            self.cell_bar.close()
            self.cell_bar = None
        if self.grid is not None:
            self.grid.update(1)
            if result.status != Status.COMPLETE:
                self.grid.write(f"{cell.id} ({describe(cell)}): {result.status}: {result.error}")
        elif not self.quiet:
            took = result.finished - result.started
            note = f": {result.error}" if result.error else ""
            print(f"[{self.finished}/{self.total}] {cell.id} ({describe(cell)}) "
                  f"{result.status} in {took:.1f}s{note}", file=sys.stderr, flush=True)

    def say(self, line: str) -> None:
        if self.grid is not None:
            self.grid.write(line)
        elif not self.quiet:
            print(line, file=sys.stderr, flush=True)

    def close(self) -> None:
        if self.grid is not None:
            self.grid.close()


def executor_spec(suite_default: dict[str, Any] | None, name: str | None,
                  options: dict[str, Any]) -> dict[str, Any]:
    """The executor to use: the suite's default, replaced by ``name`` when that differs,
    with the command line's ``options`` (None: not given) on top."""
    spec = dict(suite_default or {"name": "local"})
    if name is not None and name != spec["name"]:
        spec = {"name": name}
    return {**spec, **{k: v for k, v in options.items() if v is not None}}


def build_executor(reg: Registry, spec: dict[str, Any]) -> Any:
    entry = reg.get("executors", spec["name"])
    try:
        params = entry.params.model_validate({k: v for k, v in spec.items() if k != "name"})
    except ValidationError as exc:
        err = exc.errors()[0]
        raise RegistryError(f"executor {spec['name']!r}: "
                            f"{describe_validation_error(err, entry.params)}") from None
    return entry.factory(params, BuildContext(seed=0, device=torch.device("cpu")))


def run_suite(path: str, profile: str = "smoke", store_path: str = "results/geobench.sqlite",
              executor: str | None = None, options: dict[str, Any] | None = None,
              rerun: bool = False, quiet: bool = False,
              overrides: dict[str, Any] | None = None, max_cells: int | None = None,
              lease_timeout: float = LEASE_TIMEOUT_S, cell_limit: int = CELL_LIMIT
              ) -> RunSummary:
    """Validate and expand the suite, then run every cell the store does not hold yet
    (at most ``max_cells`` of them). Each cell is leased in the store before it runs, so
    runs sharing the store split the cells; a lease its owner has not renewed for
    ``lease_timeout`` seconds is taken over."""
    reg = registry()
    loaded = load_suite(path)
    cells = expand(loaded, reg, profile, overrides, cell_limit)
    runner = build_executor(reg, executor_spec(loaded.suite.executor, executor, options or {}))
    store = Store(store_path)
    since = time.time()
    try:
        done = store.settled([c.id for c in cells], since, rerun)
        todo = [c for c in cells if c.id not in done]
        summary = RunSummary(cells, skipped=len(done))
        progress = _Progress(len(cells), len(done), quiet)
        owner = new_owner()
        release_dead(store, [c.id for c in todo])
        try:
            with Heartbeat(store_path, owner, lease_timeout):
                while todo:
                    held: list[Cell] = []
                    started = sum(summary.statuses.values())
                    limit = None if max_cells is None else max_cells - started
                    leased = _leased(store, todo, owner, lease_timeout, since, rerun, held,
                                     limit)
                    for cell, result in _execute(runner, leased, progress):
                        if isinstance(result, BaseException):  # the executor lost the task
                            result = _lost(cell, result)
                        store.write(cell, result, provenance(), owner)
                        summary.statuses[result.status] += 1
                        progress.finish(cell, result)
                    full = max_cells is not None and sum(summary.statuses.values()) >= max_cells
                    todo = [] if full else _await_others(store, held, lease_timeout, since,
                                                         rerun, summary, progress)
        finally:
            progress.close()
    finally:
        store.close()
    return summary


def _lost(cell: Cell, exc: BaseException) -> CellResult:
    now = time.time()
    return CellResult(cell.id, Status.FAILED, describe_failure(exc), started=now, finished=now)


def _leased(store: Store, cells: list[Cell], owner: str, timeout: float, since: float,
            rerun: bool, held: list[Cell], limit: int | None) -> Iterator[Cell]:
    """The cells ``owner`` leases, at most ``limit`` (what ``--max-cells`` leaves), one at a
    time as the executor asks for them; the cells another run holds go to ``held``."""
    for cell in cells:
        if limit is not None and limit <= 0:
            return
        if store.lease(cell.id, owner, timeout, since, rerun):
            limit = None if limit is None else limit - 1
            yield cell
        elif cell.id not in store.settled([cell.id], since, rerun):
            held.append(cell)


def _await_others(store: Store, held: list[Cell], timeout: float, since: float, rerun: bool,
                  summary: RunSummary, progress: _Progress) -> list[Cell]:
    """Wait while other runs hold unexpired leases on every cell of ``held``; once a lease is
    released or expires (its owner stopped), return the unsettled cells for another round.
    Cells the others finish meanwhile are counted in ``summary.elsewhere``."""
    waiting = False
    while held:
        release_dead(store, [c.id for c in held])
        settled = store.settled([c.id for c in held], since, rerun)
        summary.elsewhere += len(settled)
        held = [c for c in held if c.id not in settled]
        leases = store.leases([c.id for c in held])
        now = time.time()
        if any(c.id not in leases or leases[c.id][1] < now for c in held):
            return held
        if held and not waiting:
            owners = sorted({owner for owner, _ in leases.values()})
            progress.say(f"waiting for {len(held)} cells another run holds ({', '.join(owners)})")
            waiting = True
        if held:
            time.sleep(min(POLL_S, timeout / 4))
    return []


def _execute(runner, todo: Iterator[Cell], progress: _Progress):
    if getattr(runner, "in_process", False):
        def fn(cell: Cell) -> CellResult:
            progress.start(cell)
            return run_cell(cell, progress=progress.step)
        return runner.map(fn, todo)
    return runner.map(run_cell, todo)
