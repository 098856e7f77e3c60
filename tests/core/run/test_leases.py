"""Leases between runs sharing a store (geobench.run.leases): owner names, owners that died
on this machine, the heartbeat that renews a run's leases and releases them at the end."""

import os
import re
import socket
import subprocess
import sys

import pytest

from geobench.run import leases
from geobench.run.leases import Heartbeat, new_owner, owner_died, release_dead
from geobench.run.store import Store
from tests.conftest import wait_until


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def _owner(pid: int, host: str | None = None, namespace: str | None = None) -> str:
    ns = leases._namespace() if namespace is None else namespace
    return f"{host or socket.gethostname()}:{pid}:{ns}:cafe0001"


def test_an_owner_is_host_pid_namespace_and_a_random_part():
    owner = new_owner()
    host, pid, namespace, rand = owner.split(":")
    assert (host, int(pid), namespace) == (socket.gethostname(), os.getpid(),
                                           leases._namespace())
    assert re.fullmatch(r"[0-9a-f]{8}", rand) and new_owner() != owner


def test_only_a_process_of_this_machine_that_is_gone_has_died():
    dead = _dead_pid()
    assert owner_died(_owner(dead))
    assert not owner_died(_owner(os.getpid()))  # alive
    assert not owner_died(_owner(dead, host="elsewhere"))
    assert not owner_died(_owner(dead, namespace="other.boot"))
    for odd in ("me", "a:b:c:d", "host:12:ns", f"{socket.gethostname()}:x:y:z"):
        assert not owner_died(odd)


@pytest.fixture
def store(tmp_path):
    db = Store(tmp_path / "db.sqlite")
    yield db
    db.close()


def test_release_dead_frees_only_the_leases_of_dead_owners(store):
    dead, alive, remote = _owner(_dead_pid()), _owner(os.getpid()), _owner(1, host="remote")
    for cell, owner in (("c1", dead), ("c2", alive), ("c3", remote), ("c4", dead)):
        assert store.lease(cell, owner, timeout=600, since=0)
    release_dead(store, ["c1", "c2", "c3"])
    assert {c: o for c, (o, _) in store.leases(["c1", "c2", "c3", "c4"]).items()} == {
        "c2": alive, "c3": remote}  # c4 went too: release frees every lease of its owner


def test_the_heartbeat_renews_the_leases_and_releases_them_at_the_end(store, tmp_path):
    owner = new_owner()
    assert store.lease("c1", owner, timeout=0.4, since=0)
    first = store.leases(["c1"])["c1"][1]
    with Heartbeat(tmp_path / "db.sqlite", owner, timeout=0.4):  # renews every 0.1 s
        wait_until(lambda: store.leases(["c1"])["c1"][1] > first, 60, "a renewal", poll=0.01)
        assert store.leases(["c1"])["c1"][0] == owner
    assert store.leases(["c1"]) == {}
