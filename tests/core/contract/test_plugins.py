"""Plugin loading from entry points: selection, isolation of broken plugins, hook-name checks,
commands. The subprocesses autoload every installed plugin (the bundled ones too, where
installed) or select some; what the bundled plugins add: tests/suites/test_bundled_plugins.py."""

import json

import pytest

from geobench.contract.manager import load_registry
from geobench.contract.registry import Entry, Registry, RegistryError
from tests.conftest import run_cli, write_distribution

BROKEN = "raise ImportError('needs a package that is not installed')\n"
CLASH = """
from geobench.contract.hooks import hookimpl

@hookimpl
def register_heads(register):
    register("clash_head", lambda p, ctx: None, doc="registered before the clash")

@hookimpl
def register_executors(register):
    register("local", lambda p, ctx: None, doc="a second executor called local")
"""
MISSPELT = """
from geobench.contract.hooks import hookimpl

@hookimpl
def register_head(register):
    register("never_seen", lambda p, ctx: None)

@hookimpl
def register_executors(register):
    register("spelt_ok", lambda p, ctx: None, doc="registered through a known hook")
"""
RAISES = """
from geobench.contract.hooks import hookimpl

@hookimpl
def register_heads(register):
    register("half_done", lambda p, ctx: None)
    raise RuntimeError("boom in the hook")
"""
EXITS = """
import sys
from geobench.contract.hooks import hookimpl

@hookimpl
def register_metrics(register):
    sys.exit(3)
"""
COMMAND = """
from geobench.contract.hooks import hookimpl

@hookimpl
def register_commands(cli):
    def arguments(parser):
        parser.add_argument("words", nargs="*")

    def hello(args):
        print("hello", *args.words)
        return 0

    cli.add("hello", "say hello from a plugin", arguments, hello)
"""

UNHASHABLE = """
from dataclasses import dataclass
from geobench.contract.hooks import hookimpl

@dataclass
class Plugin:
    label: str = "x"

    @hookimpl(specname="register_heads")
    def heads(self, register):
        register("from_unhashable", lambda p, ctx: None)

plugin = Plugin()
"""
CLASH_WITH_COMMAND = CLASH + """
@hookimpl
def register_commands(cli):
    cli.add("clash_cmd", "must not run: the plugin is skipped", lambda parser: None,
            lambda args: 0)
"""


def plugin_names(out) -> list[str]:
    return [json.loads(line)["name"] for line in out.stdout.splitlines()]


def test_broken_plugin_is_reported_and_the_rest_load(site, tmp_path):
    write_distribution(site, "gb-broken", "1.0", "broken", "gb_broken", BROKEN)
    out = run_cli(["list", "executors", "--json"], tmp_path, site, autoload=True)
    assert out.returncode == 0, out.stderr
    assert ("warning: plugin 'broken' (dist gb-broken 1.0) failed to load: ImportError: "
            "needs a package that is not installed") in out.stderr
    names = {json.loads(line)["name"] for line in out.stdout.splitlines()}
    assert {"local", "pool"} <= names


def test_disable_autoload_keeps_only_the_core(site, tmp_path, monkeypatch):
    write_distribution(site, "gb-broken", "1.0", "broken", "gb_broken", BROKEN)
    monkeypatch.setenv("GEOBENCH_DISABLE_PLUGIN_AUTOLOAD", "1")
    out = run_cli(["plugins", "--json"], tmp_path, site)
    assert out.returncode == 0 and "gb-broken" not in out.stderr
    assert plugin_names(out) == ["core"]
    heads = run_cli(["list", "heads", "--json"], tmp_path, site)
    assert {json.loads(line)["name"] for line in heads.stdout.splitlines()} == {
        "identity", "linear", "mlp"}


def test_plugin_selection_by_entry_point_name(site, tmp_path):
    write_distribution(site, "gb-broken", "1.0", "broken", "gb_broken", BROKEN)
    write_distribution(site, "gb-hello", "0.3", "hello", "gb_hello", COMMAND)
    out = run_cli(["plugins", "--json"], tmp_path, site, toy=True,
                  extra_env={"GEOBENCH_PLUGINS": "toy,helo"})
    assert out.returncode == 0 and "broken" not in out.stderr
    assert plugin_names(out) == ["core", "toy"]
    assert ("warning: GEOBENCH_PLUGINS names 'helo', which is no installed plugin "
            "(did you mean 'hello'?)") in out.stderr


