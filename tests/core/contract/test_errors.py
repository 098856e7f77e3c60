"""One-line validation messages (geobench.contract.errors): each pydantic error kind, the
did-you-mean, and where an error lies in the data."""

from typing import Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from geobench.contract.errors import describe_validation_error, did_you_mean, error_loc


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    width: int = 1
    depth: int = 1


class Outer(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["fast", "slow"] = "fast"
    inner: Inner = Field(default_factory=Inner)
    count: int = Field(1, gt=0)
    seeds: int | list[int] = 1
    name: str


def _first(data):
    with pytest.raises(ValidationError) as info:
        Outer.model_validate(data)
    return info.value.errors()[0]


def test_did_you_mean():
    assert did_you_mean("widht", ["width", "depth"]) == " (did you mean 'width'?)"
    assert did_you_mean("zzz", ["width", "depth"]) == ""
    assert did_you_mean(3, ["3x"]) == " (did you mean '3x'?)"


def test_literal_error_lists_the_allowed_values():
    err = _first({"name": "a", "mode": "fsat"})
    assert describe_validation_error(err, Outer) == (
        "'fsat' is not an allowed mode (did you mean 'fast'?); allowed: fast, slow")


def test_unknown_field_names_the_allowed_fields_of_its_own_model():
    err = _first({"name": "a", "inner": {"widht": 3}})
    assert describe_validation_error(err, Outer) == (
        "unknown field 'widht' (did you mean 'width'?); allowed: width, depth")
    assert describe_validation_error(err) == "unknown field 'widht'"  # no model: no fields


def test_missing_and_other_errors():
    assert describe_validation_error(_first({})) == "missing required field 'name'"
    err = _first({"name": "a", "count": -2})
    assert describe_validation_error(err, Outer) == "Input should be greater than 0 (got -2)"
    long = _first({"name": "a", "count": "x" * 100})
    text = describe_validation_error(long, Outer)
    assert text.endswith("...)") and len(text.split("(got ")[1]) == 61  # 60 characters + ")"


def test_error_loc_cuts_the_path_where_the_data_ends():
    data = {"name": "a", "seeds": "many"}
    err = _first(data)  # pydantic's loc names the union member: ('seeds', 'int')
    assert err["loc"][0] == "seeds" and len(err["loc"]) > 1
    assert error_loc(err, data) == ("seeds",)
    data = {"name": "a", "seeds": [1, "x"]}
    (err,) = [e for e in _errors(data) if e["loc"][:2] == ("seeds", "list[int]")]
    assert err["loc"] == ("seeds", "list[int]", 1)
    assert error_loc(err, data) == ("seeds",)  # cut at the member tag, no key of the data
    assert error_loc({"loc": ("inner", "width")}, {"inner": {"width": "x"}}) == ("inner",
                                                                                 "width")
    assert error_loc({"type": "missing", "loc": ("inner", "gone")}, {}) == ("inner", "gone")


def _errors(data):
    with pytest.raises(ValidationError) as info:
        Outer.model_validate(data)
    return info.value.errors()
