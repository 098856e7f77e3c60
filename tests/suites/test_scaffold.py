"""``geobench new-plugin``'s scaffold installs as is: its own tests pass, geobench lists its
components with their origin and validates its suite; bad names and non-empty target
folders are refused without writing anything. Its templates (geobench/templates/plugin) are
each rendered, shipped and linted as the Python they become."""

from __future__ import annotations

import importlib
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from geobench.contract.errors import RegistryError
from geobench.scaffold import MODULE_TOKEN, NAME_TOKEN, SUFFIX, template_files, write_plugin
from tests.conftest import cli_env, run_cli

ROOT = Path(__file__).resolve().parents[2]
TEMPLATES = ROOT / "geobench" / "templates"
WRITTEN = ["README.md", "my_plugin/__init__.py", "my_plugin/heads.py", "my_plugin/maps.py",
           "my_plugin/plugin.py", "pyproject.toml", "suites/example.yaml", "tests/test_plugin.py"]


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else b""
            for p in sorted(folder.rglob("*"))}


def test_scaffold_installs_and_passes_its_own_tests(tmp_path):
    target = write_plugin("My-Plugin", tmp_path / "src")
    assert target == tmp_path / "src" / "My-Plugin"
    site = tmp_path / "site"
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-build-isolation",
         "--no-index", "--no-cache-dir", "--disable-pip-version-check", "--quiet",
         "--target", str(site), str(target)],
        capture_output=True, text=True, timeout=120)
    assert pip.returncode == 0, pip.stderr
    assert (site / "my_plugin" / "plugin.py").is_file()

    # the installed copy, not the source folder (PYTHONSAFEPATH keeps the cwd off sys.path)
    tests = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(target / "tests")],
        cwd=target, env=cli_env(site, {"PYTHONSAFEPATH": "1"}), capture_output=True, text=True,
        timeout=300)
    assert tests.returncode == 0, tests.stdout + tests.stderr
    assert " passed" in tests.stdout and "failed" not in tests.stdout

    listed = run_cli(["list", "heads"], tmp_path, site)
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()  # the head's name, description and origin
    at = next(i for i, x in enumerate(lines) if x.startswith("  my_plugin_scaled_tanh "))
    entry = lines[at:next(i for i in range(at + 1, len(lines))
                          if lines[i].startswith(" " * 6) and lines[i][6] != " ")]
    assert "[my_plugin (My-Plugin) 0.1.0]" in entry[-1]

    valid = run_cli(["validate", str(target / "suites" / "example.yaml")], tmp_path, site)
    assert valid.returncode == 0, valid.stderr
    assert "valid" in valid.stdout


def test_generated_code_is_ruff_clean(tmp_path):
    pytest.importorskip("ruff")
    target = write_plugin("my-plugin", tmp_path)
    out = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(target)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr


@pytest.mark.parametrize("name, problem", [
    ("", "a letter, then letters, digits"),
    ("1plugin", "a letter, then letters, digits"),
    ("my plugin", "a letter, then letters, digits"),
    ("my.plugin", "a letter, then letters, digits"),
    ("-plugin", "a letter, then letters, digits"),
    ("p" * 41, "at most 40 characters"),
    ("Class", "'class' is a Python keyword"),
    ("tests", "'tests' is a folder of the package"),
    ("Suites", "'suites' is a folder of the package"),
    ("mirror", "a geobench plugin 'mirror' already exists"),
    ("core", "a geobench plugin 'core' already exists"),
    ("torch", "a module 'torch' is already importable"),
    ("PyYAML", "a distribution of that name is already installed"),
])
def test_bad_names_are_refused_without_writing(tmp_path, name, problem):
    with pytest.raises(RegistryError, match=problem) as info:
        write_plugin(name, tmp_path)
    message = str(info.value)
    assert "\n" not in message and f"plugin name {name!r}" in message
    assert list(tmp_path.iterdir()) == []


def test_a_non_empty_target_is_left_alone(tmp_path):
    (tmp_path / "my-plugin").mkdir()
    (tmp_path / "my-plugin" / "notes.txt").write_text("mine")
    before = _files(tmp_path)
    with pytest.raises(RegistryError, match="exists and is not empty") as info:
        write_plugin("my-plugin", tmp_path)
    assert str(tmp_path / "my-plugin") in str(info.value)
    assert _files(tmp_path) == before


def test_a_file_in_the_way_is_refused(tmp_path):
    (tmp_path / "my-plugin").write_text("mine")
    with pytest.raises(RegistryError, match="exists and is not a folder"):
        write_plugin("my-plugin", tmp_path)
    with pytest.raises(RegistryError, match="exists and is not a folder"):
        write_plugin("other", tmp_path / "my-plugin")
    assert _files(tmp_path) == {"my-plugin": b"mine"}


