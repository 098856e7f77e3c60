"""Runs a suite's missing cells through an executor and writes each result to the store."""

from __future__ import annotations

import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import torch
from pydantic import ValidationError

from geobench.claims.registration import claim_digests
from geobench.contract.errors import describe_validation_error
from geobench.contract.interfaces import BuildContext, Executor
from geobench.contract.manager import describe_failure
from geobench.contract.registry import Registry, RegistryError
from geobench.contract.spec import Component
from geobench.records import DEFAULT_STORE, DEFAULT_THREADS, Cell, CellResult, Status
from geobench.run.estimate import Calibration, calibration_path, peak_mb
from geobench.run.leases import (
    LEASE_TIMEOUT_S,
    Heartbeat,
    TaskLease,
    held_elsewhere,
    new_owner,
    release_dead,
)
from geobench.run.progress import RunProgress, StepLines, say
from geobench.run.provenance import provenance
from geobench.run.store import Rerun, Store
from geobench.study import Study
from geobench.study.registered import Registration
from geobench.suite.seeds import NAMES, SeedSet, seed_plan
from geobench.train.engine import run_cell
from geobench.train.logs import prepare_log_dir, reset_warnings, select_loggers
from geobench.train.memory import available_mb
from geobench.train.recording import Progress

POLL_S = 5.0  # seconds between looks at the leases other runs hold
STEP_LINE_S = 60.0  # off a TTY, the longest silence inside a running cell


@dataclass
class RunSummary:
    cells: list[Cell]
    skipped: int
    statuses: Counter = field(default_factory=Counter)
    elsewhere: int = 0  # cells another run sharing the store finished meanwhile


@dataclass(frozen=True)
class CellTask:
    """What an executor runs for each cell: ``run_cell`` on ``threads`` torch threads (set
    here, in whichever process runs the cell, and restored after: a CPU cell's numbers
    depend on its thread count), with the run's loggers, and ``StepLines`` every ``every``
    seconds (None: none) where the cell runs with neither a ``progress`` callback (a bar)
    nor a terminal on stderr (a worker's own log file gets them); the result carries
    ``claims``, the digests of the suite's claim definitions as the run began
    (``claims.registration``), and ``registration``, the sha256 of the profile's
    registration file (``study.registered``; None: none), or ``replication``, its
    replication seeds' registration's, for a cell of those ``replicate_seeds`` —
    picklable, for worker processes."""

    loggers: tuple[Component, ...] = ()
    log_dir: str = "logs"
    every: float | None = None
    threads: int = DEFAULT_THREADS
    claims: dict[str, str] | None = None
    registration: str | None = None
    replication: str | None = None
    replicate_seeds: frozenset[int] = frozenset()

    def __call__(self, cell: Cell, progress: Progress | None = None) -> CellResult:
        before = torch.get_num_threads()
        torch.set_num_threads(self.threads)
        try:
            if progress is not None or self.every is None or sys.stderr.isatty():
                result = run_cell(cell, progress=progress, loggers=self.loggers,
                                  log_dir=self.log_dir)
            else:
                with StepLines(cell, self.every) as lines:
                    result = run_cell(cell, progress=lines, loggers=self.loggers,
                                      log_dir=self.log_dir)
        finally:
            torch.set_num_threads(before)
        replicating = bool(self.replicate_seeds) and cell.trial_seed in self.replicate_seeds
        registration = self.replication if replicating else self.registration
        return replace(result, claims=self.claims, registration=registration)


def executor_spec(suite_default: dict[str, Any] | None, name: str | None,
                  options: dict[str, Any]) -> dict[str, Any]:
    """The executor to use: the suite's default, replaced by ``name`` when that differs,
    with the command line's ``options`` (None: not given) on top."""
    spec = dict(suite_default or {"name": "local"})
    if name is not None and name != spec["name"]:
        spec = {"name": name}
    return {**spec, **{k: v for k, v in options.items() if v is not None}}


