"""Process-pool executor: N worker processes run one cell at a time each; only the parent
writes results. A worker that dies (a signal, ``os._exit``) yields ``WorkerDied`` for the
cell it was running and is replaced; the other cells go on. Each cell sets its own torch
thread count (``geobench.run.runner.CellTask``), whichever executor runs it."""

from __future__ import annotations

import ctypes
import multiprocessing as mp
import os
import pickle
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import Any

from pydantic import Field

from geobench.contract.interfaces import Executor, Params
from geobench.run.executors import WorkerDied

STOP_SECONDS = 5.0  # how long a terminated worker may take to exit before it is killed
PR_SET_PDEATHSIG = 1  # prctl option (linux/prctl.h): a signal for when the parent dies
_NONE = object()  # no item left / no result yet


class PoolParams(Params):
    workers: int = Field(2, ge=1, description="worker processes")


def _sendable(exc: Exception) -> Exception:
    """``exc`` if it survives pickling, else a RuntimeError carrying its message."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")


class _Terminated(BaseException):
    """SIGTERM in a worker, raised where it runs so that the cell's ``finally`` blocks (its
    loggers' close) run before the worker dies of the signal."""


def _terminated(signum: int, frame: Any) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the unwinding
    raise _Terminated


def _die_with_parent(parent: int) -> None:
    """End this worker, silently, when its parent (pid ``parent``) dies. A run killed with
    SIGKILL cannot stop its workers, and a worker left training under PID 1 would train its
    cell a second time beside a rerun, which takes over a dead run's leases at once. On Linux
    the kernel sends SIGKILL when the parent's thread that started the worker (the one
    iterating ``map``) exits (``PR_SET_PDEATHSIG``); elsewhere, or should ``prctl`` fail, a
    daemon thread checks the parent pid every second. A parent that died before this ran is
    seen at once."""
    if sys.platform != "linux" or ctypes.CDLL(None, use_errno=True).prctl(
            PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) != 0:
        def watch() -> None:
            while os.getppid() == parent:
                time.sleep(1.0)
            os._exit(1)

        threading.Thread(target=watch, name="geobench-parent-watch", daemon=True).start()
    if os.getppid() != parent:
        os._exit(1)


def _serve(fn: Callable[[Any], Any], conn: Connection, parent: int) -> None:
    """A worker of process ``parent``: receive an item, send back ``fn(item)`` (or the
    exception it raised), until the parent closes the pipe or dies. Ctrl-C is the parent's to
    handle: it terminates the workers, which unwind the running cell and then die of
    SIGTERM."""
    _die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        signal.signal(signal.SIGTERM, _terminated)
        _loop(fn, conn)
    except _Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)


def _loop(fn: Callable[[Any], Any], conn: Connection) -> None:
    while True:
        try:
            item = conn.recv()
        except EOFError:
            return
        try:
            result = fn(item)
        except Exception as exc:
            result = _sendable(exc)
        try:
            conn.send(result)
        except Exception as exc:  # the result does not pickle: nothing was sent
            conn.send(RuntimeError(f"result of {type(result).__name__} not sendable: {exc}"))


def _death(exitcode: int | None) -> WorkerDied:
    """``worker died: signal 9 (Killed)`` / ``worker died: exit code 3``."""
    if exitcode is None:
        return WorkerDied("worker died: closed its pipe without exiting")
    if exitcode < 0:
        return WorkerDied(f"worker died: signal {-exitcode} ({signal.strsignal(-exitcode)})")
    return WorkerDied(f"worker died: exit code {exitcode}")


@dataclass
class _Worker:
    proc: BaseProcess
    conn: Connection
    item: Any = _NONE  # the item it is running; _NONE when idle

    def outcome(self) -> Any:
        """The result of its item, ``WorkerDied`` if it died without one, else ``_NONE``."""
        alive = self.proc.is_alive()  # before polling: a result sent before dying is read
        if self.conn.poll():
            try:
                return self.conn.recv()
            except (EOFError, OSError):  # its end of the pipe closed: it died
                pass
        elif alive:
            return _NONE
        self.proc.join(STOP_SECONDS)
        death = _death(self.proc.exitcode)
        self.stop()  # one that closed its pipe but lives on is not given another cell
        return death

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.join(STOP_SECONDS)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


class _Workers:
    """The worker processes of one ``map`` call, by slot, and the items still to send."""

    def __init__(self, fn: Callable[[Any], Any], items: Iterable[Any], size: int) -> None:
        self.ctx = mp.get_context("spawn")
        self.fn, self.todo = fn, iter(items)
        self.slots: list[_Worker | None] = [None] * size

    def _start(self) -> _Worker:
        parent, child = self.ctx.Pipe()
        proc = self.ctx.Process(target=_serve, args=(self.fn, child, os.getpid()),
                                daemon=True)
        proc.start()
        child.close()
        return _Worker(proc, parent)

    def feed(self, slot: int) -> None:
        """Send the next item (if any) to the worker of ``slot``, started anew unless alive."""
        item = next(self.todo, _NONE)
        if item is _NONE:
            return
        worker = self.slots[slot]
        if worker is None or not worker.proc.is_alive():
            if worker is not None:
                worker.stop()
            worker = self.slots[slot] = self._start()
        worker.item = item
        try:
            worker.conn.send(item)
        except OSError:  # it died just now: ``finished`` reports WorkerDied for the item
            pass

    def busy(self) -> dict[int, _Worker]:
        return {slot: w for slot, w in enumerate(self.slots) if w and w.item is not _NONE}

    def finished(self) -> list[tuple[int, Any, Any]]:
        """Wait until a busy worker has a result or has died: ``(slot, item, result)`` each."""
        busy = self.busy()
        wait([w.conn for w in busy.values()] + [w.proc.sentinel for w in busy.values()])
        done = []
        for slot, worker in busy.items():
            result = worker.outcome()
            if result is not _NONE:
                done.append((slot, worker.item, result))
                worker.item = _NONE
        return done

    def stop(self) -> None:
        for worker in self.slots:
            if worker is not None:
                worker.stop()


class PoolExecutor(Executor):
    def __init__(self, params: PoolParams) -> None:
        self.workers = params.workers

    def fit_memory(self, peak_mb: float, available_mb: float) -> str | None:
        """Start no more workers than ``available_mb`` holds at ``peak_mb`` each (at least
        one); the line saying so when that is fewer than asked for, else None."""
        fits = max(1, int(available_mb // peak_mb))
        if fits >= self.workers:
            return None
        asked, self.workers = self.workers, fits
        return (f"pool: {fits} of {asked} workers: {available_mb / 1024:.1f} GiB available, "
                f"a cell needs up to {peak_mb / 1024:.1f} GiB")

    def map(self, fn: Callable[[Any], Any], items: Iterable[Any]) -> Iterator[tuple[Any, Any]]:
        """Results in completion order; ``fn`` and the items must be picklable. A cell whose
        worker died yields ``WorkerDied``, one that raised yields its exception. Closing the
        generator early (Ctrl-C) terminates the workers."""
        pool = _Workers(fn, items, self.workers)
        try:
            for slot in range(self.workers):
                pool.feed(slot)
            while pool.busy():
                for slot, item, result in pool.finished():
                    yield item, result
                    pool.feed(slot)
        finally:
            pool.stop()


def build_pool(params: PoolParams, ctx: Any) -> PoolExecutor:
    return PoolExecutor(params)
