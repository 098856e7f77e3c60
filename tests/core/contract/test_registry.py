"""The registry (geobench.contract.registry): lookups with did-you-mean, all-or-nothing
merges, building and validating specs, entries' field docs and parameter rows."""

import pytest
import torch
from pydantic import Field, ValidationError

from geobench.contract.interfaces import BuildContext, FieldDoc, Params
from geobench.contract.registry import EmptyParams, Entry, Registry, RegistryError
from geobench.contract.spec import Component

CTX = BuildContext(seed=0, device=torch.device("cpu"))


class ScaleParams(Params):
    factor: float = Field(2.0, gt=0, description="multiplier")
    label: str | None = None
    count: int = Field(description="how many")


def _entry(name="scale", kind="heads", origin="p (dist)", **kw) -> Entry:
    return Entry(kind, name, lambda p, ctx: ("built", p), ScaleParams, "doc", origin, **kw)


def test_get_names_and_did_you_mean():
    reg = Registry()
    reg.add(_entry("scale"))
    reg.add(_entry("shift"))
    assert reg.names("heads") == ["scale", "shift"] and reg.names("metrics") == []
    assert reg.get("heads", "scale").name == "scale"
    with pytest.raises(RegistryError, match=r"^'scael' is not a registered head \(did you mean "
                                            r"'scale'\?\); registered: scale, shift$"):
        reg.get("heads", "scael")
    with pytest.raises(RegistryError, match="registered: none$"):
        reg.get("metrics", "x")
    with pytest.raises(RegistryError, match=r"unknown component kind 'head' \(did you mean "
                                            r"'heads'\?\)"):
        reg.get("head", "scale")


def test_merge_adds_all_or_nothing():
    reg, other = Registry(), Registry()
    reg.add(_entry("taken", origin="a"))
    other.add(_entry("fresh", origin="b"))
    other.add(_entry("taken", origin="b"))
    with pytest.raises(RegistryError, match="head 'taken' is registered twice: by a and by b"):
        reg.merge(other)
    assert reg.names("heads") == ["taken"]
    mine = Registry()
    mine.add(_entry("fresh", origin="b"))
    reg.merge(mine)
    assert reg.names("heads") == ["fresh", "taken"]


def test_build_and_validate_check_the_params_model():
    reg = Registry()
    reg.add(_entry())
    kind, params = reg.build("heads", {"name": "scale", "count": 3}, CTX)
    assert kind == "built" and params == ScaleParams(count=3) and params.factor == 2.0
    assert reg.validate("heads", {"name": "scale", "count": 1, "factor": 0.5}).factor == 0.5
    with pytest.raises(ValidationError):
        reg.validate("heads", {"name": "scale", "count": 1, "factor": 0})
    with pytest.raises(RegistryError, match=r"missing 'name' \(a registered head\)"):
        reg.validate("heads", {"count": 1})


def test_create_revalidates_params_of_another_model():
    class Foreign(Params):  # the same fields, as a worker with other plugins sees them
        factor: float = 2.0
        label: str | None = None
        count: int = 1

    reg = Registry()
    reg.add(_entry())
    _, same = reg.create("heads", Component("scale", ScaleParams(count=4)), CTX)
    assert type(same) is ScaleParams and same.count == 4
    _, converted = reg.create("heads", Component("scale", Foreign(count=5, factor=3.0)), CTX)
    assert type(converted) is ScaleParams and (converted.count, converted.factor) == (5, 3.0)


def test_field_docs_by_name_then_by_pattern():
    exact, pattern = FieldDoc("exact"), FieldDoc("any accuracy", "fraction", "higher")
    entry = _entry(fields={"acc_0": exact, "acc_*": pattern})
    assert entry.field_doc("acc_0") is exact and entry.field_doc("acc_50") is pattern
    assert entry.field_doc("loss") is None


def test_param_rows():
    rows = {r["name"]: r for r in _entry().param_rows()}
    assert rows["factor"] == {"name": "factor", "type": "float", "default": "2.0",
                              "doc": "multiplier", "constraints": {"gt": 0}}
    assert rows["label"]["type"] == "str | None" and rows["label"]["default"] == "None"
    assert rows["count"]["default"] == "required" and rows["count"]["doc"] == "how many"
    assert Entry("heads", "x", lambda p, c: None, EmptyParams, "").param_rows() == []