def build_executor(reg: Registry, spec: dict[str, Any]) -> Executor:
    """The executor ``spec`` names, built with its params; one that is not an ``Executor``
    is refused."""
    entry = reg.get("executors", spec["name"])
    try:
        params = entry.params.model_validate({k: v for k, v in spec.items() if k != "name"})
    except ValidationError as exc:
        err = exc.errors()[0]
        raise RegistryError(f"executor {spec['name']!r}: "
                            f"{describe_validation_error(err, entry.params)}") from None
    built = entry.factory(params, BuildContext(seed=0, device=torch.device("cpu")))
    if not isinstance(built, Executor):
        raise RegistryError(f"executor {spec['name']!r} ({entry.origin}): its factory returned "
                            f"{type(built).__name__}, not a geobench.api.Executor")
    return built


@dataclass(frozen=True)
class RunOptions:
    """How ``run_suite`` runs a study's cells: the store, the executor and its options,
    which stored cells rerun (True: all; ``diverged``: those stored diverged), at most
    ``max_cells`` cells, the lease timeout, the loggers
    (besides the suite's) and their folder (default: ``logs/`` beside the store), the torch
    threads of each cell, which trial seeds run (``all``, the exploration or the
    confirmation seeds), and ``quiet`` (no progress)."""

    store: str = DEFAULT_STORE
    executor: str | None = None
    executor_options: dict[str, Any] = field(default_factory=dict)
    rerun: Rerun = False
    max_cells: int | None = None
    lease_timeout: float = LEASE_TIMEOUT_S
    loggers: tuple[str, ...] = ()
    log_dir: str | None = None
    threads: int = DEFAULT_THREADS
    seeds: SeedSet = "all"
    quiet: bool = False


def _registration(study: Study, seeds: SeedSet, which: SeedSet) -> Registration | None:
    """The profile's registration of its ``which`` seeds, with a warning where a run of
    ``seeds`` runs cells of a set whose claims or seeds differ from it, or (replication
    seeds) that has none."""
    registration = study.registered(which)
    runs = seeds == which or (seeds, which) == ("all", "confirm")
    if registration is not None and runs and not registration.same_claims(study.loaded,
                                                                          study.profile):
        name = NAMES[which]
        say(f"warning: {registration.path}: the suite's claims or {name} seeds differ from "
            f"their registration; a changed claim is post hoc on the {name} seeds")
    elif registration is None and runs and which == "replicate":
        say(f"warning: {study.path}: profile {study.profile!r}: its replication seeds run "
            "without a registration, so their verdicts are post hoc; `geobench register` "
            "writes it")
    return registration


def run_suite(suite: Study | str | Path, options: RunOptions | None = None) -> RunSummary:
    """Run every cell of ``suite`` (a ``Study``, or a suite file's path: its smoke profile)
    that the store does not hold yet (at most ``options.max_cells`` of them). Each cell is
    leased in the store before it runs, so runs sharing the store split the cells; a lease
    its owner has not renewed for ``options.lease_timeout`` seconds is taken over."""
    if options is not None and not isinstance(options, RunOptions):
        raise TypeError(f"run_suite(study, RunOptions(...)): options is a RunOptions, not "
                        f"{type(options).__name__}")
    o = options or RunOptions()
    study = suite if isinstance(suite, Study) else Study.open(suite)
    reg, loaded = study.registry, study.loaded
    cells = study.seed_cells(o.seeds)
    runner = build_executor(reg, executor_spec(loaded.suite.executor, o.executor,
                                               o.executor_options))
    chosen = select_loggers(reg, loaded.suite.loggers, list(o.loggers))
    if o.log_dir and not chosen and not o.quiet:
        say(f"geobench: --log-dir {o.log_dir} is not used: {study.path} selects no logger "
              "(add --logger NAME)")
    logs = o.log_dir or Path(o.store).parent / "logs"
    registration = _registration(study, o.seeds, "confirm")
    replication = _registration(study, o.seeds, "replicate")
    task = CellTask(chosen, prepare_log_dir(logs) if chosen else str(logs),
                    None if o.quiet else STEP_LINE_S, o.threads, claim_digests(loaded.suite),
                    None if registration is None else registration.sha256,
                    None if replication is None else replication.sha256,
                    frozenset(seed_plan(loaded, study.profile).seeds("replicate")))
    reset_warnings()
    _fit_memory(runner, cells, o.quiet)
    store = Store(o.store)
    since = time.time()
    try:
        done = store.settled([c.id for c in cells], since, o.rerun)
        todo = [c for c in cells if c.id not in done]
        summary = RunSummary(cells, skipped=len(done))
        progress = RunProgress(loaded.suite.name, len(cells), len(done), len(todo), o.max_cells,
                             o.quiet)
        owner = new_owner()
        release_dead(store, [c.id for c in todo])
        try:
            with Heartbeat(o.store, owner, o.lease_timeout):
                while todo:
                    held: list[Cell] = []
                    started = sum(summary.statuses.values())
                    limit = None if o.max_cells is None else o.max_cells - started
                    leased = _leased(store, todo, owner, o.lease_timeout, since, o.rerun, held,
                                     limit, summary)
                    lease = TaskLease(str(Path(o.store).resolve()), owner, o.lease_timeout)
                    for cell, result in _execute(runner, leased, progress, task, lease,
                                                 fresh=bool(o.rerun)):
                        if isinstance(result, BaseException):  # the executor lost the task
                            if held_elsewhere(store, cell.id, owner, since):
                                summary.elsewhere += 1
                                continue
                            result = _lost(cell, result)
                        store.write(cell, result, provenance(), owner)
                        summary.statuses[result.status] += 1
                        progress.finish(cell, result, len(held) + summary.elsewhere)
                    full = o.max_cells is not None \
                        and sum(summary.statuses.values()) >= o.max_cells
                    waiting = time.monotonic()
                    todo = [] if full else _await_others(store, held, o.lease_timeout, since,
                                                         o.rerun, summary, progress)
                    progress.waited += time.monotonic() - waiting
        finally:
            progress.close()
    finally:
        store.close()
    return summary


