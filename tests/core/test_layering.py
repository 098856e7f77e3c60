"""The import contract: the core's sub-packages are floors (docs/architecture.md, "Glossary"
and "Floors") and a floor imports only floors below it (or itself); no module imports itself
back through others; the core imports no plugin; a plugin imports no paper plugin but its
own; the bottom floors stay torch-free; no two modules share a name."""

import ast
import re
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "geobench"
PAPERS = ("geobench_projection", "geobench_mirror", "geobench_alignment")
PLUGINS = ("geobench_data", "geobench_timm", *PAPERS)
FLOORS = {  # docs/architecture.md, "Floors and what each may import"
    "records": 0, "version": 0, "geometry": 0, "publish": 0, "audit": 0,
    "contract": 1,
    "suite": 2,
    "claims": 3,
    "study": 4,
    "train": 5,
    "run": 6,
    "report": 7,
    "components": 8,
    "site": 8,
    "api": 9, "params": 9, "hookspecs": 9, "plugins": 9, "figures": 9,  # the stable paths
}
TOP = 10  # cli, scaffold and the package itself
TORCH_FREE = ["records.py", "contract/errors.py", "contract/param_models.py", "contract/needs.py",
              "contract/hooks.py",
              "contract/registry.py", "contract/manager.py", "contract/spec.py", "suite",
              "run/store.py", "run/leases.py"]


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path, root: Path = ROOT) -> set[str]:
    """Dotted names ``path`` imports at any depth (inside functions too), leaving out imports
    under ``if TYPE_CHECKING``; ``from pkg import sub`` names the submodule when it is one."""
    tree = ast.parse(path.read_text(), str(path))
    typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(node.test) for n in ast.walk(node)}
    names: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = {f"{node.module}.{a.name}" for a in node.names}
            found = {s for s in subs if _is_module(root, s)}
            names |= found if found == subs else found | {node.module}
    return names


def _is_module(root: Path, dotted: str) -> bool:
    base = root.joinpath(*dotted.split("."))
    return base.with_suffix(".py").is_file() or (base / "__init__.py").is_file()


def core_imports(root: Path = ROOT) -> dict[str, set[str]]:
    """geobench module -> the geobench modules it imports; the bare package ``geobench``
    counts as the top floor, so a floor that imports it imports upward."""
    return {module_name(p, root): {n for n in imports_of(p, root)
                                   if n.split(".")[0] == "geobench"}
            for p in (root / "geobench").rglob("*.py")}


def top_level_imports(path: Path) -> set[str]:
    """Dotted names ``path`` imports when it is imported (module level, outside functions
    and ``if TYPE_CHECKING``)."""
    names: set[str] = set()
    for node in ast.parse(path.read_text(), str(path)).body:
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def floor(module: str) -> int:
    parts = module.split(".")
    return FLOORS.get(parts[1], TOP) if len(parts) > 1 else TOP


def upward_imports(root: Path = ROOT) -> list[str]:
    return sorted(f"{mod} (floor {floor(mod)}) imports {name} (floor {floor(name)})"
                  for mod, names in core_imports(root).items() for name in names
                  if floor(name) > floor(mod))


