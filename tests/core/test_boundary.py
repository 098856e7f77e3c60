"""The package boundary: what importing geobench's entry points loads, measured in a fresh
interpreter, and the import paths plugins use (docs/plugins.md, "Stable import paths")."""

import ast
import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from geobench.scaffold import render

ROOT = Path(__file__).resolve().parents[2]
STABLE = ("geobench", "geobench.api", "geobench.params", "geobench.hookspecs",
          "geobench.plugins", "geobench.geometry", "geobench.figures", "geobench.cli")
"""The import paths a plugin may use (geobench.geometry with its modules); geobench.cli for
its ``main`` only."""
LOADS = {  # sub-packages (and top modules) loaded by importing each entry point
    "geobench": {"geobench", "geobench.contract", "geobench.version"},
    "geobench.hookspecs": {"geobench", "geobench.contract", "geobench.hookspecs",
                           "geobench.version"},
    "geobench.suite": {"geobench", "geobench.contract", "geobench.records", "geobench.suite",
                       "geobench.version"},
    "geobench.claims": {"geobench", "geobench.claims", "geobench.contract", "geobench.records",
                        "geobench.suite", "geobench.version"},
}


def loaded_by(module: str) -> set[str]:
    """The geobench sub-packages and top modules in ``sys.modules`` after ``import module``
    in a new interpreter."""
    code = (f"import json, sys; import {module}; print(json.dumps(sorted({{'.'.join("
            "k.split('.')[:2]) for k in sys.modules if k.split('.')[0] == 'geobench'})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    return set(json.loads(out.stdout))


@pytest.mark.parametrize("module", sorted(LOADS))
def test_an_entry_point_loads_only_the_floors_below_it(module):
    assert loaded_by(module) == LOADS[module]


def test_the_results_api_loads_on_first_use():
    code = ("import sys, geobench; assert 'geobench.report' not in sys.modules; "
            "f = geobench.load_results; print(f.__module__, 'geobench.report' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=ROOT)
    assert out.stdout.split() == ["geobench.report.results", "True"]


def geobench_imports(text: str, name: str) -> set[str]:
    """The geobench modules a Python source imports, at any depth."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(text, name)):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
    return {n for n in found if n.split(".")[0] == "geobench"}


def unstable(text: str, name: str) -> list[str]:
    return sorted(f"{name} imports {n}" for n in geobench_imports(text, name)
                  if n not in STABLE and not n.startswith("geobench.geometry."))


def test_bundled_plugins_import_only_the_stable_paths():
    sources = sorted((ROOT / "plugins").rglob("*.py"))
    assert len(sources) > 20
    assert [line for p in sources
            for line in unstable(p.read_text(), str(p.relative_to(ROOT)))] == []


def test_the_scaffold_imports_only_the_stable_paths():
    files = {name: text for name, text in render("my-plugin").items() if name.endswith(".py")}
    assert any("tests" in name for name in files)
    assert [line for name, text in files.items() for line in unstable(text, name)] == []


def test_the_check_sees_an_unstable_import():
    text = "from geobench.report.stored import read_stored\nimport geobench.geometry.rank\n"
    assert unstable(text, "x.py") == ["x.py imports geobench.report.stored"]


def stable_path_table(text: str) -> dict[str, list[str]]:
    """docs/plugins.md's stable-path table: path -> the names its row lists (a call
    ``name(args)`` as its name; words with spaces and file names left out)."""
    section = text.split("## Stable import paths")[1].split("\n## ")[0]
    rows = re.findall(r"^\| `([\w.]+)` \| (.+) \|$", section, re.M)
    return {path: [re.sub(r"\(.*", "", name) for name in re.findall(r"`([^`]+)`", row)
                   if re.fullmatch(r"\w+(\(.*\))?", name)] for path, row in rows}


def test_the_stable_path_table_of_the_docs_is_true():
    table = stable_path_table((ROOT / "docs" / "plugins.md").read_text())
    assert set(table) == set(STABLE)
    missing = [f"{path}.{name}" for path, names in table.items() for name in names
               if not hasattr(importlib.import_module(path), name)]
    assert missing == []
    assert "suite_cells" in table["geobench.plugins"]  # the check reads the rows' names
