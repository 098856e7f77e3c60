"""The options commands share (geobench.study.arguments, geobench.cli.options) and the one
command shape (geobench.cli.command): every core command parses the suite options the same
way."""

import argparse

import pytest

from geobench.cli import COMMANDS, parser
from geobench.cli import options as opts
from geobench.study import arguments
from geobench.suite import CELL_LIMIT, SuiteError


def test_key_value_options_read_yaml_values():
    assert arguments.pairs("--only", ["optimizer.lr=0.1", "optimizer.lr=0.01", "head=[1, 2]"]) == {
        "optimizer.lr": [0.1, 0.01], "head": [[1, 2]]}
    assert arguments.overrides("--set", ["train.steps=5", "train.steps=7", "tags.x=true"]) == {
        "train.steps": 7, "tags.x": True}
    for bad in ("train.steps", "=3"):
        with pytest.raises(SuiteError, match=f"--set {bad}: expected KEY=VALUE"):
            arguments.overrides("--set", [bad])


def test_counts_durations_and_the_cell_limit():
    assert opts.count("3") == 3 and opts.seconds("2.5") == 2.5
    for bad in ("0", "-1", "x", "1.5"):
        with pytest.raises(argparse.ArgumentTypeError, match="an integer >= 1"):
            opts.count(bad)
    for bad in ("0.5", "nan", "inf", "x"):
        with pytest.raises(argparse.ArgumentTypeError, match="seconds >= 1"):
            opts.seconds(bad)
    assert arguments.cell_limit(argparse.Namespace(cell_limit=None)) == CELL_LIMIT
    with pytest.raises(SuiteError, match="--cell-limit 0: the limit is a count >= 1"):
        arguments.cell_limit(argparse.Namespace(cell_limit=0))


@pytest.mark.parametrize("name", ["run", "show", "preflight", "validate", "results",
                                  "leaderboard", "claims", "collect"])
def test_every_suite_command_takes_the_same_suite_options(name):
    args = parser().parse_args([name, "s.yaml", "--profile", "mid", "--set", "a=1", "--only",
                                "b=2", "--cell-limit", "9"])
    assert (args.command, args.suite, args.profile, args.set, args.only, args.cell_limit) == (
        name, "s.yaml", "mid", ["a=1"], ["b=2"], 9)
    assert COMMANDS[name].name == name and COMMANDS[name].plugin == ""
