"""docs/scaling.md shows only commands the cluster tests run: each ``$ geobench`` line is
one a test passes to ``documented``, each ``$ bash scripts/cluster.sh`` line one that
``make test-cluster`` runs. (Not a cluster test: it reads files only.)"""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _tested() -> set[str]:
    commands = set()
    for path in (ROOT / "tests" / "cluster").glob("test_*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "documented":
                commands.add(node.args[0].value)
    return commands


def test_every_command_on_the_scaling_page_is_run_by_the_cluster_tests():
    shown = re.findall(r"^\$ (.+)$", (ROOT / "docs" / "scaling.md").read_text(), re.M)
    makefile = (ROOT / "Makefile").read_text()
    recipe = makefile.split("test-cluster:")[1].split("\n\n")[0]
    assert len(shown) >= 6
    for command in shown:
        if command.startswith("geobench "):
            assert command in _tested(), f"no cluster test runs {command!r}"
        elif command.startswith("export SLURM_CONF="):
            assert "SLURM_CONF=$(CLUSTER_DIR)/etc/slurm.conf" in recipe
            assert "CLUSTER_DIR ?= /tmp/geobench-slurm\n" in makefile
            assert command == "export SLURM_CONF=/tmp/geobench-slurm/etc/slurm.conf"
        else:
            assert command in recipe, f"make test-cluster does not run {command!r}"
