"""Slurm executor on submitit: the missing cells go out as one job array, each array task
runs exactly one cell and writes ``<folder>/<cell id>.result.pkl``; the driver collects
those files into the store as they appear and removes each once stored. A driver that
stops (logout, Ctrl-C, killed) leaves the jobs running; ``geobench collect SUITE`` stores
whatever they have written since, and so does a rerun, which submits none of those cells
again: each array task takes its cell's lease over from the driver and renews it while it
runs (``TaskLease``), so a rerun waits for a cell whose task still runs. Needs
``pip install geobench[slurm]``."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import time
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from geobench.contract.interfaces import Executor, Params
from geobench.records import Cell, CellResult
from geobench.run.leases import TaskLease
from geobench.run.provenance import provenance
from geobench.run.safeload import UnreadableFileError, check_private, load_pickle
from geobench.run.store import Store

RESULT_SUFFIX = ".result.pkl"
STATE_WORDS = {"UNKNOWN": "not yet in accounting"}  # what sacct does not know yet


class SlurmParams(Params):
    folder: str = Field("results/slurm", description="logs and result files of the jobs")
    cluster: Literal["auto", "slurm", "local", "debug"] = Field(
        "auto", description="submitit cluster: auto uses Slurm when sbatch exists, else local")
    partition: str | None = Field(None, description="Slurm partition")
    gpus_per_node: int = Field(0, ge=0)
    cpus_per_task: int = Field(2, ge=1)
    timeout_min: int = Field(60, ge=1, description="wall-time limit of each array task")
    array_parallelism: int = Field(64, ge=1, description="array tasks running at once")
    poll_seconds: float = Field(2.0, gt=0, description="how often the driver looks for results")
    state_seconds: float = Field(30.0, gt=0, description="how often the driver asks the "
                                                          "scheduler (sacct) for the tasks' states")


def result_path(folder: str | Path, cell_id: str) -> Path:
    return Path(folder) / f"{cell_id}{RESULT_SUFFIX}"


def load_result(path: Path, cell_id: str) -> CellResult:
    """The ``CellResult`` of ``cell_id`` stored at ``path`` (private paths only); one
    written by an older geobench gets the fields it lacks at their defaults."""
    result = load_pickle(path)
    if not isinstance(result, CellResult) or result.cell_id != cell_id:
        raise UnreadableFileError(f"{path}: not the result of cell {cell_id} (holds "
                                  f"{type(result).__name__})")
    defaults = CellResult(cell_id, result.status)
    for name in (f.name for f in dataclasses.fields(CellResult) if f.name not in vars(result)):
        setattr(result, name, getattr(defaults, name))
    return result


def collect(cells: list[Cell], store: str | Path, folder: str | Path) -> tuple[int, int, int]:
    """Store the results that array tasks wrote to ``folder`` for the ``cells`` the store
    does not hold yet (every file read before any is stored), removing each file once
    stored and those of cells stored already; returns how many were collected, how many
    were stored already and how many are still missing."""
    opened = Store(store)
    try:
        done = opened.done_ids([c.id for c in cells])
        for cell in cells:
            if cell.id in done:
                result_path(folder, cell.id).unlink(missing_ok=True)
        found = [(c, result_path(folder, c.id)) for c in cells if c.id not in done]
        found = [(c, p) for c, p in found if p.exists()]
        results = [(cell, load_result(path, cell.id)) for cell, path in found]
        for (cell, result), (_, path) in zip(results, found):
            opened.write(cell, result, provenance())
            path.unlink(missing_ok=True)
    finally:
        opened.close()
    return len(found), len(done), len(cells) - len(done) - len(found)


def run_and_save(fn: Callable[[Any], Any], item: Any, folder: str,
                 lease: TaskLease | None = None) -> None:
    """One array task: run one cell and write its result atomically, writable by its owner
    alone (whatever the umask) so that the driver agrees to load it; holding the cell's
    ``lease`` until the file is written."""
    with lease.held(item.id) if lease is not None else contextlib.nullcontext():
        _save(fn(item), result_path(folder, item.id))


def _save(result: Any, path: Path) -> None:
    tmp = path.with_suffix(".tmp")
    with open(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as fh:
        pickle.dump(result, fh)
    os.chmod(tmp, 0o600)  # an existing file keeps its mode through O_CREAT
    os.replace(tmp, path)


class SlurmExecutor(Executor):
    tasks_hold_leases = True

    def __init__(self, params: SlurmParams) -> None:
        try:
            import submitit
        except ImportError:
            raise RuntimeError("the slurm executor needs submitit: "
                               "pip install 'geobench[slurm]'") from None
        self.submitit, self.params = submitit, params

    def _executor(self):
        p = self.params
        cluster = None if p.cluster == "auto" else p.cluster
        ex = self.submitit.AutoExecutor(folder=Path(p.folder) / "logs", cluster=cluster)
        extra: dict[str, Any] = {}
        if ex.cluster == "slurm":  # a cell cannot checkpoint: no early warning (USR2) to
            # end it before its limit, so that the limit ends it and sacct says TIMEOUT
            extra["slurm_additional_parameters"] = {"signal": "CONT@1"}
            if p.partition:
                extra["slurm_partition"] = p.partition
        ex.update_parameters(timeout_min=p.timeout_min, gpus_per_node=p.gpus_per_node,
                             cpus_per_task=p.cpus_per_task,
                             slurm_array_parallelism=p.array_parallelism, **extra)
        return ex

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any],
            lease: TaskLease | None = None, fresh: bool = False,
            report: Callable[[str], None] | None = None) -> Iterator[tuple[Any, Any]]:
        """Each item's result as its file appears (then the file is removed: the caller
        has stored it when it asks for the next). An item whose file a task of an earlier
        run left is not submitted again, unless ``fresh`` (a rerun), which removes that file
        first. With ``lease``, each task holds its cell's lease while it runs. Every
        ``state_seconds`` the tasks' states are asked for in one query; ``report`` gets a line
        whenever their tally changes (``job 12: 2 running, 1 pending``). A task the scheduler
        has ended without a result fails its item, naming the task and its state; one the
        scheduler does not know yet (accounting lags) is waited for."""
        items = list(items)
        if not items:
            return
        folder = self.params.folder
        Path(folder).mkdir(mode=0o700, parents=True, exist_ok=True)
        check_private(folder)  # before any job runs: its results could not be loaded
        for item in [i for i in items if result_path(folder, i.id).exists()]:
            if fresh:
                result_path(folder, item.id).unlink()
                continue
            items.remove(item)
            yield from _collected(item, result_path(folder, item.id))
        if not items:
            return
        jobs = self._executor().map_array(run_and_save, [fn] * len(items), items,
                                          [folder] * len(items), [lease] * len(items))
        pending = dict(zip(jobs, items))
        asked, shown = float("-inf"), ""
        while pending:
            if time.monotonic() - asked >= self.params.state_seconds:
                next(iter(pending)).done(force_check=True)  # one query for the whole array
                asked = time.monotonic()
                shown = _report(pending, shown, report)
            for job, item in list(pending.items()):
                path = result_path(folder, item.id)
                finished = job.done()  # before looking for the file: no result is missed
                if path.exists():
                    del pending[job]
                    yield from _collected(item, path)
                elif finished:
                    del pending[job]
                    yield item, RuntimeError(f"array task {job.job_id} ended {job.state} without "
                                             f"a result (its log: {job.paths.stderr})")
            if pending:
                time.sleep(self.params.poll_seconds)


def _report(pending: dict[Any, Any], shown: str, report: Callable[[str], None] | None) -> str:
    """Report the tally of the ``pending`` tasks' states when it differs from ``shown``
    (``job 12: 2 running, 1 pending``); returns the tally now."""
    states = (job.state.split()[0] for job in pending)  # "CANCELLED by 0": its first word
    tally = Counter(STATE_WORDS.get(state, state.lower()) for state in states)
    arrays = sorted({str(job.job_id).split("_")[0] for job in pending})
    line = f"job {', '.join(arrays)}: " + ", ".join(f"{n} {state}"
                                                   for state, n in sorted(tally.items()))
    if report is not None and line != shown:
        report(line)
    return line


def _collected(item: Any, path: Path) -> Iterator[tuple[Any, Any]]:
    """``item`` with the result at ``path``, which is removed once the caller asks for more
    (it has stored it); a file that cannot be loaded (not private, corrupt) fails the cell
    and is set aside as ``<name>.unreadable`` for inspection, so that a rerun runs the cell
    again."""
    try:
        result = load_result(path, item.id)
    except UnreadableFileError as exc:
        aside = path.with_name(path.name + ".unreadable")
        path.replace(aside)
        yield item, UnreadableFileError(f"{exc} (set aside as {aside.name})")
        return
    yield item, result
    path.unlink(missing_ok=True)


def build_slurm(params: SlurmParams, ctx: Any) -> SlurmExecutor:
    return SlurmExecutor(params)
