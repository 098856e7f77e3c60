"""Leases let several runs share one store: a cell is leased (owner, heartbeat) before it
runs, a background thread renews the owner's leases, and a lease not renewed within the
timeout (its owner died) may be taken over — at once when the owner was a process on this
host that no longer exists. See ``Store.lease``."""

from __future__ import annotations

import os
import socket
import threading
import uuid
from pathlib import Path
from types import TracebackType

from geobench.store import Store, StoreError

LEASE_TIMEOUT_S = 120.0


def new_owner() -> str:
    """A name no other run shares: host, process id and a random suffix."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


def owner_died(owner: str) -> bool:
    """True when ``owner`` ran on this host and its process no longer exists (a run killed
    with SIGKILL): its leases need not wait for the timeout."""
    host, _, rest = owner.partition(":")
    pid = rest.partition(":")[0]
    if host != socket.gethostname() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # alive, another user's
        return False
    return False


def release_dead(store: Store, ids: list[str]) -> None:
    """Release the leases on ``ids`` whose owner died on this host."""
    for owner in {owner for owner, _ in store.leases(ids).values()}:
        if owner_died(owner):
            store.release(owner)


class Heartbeat:
    """While open, renews ``owner``'s leases every ``timeout / 4`` seconds on its own
    connection; on close, releases the leases of cells that did not finish."""

    def __init__(self, path: str | Path, owner: str, timeout: float) -> None:
        self.path, self.owner, self.every = path, owner, timeout / 4
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="geobench-heartbeat",
                                        daemon=True)

    def _beat(self) -> None:
        store = None
        try:
            store = Store(self.path)
            while not self._stop.wait(self.every):
                store.renew(self.owner)
        except StoreError:
            pass  # the run's own connection reports store problems
        finally:
            if store is not None:
                store.close()

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
