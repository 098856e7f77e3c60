"""What a run shows while it runs: on a TTY, a bar over the grid and one over the running
cell's steps; off one, a line per finished cell with the ETA, and lines from inside a long
cell (``StepLines``)."""

from __future__ import annotations

import sys
import threading
import time

from tqdm import tqdm

from geobench.records import Cell, CellResult, Status


def duration(seconds: float) -> str:
    """``42 s``, ``9 min``, ``1.5 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def say(text: str) -> None:
    """One line on stderr in a single write, so that worker processes' lines never mix."""
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


class StepLines:
    """Progress from inside a cell where no bar is shown: ``<suite> <varied>: step
    1200/5000, loss 0.4312 (2 min in)`` at a step report (every ``CHECK_EVERY`` steps) once
    ``every`` seconds have passed since the last line, and from a watcher thread (as a
    context manager) when a report is that late, so that a slow step (a long metric) is no
    longer silence."""

    def __init__(self, cell: Cell, every: float) -> None:
        self.label, self.every = f"{cell.suite} {cell.label()}", every
        self.start = self.last = time.monotonic()
        self.state = "no step finished yet"
        self.lock, self.done = threading.Lock(), threading.Event()
        self.watcher = threading.Thread(target=self._watch, daemon=True)

    def __call__(self, step: int, total: int, loss: float) -> None:
        self.state = f"step {step}/{total}, loss {loss:.4g}"
        self._say()

    def _say(self) -> None:
        with self.lock:
            now = time.monotonic()
            if now - self.last >= self.every:
                self.last = now
                say(f"  {self.label}: {self.state} ({duration(now - self.start)} in)")

    def _watch(self) -> None:
        while not self.done.wait(max(self.every, 1.0)):
            self._say()

    def __enter__(self) -> StepLines:
        self.watcher.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.watcher.join()


class RunProgress:
    """On a TTY, a bar over the grid (with its ETA) and one over the running cell's steps;
    else a line per finished cell, ``[12/48] <suite> <varied> complete 14.2 s, ETA 9 min``
    (``StepLines`` from inside each cell are ``CellTask``'s). A cell that failed, or whose
    arm diverged or metric failed, gets its id and what happened (the error names the
    plugin and file:line that raised)."""

    def __init__(self, suite: str, total: int, done: int, todo: int, max_cells: int | None,
                 quiet: bool) -> None:
        self.quiet, self.suite, self.todo, self.max_cells = quiet, suite, todo, max_cells
        self.tty = sys.stderr.isatty() and not quiet
        self.finished, self.total, self.first = done, total, done
        self.started, self.waited = time.monotonic(), 0.0
        self.grid = tqdm(total=total, initial=done, desc=suite, unit="cell",
                         position=0, file=sys.stderr) if self.tty else None
        self.cell_bar: tqdm | None = None

    def start(self, cell: Cell) -> None:
        if self.tty:
            self.cell_bar = tqdm(desc=cell.label()[:60], unit="step", position=1,
                                 leave=False, file=sys.stderr)

    def step(self, step: int, total: int, loss: float) -> None:
        if self.cell_bar is not None:
            self.cell_bar.total = total
            self.cell_bar.n = step
            self.cell_bar.set_postfix(loss=f"{loss:.4g}", refresh=False)
            self.cell_bar.refresh()

    def eta(self, others: int) -> str:
        """``, ETA 9 min`` from this run's pace (time spent waiting for other runs' cells
        left out) over the cells it still plans to run: those left to do less the ``others``
        that another run holds or has finished, at most what ``--max-cells`` leaves; empty
        once nothing is left."""
        ran = self.finished - self.first
        left = self.todo - ran - others
        if self.max_cells is not None:
            left = min(left, self.max_cells - ran)
        if left <= 0 or ran <= 0:
            return ""
        pace = (time.monotonic() - self.started - self.waited) / ran
        return f", ETA {duration(pace * left)}"

    def finish(self, cell: Cell, result: CellResult, others: int = 0) -> None:
        self.finished += 1
        if self.cell_bar is not None:
            self.cell_bar.close()
            self.cell_bar = None
        arms = "; ".join(filter(None, (diverged_arms(result), failed_metrics(result))))
        if self.grid is not None:
            self.grid.update(1)
            if result.status != Status.COMPLETE:
                self.grid.write(f"{cell.id} ({cell.label()}): {result.status}: {result.error}")
            elif arms:
                self.grid.write(f"{cell.id} ({cell.label()}): complete, {arms}")
        elif not self.quiet:
            took = result.finished - result.started
            note = f" ({cell.id}: {result.error or arms})" if result.error or arms else ""
            say(f"[{self.finished}/{self.total}] {self.suite} {cell.label()} "
                  f"{result.status} {took:.1f} s{self.eta(others)}{note}")

    def say(self, line: str) -> None:
        if self.grid is not None:
            self.grid.write(line)
        elif not self.quiet:
            say(line)

    def close(self) -> None:
        if self.grid is not None:
            self.grid.close()


def diverged_arms(result: CellResult) -> str:
    """``arm vicreg diverged at step 7: <why>; ...`` for the arms of a complete cell that
    diverged ('' for none)."""
    if result.status != Status.COMPLETE:
        return ""
    return "; ".join(f"arm {name} diverged at step {a.step}: {a.error}"
                     for name, a in result.arms.items() if a.status == Status.DIVERGED)


def failed_metrics(result: CellResult) -> str:
    """``metric nccc failed on arm b at step 10: <error>; ...`` for the metrics that failed
    on an arm of a complete cell ('' for none)."""
    if result.status != Status.COMPLETE:
        return ""
    return "; ".join(str(f) for f in result.metric_failures)