def import_cycles(root: Path = ROOT) -> list[list[str]]:
    graph = core_imports(root)
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(mod: str, path: list[str]) -> None:
        state[mod] = 1
        for nxt in sorted(graph.get(mod, set()) & set(graph)):
            if state.get(nxt) == 1:
                cycles.append(path[path.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt, path + [nxt])
        state[mod] = 2

    for mod in sorted(graph):
        if mod not in state:
            visit(mod, [mod])
    return cycles


def test_every_core_folder_is_a_floor():
    folders = {p.name for p in CORE.iterdir() if (p / "__init__.py").is_file()}
    modules = {p.stem for p in CORE.glob("*.py")} - {"__init__", "scaffold"}  # scaffold: top
    assert folders == set(FLOORS) - modules | {"cli"}  # cli: the top


def test_no_floor_imports_a_floor_above_it():
    assert upward_imports() == []


def test_the_bare_package_loads_only_the_bottom_floors():
    """``import geobench`` (which every import of a plugin or floor runs first) loads the
    hook marker and the version; the results API loads on first use."""
    for path in (CORE / "__init__.py", CORE / "hookspecs.py", CORE / "params.py"):
        loaded = {n for n in top_level_imports(path) if n.startswith("geobench.")}
        assert loaded and all(floor(n) <= FLOORS["contract"] for n in loaded), (path, loaded)


def write_tree(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_the_checks_see_an_import_of_the_bare_package(tmp_path):
    files = {"geobench/__init__.py": "", "geobench/suite/__init__.py": "",
             "geobench/suite/resolve.py": "import geobench\n"}
    write_tree(tmp_path, files)
    assert upward_imports(tmp_path) == [
        "geobench.suite.resolve (floor 2) imports geobench (floor 10)"]


def test_no_import_cycles():
    assert import_cycles() == []


def test_the_checks_see_an_upward_import_and_a_cycle(tmp_path):
    files = {"geobench/__init__.py": "", "geobench/run/__init__.py": "",
             "geobench/contract/__init__.py": "",
             "geobench/run/store.py": "from geobench.contract import spec\n",
             "geobench/contract/spec.py": "def f():\n    from geobench.run.store import S\n"}
    write_tree(tmp_path, files)
    assert upward_imports(tmp_path) == [
        "geobench.contract.spec (floor 1) imports geobench.run.store (floor 6)"]
    assert import_cycles(tmp_path) == [["geobench.contract.spec", "geobench.run.store",
                                        "geobench.contract.spec"]]


def test_the_core_imports_no_plugin():
    bad = sorted(f"{p.relative_to(ROOT)} imports {n}" for p in CORE.rglob("*.py")
                 for n in imports_of(p) if n.split(".")[0] in PLUGINS)
    assert bad == []


@pytest.mark.parametrize("plugin", PLUGINS)
def test_a_plugin_imports_no_paper_plugin_but_its_own(plugin):
    others = tuple(p for p in PAPERS if p != plugin)
    bad = sorted(f"{p.relative_to(ROOT)} imports {n}"
                 for p in (ROOT / "plugins" / plugin).rglob("*.py")
                 for n in imports_of(p) if n.split(".")[0] in others)
    assert bad == []


@pytest.mark.parametrize("where", TORCH_FREE)
def test_the_bottom_floors_import_no_torch(where):
    paths = [CORE / where] if where.endswith(".py") else sorted((CORE / where).rglob("*.py"))
    bad = sorted(f"{p.relative_to(ROOT)} imports {n}" for p in paths for n in imports_of(p)
                 if n.split(".")[0] in ("torch", "numpy") or n.startswith("geobench.train"))
    assert bad == []


def test_one_module_per_name():
    """One door per concept: no two modules or packages of the core share a name, a plural
    counting as its singular (``__init__`` and ``__main__`` aside)."""
    paths = [p for p in CORE.rglob("*.py") if p.stem not in ("__init__", "__main__")]
    paths += [p for p in CORE.rglob("*") if (p / "__init__.py").is_file()]
    names = Counter(p.stem.removesuffix("s") for p in paths)
    assert sorted(n for n, k in names.items() if k > 1) == []


def documented_floors(text: str) -> dict[str, int]:
    """docs/architecture.md's floor table: each package (``name/``), module (``name.py``)
    and the bare package (``geobench``) a row names -> that row's floor."""
    section = text.split("## Floors and what each may import")[1].split("\n## ")[0]
    out = {}
    for number, row in re.findall(r"^\| (\d+) \| (.+) \|$", section, re.M):
        for name in re.findall(r"`([^`]+)`", row):
            if name.endswith(("/", ".py")) or name == "geobench":
                out[name.removesuffix("/").removesuffix(".py")] = int(number)
    return out


def test_the_floor_table_of_the_docs_is_the_checked_one():
    documented = documented_floors((ROOT / "docs" / "architecture.md").read_text())
    assert documented == {**FLOORS, "cli": TOP, "scaffold": TOP, "geobench": TOP}