def _fit_memory(runner: Executor, cells: list[Cell], quiet: bool) -> None:
    """Let an executor that starts workers here (``fit_memory``) start no more than the
    machine's available memory holds at the calibrated peak of a cell (the CPU calibration;
    nothing to fit without one), and print the line it says."""
    path = calibration_path("cpu")
    available = available_mb()
    if type(runner).fit_memory is Executor.fit_memory or available is None \
            or not path.exists():  # starts no workers here, or nothing to fit them to
        return
    peak, _ = peak_mb(cells, Calibration.read(path))
    line = None if peak is None else runner.fit_memory(peak, available)
    if line is not None:
        print(f"geobench: {line}", file=sys.stderr, flush=True)


def _lost(cell: Cell, exc: BaseException) -> CellResult:
    now = time.time()
    return CellResult(cell.id, Status.FAILED, describe_failure(exc), started=now, finished=now)


def _leased(store: Store, cells: list[Cell], owner: str, timeout: float, since: float,
            rerun: Rerun, held: list[Cell], limit: int | None, summary: RunSummary
            ) -> Iterator[Cell]:
    """The cells ``owner`` leases, at most ``limit`` (what ``--max-cells`` leaves), one at a
    time as the executor asks for them; the cells another run holds go to ``held``, those
    another run has finished meanwhile are counted in ``summary.elsewhere``."""
    for cell in cells:
        if limit is not None and limit <= 0:
            return
        if store.lease(cell.id, owner, timeout, since, rerun):
            limit = None if limit is None else limit - 1
            yield cell
        elif cell.id not in store.settled([cell.id], since, rerun):
            held.append(cell)
        else:
            summary.elsewhere += 1


def _await_others(store: Store, held: list[Cell], timeout: float, since: float, rerun: Rerun,
                  summary: RunSummary, progress: RunProgress) -> list[Cell]:
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


def _execute(runner: Executor, todo: Iterator[Cell], progress: RunProgress, task: CellTask,
             lease: TaskLease, fresh: bool) -> Iterator[tuple[Cell, CellResult | BaseException]]:
    """The executor's results of ``todo``; an executor whose tasks may outlive this run
    (``tasks_hold_leases``) gets the run's ``lease`` for its tasks to take over, ``fresh``
    (a rerun: results an earlier run's tasks left are not used) and ``report`` (where its
    lines on the tasks' states go)."""
    if runner.tasks_hold_leases:
        return runner.map(task, todo, lease=lease, fresh=fresh, report=progress.say)
    if runner.in_process:
        def fn(cell: Cell) -> CellResult:
            progress.start(cell)
            return task(cell, progress.step if progress.tty else None)
        return runner.map(fn, todo)
    return runner.map(task, todo)
