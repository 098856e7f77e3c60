"""``geobench run --executor ray --address`` against a real Ray cluster of several nodes
(``ray.cluster_utils.Cluster``: a head with no CPUs and one-CPU worker nodes, each its own
raylet): values equal local, a worker node removed while its cells run, a driver killed."""

import os
import signal

import pytest

from tests.cluster.conftest import (
    documented,
    executions,
    napping_suite,
    naps,
    stored,
    values,
)
from tests.conftest import cli_env, run_cli, start_cli, wait_until

pytestmark = pytest.mark.cluster


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """A head (no CPUs) and two one-CPU worker nodes whose workers load the toy and napping
    plugins installed in the cluster's site folder (as a plugin pip-installed on every node);
    the napping config each test writes is ``cluster.napping``."""
    cluster_utils = pytest.importorskip("ray.cluster_utils")
    root = tmp_path_factory.mktemp("ray")
    site = root / "site"
    site.mkdir()
    napping_suite(root, site, (0.1,))  # installs the napping plugin in site
    env = {**cli_env(site, toy=True), "GEOBENCH_TEST_NAPPING": str(root / "napping.json")}
    saved = dict(os.environ)
    os.environ.update(env)  # what the nodes' raylets, and so their workers, inherit
    cluster = cluster_utils.Cluster(initialize_head=True, head_node_args={"num_cpus": 0})
    try:
        for _ in range(2):
            cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        cluster.site, cluster.napping = site, root / "napping.json"
        yield cluster
    finally:
        cluster.shutdown()
        os.environ.clear()
        os.environ.update(saved)


def _args(cluster):
    return documented("geobench run suite.yaml --store db.sqlite --executor ray --address "
                      "<address>", address=cluster.address)


def test_cells_on_a_ray_cluster_store_what_the_local_executor_stores(tmp_path, ray_cluster):
    napping_suite(tmp_path, ray_cluster.site, (0.05, 0.1, 0.2))
    env = naps(ray_cluster.napping, tmp_path / "executions.log")
    on_ray = run_cli(_args(ray_cluster), tmp_path, ray_cluster.site, toy=True,
                     extra_env=env)
    assert on_ray.returncode == 0, on_ray.stderr
    assert len({where for _, where in executions(tmp_path / "executions.log")}) == 2  # both nodes
    local = run_cli(["run", "suite.yaml", "--store", "local.sqlite", "--no-leaderboard"],
                    tmp_path, ray_cluster.site, toy=True, extra_env=env)
    assert local.returncode == 0, local.stderr
    assert values(tmp_path / "db.sqlite") == values(tmp_path / "local.sqlite")


def test_cells_of_a_removed_node_are_retried_on_another_and_stored_once(tmp_path, ray_cluster):
    doomed = ray_cluster.add_node(num_cpus=1)
    ray_cluster.wait_for_nodes()
    napping_suite(tmp_path, ray_cluster.site, (0.05, 0.1, 0.2), steps=40)
    log, db = tmp_path / "executions.log", tmp_path / "db.sqlite"
    env = naps(ray_cluster.napping, log, "0.05:0.2,0.1:0.2,0.2:0.2")  # 8 s each
    driver = start_cli(_args(ray_cluster), tmp_path, ray_cluster.site, env,
                       toy=True)
    wait_until(lambda: doomed.node_id in {w for _, w in executions(log)}, 120,
               "a cell to start on the node to remove")
    lost = [lr for lr, where in executions(log) if where == doomed.node_id]
    ray_cluster.remove_node(doomed, allow_graceful=False)
    out, err = driver.communicate(timeout=300)
    assert driver.returncode == 0, err
    ran = executions(log)
    retried = [(lr, where) for lr, where in ran if lr in lost and where != doomed.node_id]
    print(f"removed node {doomed.node_id[:8]} ran {lost}; retried on {retried}")
    assert len(lost) == 1 and len(retried) == 1
    assert sorted(lr for lr, _ in ran) == sorted(["0.05", "0.1", "0.2", *lost])
    assert {lr: s for lr, (s, _) in stored(db).items()} == {
        "0.05": "complete", "0.1": "complete", "0.2": "complete"}  # each cell once


def test_a_rerun_after_the_driver_was_killed_resumes(tmp_path, ray_cluster):
    napping_suite(tmp_path, ray_cluster.site, (0.05, 0.1, 0.2), steps=40)
    log, db = tmp_path / "executions.log", tmp_path / "db.sqlite"
    env = naps(ray_cluster.napping, log, "0.1:0.5,0.2:0.5")  # 20 s each
    driver = start_cli(_args(ray_cluster), tmp_path, ray_cluster.site, env,
                       toy=True)
    wait_until(lambda: db.exists() and "0.05" in stored(db), 120, "the fast cell stored")
    driver.send_signal(signal.SIGKILL)
    driver.communicate(timeout=60)
    assert set(stored(db)) == {"0.05"}
    naps(ray_cluster.napping, log)
    rerun = run_cli(_args(ray_cluster), tmp_path, ray_cluster.site, toy=True,
                    extra_env=env)
    assert rerun.returncode == 0, rerun.stderr
    assert "1 already stored" in rerun.stdout
    assert [lr for lr, _ in executions(log)].count("0.05") == 1  # not trained again
    assert {s for s, _ in stored(db).values()} == {"complete"}
