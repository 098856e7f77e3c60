"""Leases let several runs share one store: a cell is leased (owner, expiry) before it runs,
a background thread extends the owner's leases, and a lease that expired (its owner stopped
renewing it) may be taken over — at once when the owner was a process of this machine, in
this process namespace, that no longer exists. A task that may outlive its run (a Slurm
array task) takes its cell's lease over and renews it itself (``TaskLease``). See
``Store.lease``."""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from geobench.run.store import Store, StoreError, check_exists

LEASE_TIMEOUT_S = 120.0


def _namespace() -> str:
    """This boot of this machine and its process-id namespace (two containers may share a
    host name but not these); empty where /proc does not say."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()[:8]
        return f"{boot}.{os.stat('/proc/self/ns/pid').st_ino}"
    except OSError:
        return ""


def new_owner() -> str:
    """A name no other run shares: ``host:pid:namespace:random``."""
    return f"{socket.gethostname()}:{os.getpid()}:{_namespace()}:{uuid.uuid4().hex[:8]}"


def task_owner(run: str) -> str:
    """The owner name of a task of ``run`` (``new_owner()`` whose last part ends with the
    run's), so that the run knows its own task's lease from another run's."""
    return f"{new_owner()}.{run.rsplit(':', 1)[-1]}"


def is_task_of(owner: str, run: str) -> bool:
    return owner.endswith("." + run.rsplit(":", 1)[-1])


def owner_died(owner: str) -> bool:
    """True when ``owner`` ran on this machine, in this process namespace, and its process no
    longer exists (a run killed with SIGKILL): its leases need not wait for the timeout."""
    parts = owner.split(":")
    if len(parts) != 4 or not parts[1].isdigit():
        return False
    host, pid, namespace, _ = parts
    if host != socket.gethostname() or namespace != _namespace():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def held_elsewhere(store: Store, cell_id: str, owner: str, since: float) -> bool:
    """Whether another run stored ``cell_id`` since ``since`` or holds its lease and is
    alive: a task ``owner`` lost must not record a failure over that run's cell. A lease
    one of ``owner``'s own tasks holds is not another run's (the scheduler ended the task;
    its process may not have exited yet)."""
    holder = store.leases([cell_id]).get(cell_id)
    taken = holder is not None and holder[0] != owner and not is_task_of(holder[0], owner) \
        and not owner_died(holder[0])
    return taken or cell_id in store.settled([cell_id], since)


def release_dead(store: Store, ids: list[str]) -> None:
    """Release the leases on ``ids`` whose owner died on this machine."""
    for owner in {owner for owner, _ in store.leases(ids).values()}:
        if owner_died(owner):
            store.release(owner)


class LeaseLost(RuntimeError):
    """Another run took a cell's lease over before the task handed it could take it."""


@dataclass(frozen=True)
class TaskLease:
    """How a task that may outlive its run (a Slurm array task) holds its cell's lease: the
    store, the run's owner and the lease timeout. Picklable, sent with the task."""

    store: str
    owner: str
    timeout: float

    @contextlib.contextmanager
    def held(self, cell_id: str) -> Iterator[None]:
        """Take ``cell_id``'s lease over from the run and keep it alive (``Heartbeat``) while
        the block runs, then hand it back to the run, which stores the result: a rerun after
        the run died sees the cell held and waits instead of running it again. The store
        must be a file this task sees (``StoreError`` otherwise). ``LeaseLost`` when another
        run took the lease meanwhile (the run stopped renewing it): the cell is theirs."""
        check_exists(Path(self.store))  # a node that does not see it would create one
        mine = task_owner(self.owner)
        with contextlib.closing(Store(self.store)) as store:
            taken = store.hand_over(cell_id, self.owner, mine, self.timeout)
        if not taken:
            raise LeaseLost(f"cell {cell_id}: another run took its lease over from "
                            f"{self.owner}; not run here")
        with Heartbeat(self.store, mine, self.timeout):
            yield
            with contextlib.closing(Store(self.store)) as store:
                store.hand_over(cell_id, mine, self.owner, self.timeout)


class Heartbeat:
    """While open, extends ``owner``'s leases every ``timeout / 4`` seconds on its own
    connection (a failed renewal is warned about once and retried); on close, releases the
    leases of cells that did not finish."""

    def __init__(self, path: str | Path, owner: str, timeout: float) -> None:
        self.path, self.owner, self.timeout = path, owner, timeout
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="geobench-heartbeat",
                                        daemon=True)

    def _beat(self) -> None:
        warned = False
        while not self._stop.wait(self.timeout / 4):
            try:
                store = Store(self.path)
                try:
                    store.renew(self.owner, self.timeout)
                finally:
                    store.close()
            except StoreError as exc:
                if not warned:
                    print(f"warning: could not renew the leases of this run ({exc}); "
                          "retrying", file=sys.stderr, flush=True)
                    warned = True

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()
        try:
            store = Store(self.path)
            store.release(self.owner)
            store.close()
        except StoreError:
            pass  # unreleased leases expire after the timeout
