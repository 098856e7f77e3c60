"""The import contract: the core imports no plugin; a plugin imports no paper plugin but
its own; the store and the records layer stay below the engine."""

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAPERS = ("geobench_projection", "geobench_mirror", "geobench_alignment")
PLUGINS = ("geobench_data", "geobench_timm", *PAPERS)


def imported(package: Path) -> dict[str, set[str]]:
    """file (relative to the repository) -> top-level modules and dotted names it imports,
    at any depth (imports inside functions count)."""
    out: dict[str, set[str]] = {}
    for path in package.rglob("*.py"):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
        out[str(path.relative_to(ROOT))] = names
    return out


def offending(package: Path, forbidden: tuple[str, ...]) -> list[str]:
    return sorted(f"{file} imports {name}" for file, names in imported(package).items()
                  for name in names if name.split(".")[0] in forbidden)


def test_the_core_imports_no_plugin():
    assert offending(ROOT / "geobench", PLUGINS) == []


@pytest.mark.parametrize("plugin", PLUGINS)
def test_a_plugin_imports_no_paper_plugin_but_its_own(plugin):
    others = tuple(p for p in PAPERS if p != plugin)
    assert offending(ROOT / "plugins" / plugin, others) == []


@pytest.mark.parametrize("module, forbidden", [
    ("records.py", ("torch", "geobench.engine", "geobench.store", "geobench.suite")),
    ("store.py", ("torch", "geobench.engine", "geobench.suite", "geobench.runner")),
    ("params.py", ("torch",)),
    ("errors.py", ("torch",)),
    ("registry.py", ("torch", "geobench.api")),
    ("plugins.py", ("torch", "geobench.api")),
])
def test_lower_floors_do_not_reach_up(module, forbidden):
    names = imported(ROOT / "geobench")[f"geobench/{module}"]
    tree = ast.parse((ROOT / "geobench" / module).read_text())
    typing_only = {n.module for node in ast.walk(tree) if isinstance(node, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(node.test)
                   for n in ast.walk(node) if isinstance(n, ast.ImportFrom)}
    bad = [n for n in names - typing_only if any(n == f or n.startswith(f + ".")
                                                 for f in forbidden)]
    assert bad == []
