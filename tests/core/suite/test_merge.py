"""Merging run specs (geobench.suite.merge): mappings merge key by key; a component that
changes its name keeps only the inherited params the new one accepts."""

import pytest
from pydantic import Field

from geobench.contract.param_models import Params
from geobench.contract.registry import Entry, Registry
from geobench.suite.load import LoadedSuite
from geobench.suite.merge import (
    accepts_of,
    assign,
    deep_merge,
    get_dotted,
    merge_run,
    profile_view,
    set_dotted,
)
from geobench.suite.schema import Suite

ACCEPTS = {("objectives", "cl"): {"name", "tau"}, ("objectives", "nscl"): {"name", "tau", "pos"},
           ("objectives", "ce"): {"name"}, ("augmentations", "noise"): {"name", "sigma"},
           ("augmentations", "crop"): {"name", "size"}}


def accepts(kind, name):
    return ACCEPTS.get((kind, name))  # None: unknown, every inherited param is kept


def test_mappings_merge_and_everything_else_replaces():
    base = {"a": {"x": 1, "y": {"z": 2}}, "l": [1, 2], "s": "k"}
    over = {"a": {"y": {"w": 3}}, "l": [9], "s": {"now": "a map"}, "new": 4}
    assert deep_merge(base, over) == {"a": {"x": 1, "y": {"z": 2, "w": 3}}, "l": [9],
                                      "s": {"now": "a map"}, "new": 4}
    assert deep_merge({"a": 1}, None) is None and deep_merge(None, {"a": 1}) == {"a": 1}


def test_merging_never_changes_its_inputs():
    base, over = {"a": {"x": [1]}, "k": {"v": 1}}, {"a": {"y": [2]}}
    merged = deep_merge(base, over)
    assert merged == {"a": {"x": [1], "y": [2]}, "k": {"v": 1}}
    merged["a"]["y"].append(0)
    merged["a"]["z"] = 3
    assert base == {"a": {"x": [1]}, "k": {"v": 1}} and over == {"a": {"y": [2]}}


def test_the_merged_spec_shares_nothing_with_the_base():
    base = {"optimizer": {"name": "sgd", "lr": 0.1}, "train": {"steps": 3}}
    spec = merge_run(base, {"train": {"steps": 5}}, accepts)
    assign(spec, "optimizer.lr", 0.5, accepts)
    assert base["optimizer"]["lr"] == 0.1


def test_a_renamed_component_keeps_only_the_params_the_new_one_accepts():
    base = {"objective": {"name": "cl", "tau": 0.2}, "augment": {"name": "noise", "sigma": 0.1}}
    assert merge_run(base, {"objective": {"name": "nscl"}}, accepts)["objective"] == {
        "name": "nscl", "tau": 0.2}
    assert merge_run(base, {"objective": {"name": "ce"}}, accepts)["objective"] == {"name": "ce"}
    assert merge_run(base, {"augment": {"name": "crop", "size": 8}}, accepts)["augment"] == {
        "name": "crop", "size": 8}
    assert merge_run(base, {"augment": {"name": "mystery"}}, accepts)["augment"] == {
        "name": "mystery", "sigma": 0.1}  # unknown component: nothing dropped
    same = merge_run(base, {"objective": {"name": "cl", "tau": 0.5}}, accepts)
    assert same["objective"] == {"name": "cl", "tau": 0.5}
    assert deep_merge(base["objective"], {"name": "ce"}) == {"name": "ce", "tau": 0.2}  # no rule


def test_merge_run_only_filters_component_keys():
    base = {"train": {"steps": 3, "name": "x"}, "tags": {"a": 1}}
    out = merge_run(base, {"train": {"name": "y"}, "tags": {"b": 2}, "metrics": [{"name": "m"}]},
                    accepts)
    assert out == {"train": {"steps": 3, "name": "y"}, "tags": {"a": 1, "b": 2},
                   "metrics": [{"name": "m"}]}


def test_assign_a_grid_value():
    spec = {"objective": {"name": "cl", "tau": 0.2}, "optimizer": {"name": "sgd", "lr": 0.1}}
    assign(spec, "objective.name", "ce", accepts)
    assert spec["objective"] == {"name": "ce"}
    assign(spec, "objective", {"name": "nscl", "pos": True}, accepts)
    assert spec["objective"] == {"name": "nscl", "pos": True}
    assign(spec, "optimizer.lr", 0.5, accepts)
    assign(spec, "train.steps", 7, accepts)
    assert spec["optimizer"] == {"name": "sgd", "lr": 0.5} and spec["train"] == {"steps": 7}


def test_dotted_keys():
    doc = {"a": {"b": 1}, "s": "scalar"}
    set_dotted(doc, "a.c.d", [1])
    set_dotted(doc, "s.t", 2)  # a scalar on the way becomes a mapping
    assert doc == {"a": {"b": 1, "c": {"d": [1]}}, "s": {"t": 2}}
    assert get_dotted(doc, "a.c.d") == [1] and get_dotted(doc, "a.b") == 1
    assert get_dotted(doc, "a.x") is None and get_dotted(doc, "a.b.c") is None


class TauParams(Params):
    tau: float = Field(0.5)


def test_accepts_of_a_registry():
    reg = Registry()
    reg.add(Entry("objectives", "cl", lambda p, c: None, TauParams, ""))
    found = accepts_of(reg)
    assert found("objectives", "cl") == {"name", "tau"}
    assert found("objectives", "nope") is None and found("objectives", 3) is None


@pytest.mark.parametrize("arms, names", [({}, ["main"]), ({"a": {}, "b": {}}, ["a", "b"])])
def test_profile_view(arms, names):
    suite = Suite.model_validate({
        "name": "s", "base": {"objective": {"name": "cl", "tau": 0.2}}, "arms": arms,
        "profiles": {"full": {"base": {"objective": {"name": "ce"}}}}})
    loaded = LoadedSuite("s.yaml", suite, {})
    plain = profile_view(loaded, "smoke", None, accepts)
    full = profile_view(loaded, "full", suite.profiles["full"], accepts)
    assert plain.base == {"objective": {"name": "cl", "tau": 0.2}}
    assert full.base == {"objective": {"name": "ce"}} and full.loc == ("profiles", "full")
    assert list(full.arms) == names and all(v == {} for v in full.arms.values())
