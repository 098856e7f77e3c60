"""``geobench new-plugin``'s scaffold installs as is: its own tests pass, geobench lists its
components with their origin and validates its suite; bad names and non-empty target
folders are refused without writing anything."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from geobench.contract.errors import RegistryError
from geobench.scaffold import write_plugin
from tests.conftest import cli_env, run_cli


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
    line = next(x for x in listed.stdout.splitlines() if "my_plugin_scaled_tanh" in x)
    assert "[my_plugin (My-Plugin) 0.1.0]" in line

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
