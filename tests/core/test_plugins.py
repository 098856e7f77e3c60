import json

import pytest

from geobench.plugins import load_registry
from geobench.registry import Entry, Registry, RegistryError
from tests.conftest import run_cli, write_distribution

BROKEN = "raise ImportError('needs a package that is not installed')\n"
CLASH = """
from geobench.hookspecs import hookimpl

@hookimpl
def register_executors(register):
    register("local", lambda p, ctx: None, doc="a second executor called local")
"""


def test_broken_plugin_is_reported_and_the_rest_load(site, tmp_path):
    write_distribution(site, "gb-broken", "1.0", "broken", "gb_broken", BROKEN)
    out = run_cli(["list", "executors", "--json"], tmp_path, site)
    assert out.returncode == 0, out.stderr
    assert ("warning: plugin 'broken' (dist gb-broken 1.0) failed to load: ImportError: "
            "needs a package that is not installed") in out.stderr
    names = {json.loads(line)["name"] for line in out.stdout.splitlines()}
    assert {"local", "pool"} <= names


def test_disable_autoload_keeps_only_builtins(site, tmp_path, monkeypatch):
    write_distribution(site, "gb-broken", "1.0", "broken", "gb_broken", BROKEN)
    monkeypatch.setenv("GEOBENCH_DISABLE_PLUGIN_AUTOLOAD", "1")
    out = run_cli(["list", "executors"], tmp_path, site)
    assert out.returncode == 0 and "gb-broken" not in out.stderr


def test_plugin_selection_by_env(site, tmp_path, monkeypatch):
    write_distribution(site, "gb-broken", "1.0", "broken", "gb_broken", BROKEN)
    monkeypatch.setenv("GEOBENCH_PLUGINS", "core")
    out = run_cli(["list", "executors"], tmp_path, site)
    assert out.returncode == 0 and "broken" not in out.stderr


def test_duplicate_name_names_both_origins(site, tmp_path):
    write_distribution(site, "gb-clash", "2.0", "clash", "gb_clash", CLASH)
    out = run_cli(["list"], tmp_path, site)
    assert out.returncode == 2
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("executor 'local' is registered twice: by ")
    assert "core (geobench)" in last and "clash (gb-clash)" in last


def test_unknown_name_suggests_the_closest():
    reg = load_registry()
    with pytest.raises(RegistryError, match=r"'locl' is not a registered executor \(did you "
                                            r"mean 'local'\?\)"):
        reg.get("executors", "locl")


def test_registry_rejects_duplicates_directly():
    reg = Registry()
    entry = Entry("heads", "x", lambda p, c: None, dict, "", "a")
    reg.add(entry)
    with pytest.raises(RegistryError, match="by a and by b"):
        reg.add(Entry("heads", "x", lambda p, c: None, dict, "", "b"))