def test_plugins_command_reports_dist_version_and_hooks(site, tmp_path):
    write_distribution(site, "gb-hello", "0.3", "hello", "gb_hello", COMMAND)
    out = run_cli(["plugins", "--json"], tmp_path, site, toy=True, autoload=True)
    rows = {json.loads(line)["name"]: json.loads(line) for line in out.stdout.splitlines()}
    assert rows["hello"] == {"name": "hello", "dist": "gb-hello", "version": "0.3",
                             "hooks": ["register_commands"]}
    assert "register_heads" in rows["core"]["hooks"]
    assert rows["toy"] == {"name": "toy", "dist": "geobench-toy", "version": "0.1",
                           "hooks": ["register_augmentations", "register_backbones",
                                     "register_datasets", "register_metrics",
                                     "register_objectives"]}


def test_duplicate_name_skips_the_later_plugin_whole(site, tmp_path):
    write_distribution(site, "gb-clash", "2.0", "clash", "gb_clash", CLASH)
    out = run_cli(["list", "--json"], tmp_path, site, autoload=True)
    assert out.returncode == 0, out.stderr
    assert ("warning: plugin 'clash' (dist gb-clash 2.0) skipped: executor 'local' is "
            "registered twice: by core (geobench) and by clash (gb-clash)") in out.stderr
    names = {json.loads(line)["name"] for line in out.stdout.splitlines()}
    assert "clash_head" not in names and "local" in names


def test_unhashable_plugin_with_specname_hooks_loads_beside_the_others(site, tmp_path):
    (site / "gb_unhashable.py").write_text(UNHASHABLE)
    info = site / "gb_unhashable-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gb-unhashable\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[geobench]\nunhashable = gb_unhashable:plugin\n")
    out = run_cli(["list", "heads", "--json"], tmp_path, site, autoload=True)
    assert out.returncode == 0 and "warning" not in out.stderr, out.stderr
    names = {json.loads(line)["name"] for line in out.stdout.splitlines()}
    assert {"from_unhashable", "identity", "mlp"} <= names


def test_a_skipped_plugin_is_not_listed_and_its_commands_refuse(site, tmp_path):
    write_distribution(site, "gb-clash", "2.0", "clash", "gb_clash", CLASH_WITH_COMMAND)
    listed = run_cli(["plugins", "--json"], tmp_path, site, autoload=True)
    assert "clash" not in plugin_names(listed) and "skipped" in listed.stderr
    ran = run_cli(["clash_cmd"], tmp_path, site, autoload=True)
    assert ran.returncode == 2
    assert "geobench clash_cmd: plugin 'clash' was skipped" in ran.stderr


def test_misspelt_hook_is_named_with_a_suggestion(site, tmp_path):
    write_distribution(site, "gb-typo", "1.0", "typo", "gb_typo", MISSPELT)
    out = run_cli(["list", "executors", "--json"], tmp_path, site, autoload=True)
    assert out.returncode == 0, out.stderr
    assert ("warning: plugin 'typo' (dist gb-typo 1.0): 'register_head' is not a geobench "
            "hook (did you mean 'register_heads'?); it is ignored") in out.stderr
    assert "spelt_ok" in out.stdout


@pytest.mark.parametrize("code, reason", [(RAISES, "RuntimeError: boom in the hook"),
                                          (EXITS, "called sys.exit(3)")])
def test_hook_that_raises_or_exits_is_skipped(site, tmp_path, code, reason):
    write_distribution(site, "gb-bad", "1.0", "bad", "gb_bad", code)
    out = run_cli(["list", "--json"], tmp_path, site, toy=True, autoload=True)
    assert out.returncode == 0, out.stderr
    assert f"warning: plugin 'bad' (dist gb-bad 1.0) skipped: {reason}" in out.stderr
    names = {json.loads(line)["name"] for line in out.stdout.splitlines()}
    assert "half_done" not in names and {"local", "mlp", "toy_ce"} <= names


def test_plugin_command_appears_in_help_and_runs(site, tmp_path):
    write_distribution(site, "gb-hello", "0.3", "hello", "gb_hello", COMMAND)
    helped = run_cli(["--help"], tmp_path, site, autoload=True)
    assert "say hello from a plugin" in helped.stdout
    ran = run_cli(["hello", "a", "b"], tmp_path, site, autoload=True)
    assert ran.returncode == 0 and ran.stdout == "hello a b\n"


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
