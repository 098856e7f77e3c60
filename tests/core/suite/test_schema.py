"""The suite file's models (geobench.suite.schema): names, trial seeds, the forms of a claim
and its compare, arms and loggers."""

import pytest
from pydantic import ValidationError

from geobench.suite.schema import Claim, Compare, Condition, LeaderboardMetric, Profile, Suite

BASE = {"name": "s", "base": {}}


def _fails(model, data, words: str) -> None:
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    assert words in str(info.value), str(info.value)


@pytest.mark.parametrize("name", ["a", "suite_1.v2-b", "A.B"])
def test_path_names(name):
    assert Suite.model_validate({**BASE, "name": name, "arms": {name: {}, "x": {}}}).name == name


@pytest.mark.parametrize("name", ["..", ".", "a/b", "my suite", "", "é"])
def test_names_that_would_leave_a_folder_are_refused(name):
    _fails(Suite, {**BASE, "name": name}, "names used in file paths")
    _fails(Suite, {**BASE, "profiles": {name: {}}}, "names used in file paths")


def test_seeds_are_a_count_or_distinct_non_negative_integers():
    assert Suite.model_validate(BASE).seeds == 1
    assert Suite.model_validate({**BASE, "seeds": 5}).seeds == 5
    assert Suite.model_validate({**BASE, "seeds": [7, 0, 3]}).seeds == [7, 0, 3]
    _fails(Suite, {**BASE, "seeds": 0}, "0 trial seeds: seeds is a count N >= 1")
    _fails(Suite, {**BASE, "seeds": []}, "seeds []: seeds is")
    _fails(Suite, {**BASE, "seeds": [1, -1]}, "seeds [1, -1]: seeds is")
    _fails(Suite, {**BASE, "seeds": [3, 7, 3]}, "trial seed 3 appears twice")
    for bad in (True, 2.0, "3", [1.5]):
        with pytest.raises(ValidationError):
            Suite.model_validate({**BASE, "seeds": bad})
    _fails(Profile, {"seeds": [1, 1]}, "trial seed 1 appears twice")


def test_compare_takes_exactly_one_form():
    assert Compare(key="optimizer.lr", a=0.1, b=0.2).key == "optimizer.lr"
    assert Compare(arm=["cl", "nscl"]).arm == ["cl", "nscl"]
    assert Compare(stat=["last", "first"]).stat == ["last", "first"]
    _fails(Compare, {}, "give one of 'key' with 'a' and 'b'")
    _fails(Compare, {"key": "k", "a": 1, "b": 2, "arm": ["x", "y"]}, "give one of")
    _fails(Compare, {"key": "k", "a": 1}, "'key' needs both 'a' and 'b'")
    _fails(Compare, {"stat": ["max", "max"]}, "two different reductions")
    _fails(Compare, {"arm": ["x"]}, "at least 2 items")
    _fails(Compare, {"stat": ["last", "median"]}, "'last', 'first', 'min', 'max' or 'mean'")


@pytest.mark.parametrize("expect, greater, threshold", [
    ("a < b", False, 0.0), (" a>b ", True, 0.0), ("> 0.5", True, 0.5), ("<-1e-3", False, -1e-3),
    ("> +2", True, 2.0)])
def test_expect_forms(expect, greater, threshold):
    compare = {"compare": {"stat": ["last", "first"]}} if "a" in expect else {}
    cond = Condition(metric="m.f", expect=expect, **compare)
    assert (cond.expects_greater, cond.threshold) == (greater, threshold)


@pytest.mark.parametrize("expect", ["more", "a = b", "< x", "a < c", "0.5", ">= 1"])
def test_malformed_expect_is_refused(expect):
    _fails(Condition, {"metric": "m.f", "expect": expect}, "String should match pattern")


def test_paired_and_one_sample_forms_are_consistent():
    _fails(Condition, {"metric": "m.f", "expect": "a < b"}, "compares a and b: give 'compare'")
    _fails(Condition, {"metric": "m.f", "expect": "< 1", "compare": {"arm": ["x", "y"]}},
           "is one-sample: leave out 'compare'")
    _fails(Condition, {"metric": "m.f", "expect": "a < b", "stat": "max",
                       "compare": {"stat": ["last", "first"]}}, "leave out 'stat'")
    _fails(Condition, {"metric": "m.f", "expect": "> 0", "scale": "log"},
           "scale: log needs a positive threshold")
    assert Condition(metric="m.f", expect="> 0.1", scale="log").scale == "log"
    _fails(Condition, {"metric": "m.f", "expect": "> 0", "margin": -0.1}, "greater than or equal")
    _fails(Condition, {"metric": "m.f", "expect": "> 0", "margin": float("nan")}, "finite")


def test_a_claims_parts_and_alternatives():
    claim = Claim(id="c_1", statement="s", metric="a.x", expect="> 0", where={"tags.k": 1},
                  also=[{"metric": "b.y", "expect": "< 2"},
                        {"metric": "c.z", "expect": "> 3", "where": {"tags.k": 2}}])
    main, first, second = claim.parts
    assert (main.metric, main.also, main.where) == ("a.x", [], {"tags.k": 1})
    assert (first.metric, first.expect, first.where, first.id) == ("b.y", "< 2", {"tags.k": 1},
                                                                   "c_1")
    assert (second.metric, second.where) == ("c.z", {"tags.k": 2})
    assert claim.alternatives == [{"tags.k": 1}]
    union = Claim(id="u", statement="s", metric="a.x", expect="> 0", where=[{"a": 1}, {"b": 2}])
    assert union.alternatives == [{"a": 1}, {"b": 2}]
    _fails(Claim, {"id": "a-b", "statement": "s", "metric": "m.f", "expect": "> 0"}, "pattern")


def test_suite_rules():
    _fails(Suite, {**BASE, "arms": {"only": {}}}, "'arms' needs two or more arms")
    claim = {"id": "c", "statement": "s", "metric": "m.f", "expect": "> 0"}
    _fails(Suite, {**BASE, "claims": [claim, claim]}, "claim id 'c' appears twice")
    suite = Suite.model_validate({**BASE, "loggers": ["tensorboard", {"name": "wandb"}]})
    assert suite.loggers == [{"name": "tensorboard"}, {"name": "wandb"}]
    _fails(Suite, {**BASE, "grids": {}}, "Extra inputs are not permitted")
    _fails(Suite, {"name": "s"}, "Field required")
    board = LeaderboardMetric(key="m.f")
    assert (board.stat, board.agg, board.fmt, board.nan, board.label) == ("last", "mean", ".4g",
                                                                          None, None)


def test_leaderboard_tables_labels_and_plot_x():
    board = Suite.model_validate({**BASE, "leaderboard": {
        "tables": [{"title": "T", "where": {"arm": ["a"], "tags.x": [1, 2]}}],
        "labels": {"tags.x": "x"},
        "plots": ["m.f", {"key": "m.f", "x": "optimizer.lr", "xlabel": "T"}]}}).leaderboard
    table = board.tables[0]
    assert (table.rows, table.metrics, board.labels) == (None, None, {"tags.x": "x"})
    assert board.plots[1].x == "optimizer.lr" and board.plots[1].xlabel == "T"
    assert Suite.model_validate(BASE).leaderboard.tables is None
    _fails(Suite, {**BASE, "leaderboard": {"tables": [{"title": "a\nb"}]}}, "title")
    _fails(Suite, {**BASE, "leaderboard": {"tables": [{"where": {}}]}}, "title")
    _fails(Suite, {**BASE, "leaderboard": {"tables": [{"title": "T", "row": ["x"]}]}}, "row")