def test_an_empty_target_folder_is_filled(tmp_path):
    (tmp_path / "my-plugin").mkdir()
    target = write_plugin("my-plugin", tmp_path)
    assert (target / "my_plugin" / "plugin.py").is_file()
    assert 'my_plugin = "my_plugin.plugin"' in (target / "pyproject.toml").read_text()


def test_cli_new_plugin(tmp_path):
    out = run_cli(["new-plugin", "my-plugin", "--dir", str(tmp_path)], tmp_path)
    assert out.returncode == 0 and str(tmp_path / "my-plugin") in out.stdout
    assert (tmp_path / "my-plugin" / "my_plugin" / "plugin.py").is_file()
    again = run_cli(["new-plugin", "my-plugin", "--dir", str(tmp_path)], tmp_path)
    assert again.returncode == 2 and len(again.stderr.strip().splitlines()) == 1
    assert str(tmp_path / "my-plugin") in again.stderr


def _relative_files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_every_template_is_shipped_and_rendered_once(tmp_path):
    tomllib = pytest.importorskip("tomllib")
    folder = TEMPLATES / "plugin"
    templates = _relative_files(folder)
    assert sorted(template_files()) == templates  # what write_plugin reads is the folder
    assert all(path.endswith(SUFFIX) for path in templates)
    patterns = [p for p in tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"][
        "setuptools"]["package-data"]["geobench"] if p.startswith("templates/")]
    shipped = {p.relative_to(folder).as_posix() for pattern in patterns
               for p in (ROOT / "geobench").glob(pattern) if p.is_file()}
    assert shipped == set(templates)  # ruff.toml, beside the folder, is not shipped

    target = write_plugin("my-plugin", tmp_path)
    written = _relative_files(target)
    assert written == sorted(p.removesuffix(SUFFIX).replace(MODULE_TOKEN, "my_plugin")
                             for p in templates)
    assert written == WRITTEN
    for path in written:
        text = (target / path).read_text(encoding="utf-8")
        assert NAME_TOKEN not in text and MODULE_TOKEN not in text, path


def test_rendered_modules_compile_and_import(tmp_path, monkeypatch):
    import torch

    from geobench.api import BuildContext

    target = write_plugin("Render-Check", tmp_path)
    sources = sorted(target.rglob("*.py"))
    assert len(sources) == 5
    for path in sources:
        compile(path.read_text(encoding="utf-8"), str(path), "exec", dont_inherit=True)
    monkeypatch.syspath_prepend(str(target))
    try:
        plugin = importlib.import_module("render_check.plugin")
        assert Path(plugin.__file__).is_relative_to(target)  # not the templates
        built: dict[str, object] = {}
        ctx = BuildContext(seed=0, device=torch.device("cpu"), feature_dim=4)

        given: dict[str, object] = {}

        def register(name, factory, params, doc, gives=None):
            assert doc
            built[name] = factory(params(), ctx)
            given[name] = gives

        plugin.register_heads(register)
        plugin.register_mirror_maps(register)
        assert set(built) == {"render_check_scaled_tanh", "render_check_quadratic",
                              "render_check_cosh"}
        assert built["render_check_scaled_tanh"](torch.zeros(2, 4)).shape == (2, 4)
        assert built["render_check_quadratic"].name == "render_check_quadratic"
        assert built["render_check_cosh"].name == "render_check_cosh"
        assert given["render_check_quadratic"] == {"horizon_degree": 2.0}
        assert given["render_check_cosh"] is None
        spec = importlib.util.spec_from_file_location("render_check_tests",
                                                      target / "tests" / "test_plugin.py")
        tests = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(tests)
        assert tests.Quadratic is importlib.import_module("render_check.maps").Quadratic
        assert (tests.HEAD, tests.MAP) == ("render_check_scaled_tanh", "render_check_quadratic")
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == "render_check"]:
            del sys.modules[name]


def test_templates_are_linted_as_the_generated_plugin_is(tmp_path):
    """geobench/templates/ruff.toml lints the *.py-tpl files with the generated plugin's ruff
    settings, its module name first-party (as in the generated package)."""
    pytest.importorskip("ruff")
    tomllib = pytest.importorskip("tomllib")
    ours = tomllib.loads((TEMPLATES / "ruff.toml").read_text())
    theirs = tomllib.loads((write_plugin("my-plugin", tmp_path) / "pyproject.toml").read_text())
    assert ours.pop("extend-include") == [f"*.py{SUFFIX}"]
    assert ours["lint"].pop("isort") == {"known-first-party": [MODULE_TOKEN]}
    assert ours == theirs["tool"]["ruff"]
    ruff = [sys.executable, "-m", "ruff", "check", "--no-cache"]
    seen = subprocess.run([*ruff, "--show-files", str(TEMPLATES)], capture_output=True,
                          text=True, timeout=60)
    assert sum(f".py{SUFFIX}" in line for line in seen.stdout.splitlines()) == 5, seen.stdout
    out = subprocess.run([*ruff, str(TEMPLATES)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stdout + out.stderr
