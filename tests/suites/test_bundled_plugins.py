"""What the bundled plugins add to plugin loading: their entry points by name, their hooks,
their commands, and each paper plugin validating its suites with data and timm alone."""

import json

import pytest

from tests.conftest import REPO, run_cli, write_distribution
from tests.core.contract.test_plugins import BROKEN, plugin_names


def test_plugin_selection_by_entry_point_name(site, tmp_path, monkeypatch):
    write_distribution(site, "gb-broken", "1.0", "broken", "gb_broken", BROKEN)
    monkeypatch.setenv("GEOBENCH_PLUGINS", "data,timm,projecton")
    out = run_cli(["plugins", "--json"], tmp_path, site)
    assert out.returncode == 0 and "broken" not in out.stderr
    assert plugin_names(out) == ["core", "data", "timm"]
    assert ("warning: GEOBENCH_PLUGINS names 'projecton', which is no installed plugin "
            "(did you mean 'projection'?)") in out.stderr


def test_plugins_command_reports_a_bundled_plugins_hooks(tmp_path):
    out = run_cli(["plugins", "--json"], tmp_path)
    rows = {json.loads(line)["name"]: json.loads(line) for line in out.stdout.splitlines()}
    assert rows["projection"]["hooks"] == ["register_commands", "register_inits",
                                           "register_metrics", "register_objectives"]


def test_a_bundled_plugins_command_appears_in_help(tmp_path):
    helped = run_cli(["--help"], tmp_path)
    assert "orbit compression / metric singularity" in helped.stdout  # projection's analyze


def test_analyze_needs_the_projection_plugin(tmp_path, monkeypatch):
    monkeypatch.setenv("GEOBENCH_PLUGINS", "data,timm")
    helped = run_cli(["--help"], tmp_path)
    assert "analyze" not in helped.stdout
    assert run_cli(["analyze"], tmp_path).returncode == 2


@pytest.mark.parametrize("paper, suites", [
    ("projection", ["collapse", "orbit", "head_depth"]),
    ("mirror", ["mirror_flow", "mirror_cifar"]),
    ("alignment", ["alignment"]),
])
def test_each_paper_plugin_alone_validates_its_suites(paper, suites, tmp_path, monkeypatch):
    monkeypatch.setenv("GEOBENCH_PLUGINS", f"{paper},data,timm")
    for suite in suites:
        out = run_cli(["validate", str(REPO / "suites" / f"{suite}.yaml")], tmp_path)
        assert out.returncode == 0 and out.stderr == "", out.stderr
