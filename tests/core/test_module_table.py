"""docs/architecture.md's module table against the tree: every core module with code has a
row, every row names a module that exists, and every test file a row names exists."""

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "geobench"
DOC = ROOT / "docs" / "architecture.md"
ROW = re.compile(r"^\| `([^`]+\.py)` \| .+ \| (.+) \|$")


def table(text: str) -> dict[str, list[str]]:
    """module path (under geobench/) -> the test files (under tests/) its row names."""
    rows = {}
    for line in text.splitlines():
        match = ROW.match(line)
        if match:
            rows[match[1]] = re.findall(r"`([^`]+\.py)`", match[2])
    return rows


def modules(root: Path = CORE) -> set[str]:
    """Every module under ``root`` with code of its own (an ``__init__.py`` that only
    imports and re-exports is left out)."""
    out = set()
    for path in root.rglob("*.py"):
        body = ast.parse(path.read_text(), str(path)).body
        if path.name == "__init__.py" and not any(
                isinstance(n, ast.FunctionDef | ast.ClassDef) for n in body):
            continue
        out.add(path.relative_to(root).as_posix())
    return out


def test_every_module_has_a_row_and_every_row_a_module():
    rows = table(DOC.read_text())
    assert sorted(modules() - set(rows)) == []
    assert sorted(set(rows) - modules()) == []


def test_every_row_names_test_files_that_exist():
    rows = table(DOC.read_text())
    assert [m for m, tests in rows.items() if not tests] == []
    assert sorted(t for tests in rows.values() for t in tests
                  if not (ROOT / "tests" / t).is_file()) == []


def test_the_check_reads_rows_and_sees_a_missing_one(tmp_path):
    text = ("| `a.py` | job | `core/test_a.py` |\n| `b/c.py` | job | `core/b/test_c.py`, "
            "`core/test_x.py` |\n| module | job | tests |\n")
    assert table(text) == {"a.py": ["core/test_a.py"],
                           "b/c.py": ["core/b/test_c.py", "core/test_x.py"]}
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("from pkg.m import f\n")
    (tmp_path / "pkg" / "m.py").write_text("def f():\n    pass\n")
    assert modules(tmp_path) == {"pkg/m.py"}
