"""Every command reads its suite file once: the ``Study`` reads and validates it, and every
question the command asks (cells, stored results, verdicts, the paper's Holm family, the
other scales, the page it publishes) goes to that one study. A sibling suite of the paper
is read once too."""

import argparse
from collections import Counter
from pathlib import Path

import pytest

import geobench.suite.load as load
from geobench.cli import main
from geobench.figures import figure_options, read_stored
from tests.core.suite_text import CLAIMS_BASE

SUITE = "name: NAME\npaper: PX\n" + CLAIMS_BASE.replace("steps: 30", "steps: 3") + """\
  metrics: [{name: nccc}]
seeds: 5
profiles:
  wide: {seeds: [10, 11, 12, 13, 14]}
  checked: {confirm: [20, 21, 22, 23, 24]}
claims:
  - {id: c, statement: s, metric: nccc.accuracy, expect: "> 0.2", posthoc: small design}
"""


@pytest.fixture
def reads(tmp_path, monkeypatch):
    """Suite file name -> how many times it was read, counted from here."""
    for name in ("one", "two"):
        (tmp_path / f"{name}.yaml").write_text(SUITE.replace("NAME", name))
    monkeypatch.chdir(tmp_path)
    assert main(["run", "two.yaml", "--store", "db.sqlite", "--quiet", "--no-leaderboard"]) == 0
    counts: Counter = Counter()
    real = load.load_yaml

    def counting(path):
        counts[Path(path).name] += 1
        return real(path)

    monkeypatch.setattr(load, "load_yaml", counting)
    return counts


@pytest.mark.parametrize("argv", [
    ["run", "one.yaml", "--store", "db.sqlite", "--quiet"],
    ["run", "one.yaml", "--store", "db.sqlite", "--quiet", "--profile", "checked",
     "--set", "train.steps=2"],
    ["show", "one.yaml"],
    ["validate", "one.yaml", "--profile", "wide"],
    ["preflight", "one.yaml", "--steps", "1"],
    ["results", "two.yaml", "--store", "db.sqlite"],
    ["leaderboard", "two.yaml", "--store", "db.sqlite"],
    ["claims", "two.yaml", "--store", "db.sqlite"],
    ["claims", "two.yaml", "--store", "db.sqlite", "--beside", "wide"],
    ["claims", "two.yaml", "--store", "db.sqlite", "--units"],
    ["collect", "two.yaml", "--store", "db.sqlite", "--folder", "jobs"],
], ids=lambda argv: " ".join(argv[:1] + argv[2:3] + argv[5:6]))
def test_a_command_reads_its_suite_once(reads, argv, capsys):
    assert main(argv) == 0
    suite = argv[1]
    sibling = {"one.yaml": "two.yaml", "two.yaml": "one.yaml"}[suite]
    assert reads[suite] == 1
    assert reads[sibling] <= 1  # read where the paper's Holm family needs it
    assert set(reads) <= {suite, sibling}


def test_a_figure_command_reads_its_suite_once(reads):
    parser = argparse.ArgumentParser()
    figure_options(parser, None, "PNG path")
    stored = read_stored(parser.parse_args(["two.yaml", "--store", "db.sqlite"]),
                         series=["nccc.accuracy"])
    assert len(stored.rows) == len(stored.cells) == 5
    assert dict(reads) == {"two.yaml": 1}
