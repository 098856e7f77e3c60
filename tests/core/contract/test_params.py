"""The torch-free parameter models (geobench.contract.param_models) and nested component fields."""

from typing import Annotated, Any

import pytest
from pydantic import ValidationError

from geobench.contract.param_models import (
    DataParams,
    FieldDoc,
    MetricParams,
    Nested,
    Params,
    nested_kinds,
    nested_specs,
)


def test_params_are_frozen_and_refuse_unknown_fields():
    p = DataParams()
    with pytest.raises(ValidationError):
        p.batch_size = 3
    with pytest.raises(ValidationError, match="extra"):
        Params.model_validate({"x": 1})


def test_data_params_defaults_and_bounds():
    p = DataParams()
    assert (p.n_train, p.n_test, p.classes, p.reference_size, p.batch_size) == (
        None, None, None, 256, 128)
    assert DataParams(classes=[2, 0]).classes == [2, 0] and DataParams(classes=3).classes == 3
    for bad in ({"n_train": 0}, {"n_test": 0}, {"reference_size": 0}, {"batch_size": 0}):
        with pytest.raises(ValidationError):
            DataParams.model_validate(bad)


def test_metric_every_is_none_or_at_least_one():
    assert MetricParams().every is None and MetricParams(every=1).every == 1
    with pytest.raises(ValidationError):
        MetricParams(every=0)


def test_field_doc_defaults():
    doc = FieldDoc("held-out accuracy")
    assert (doc.unit, doc.direction) == ("", "diagnostic")


class WithMaps(Params):
    mirror_map: Annotated[dict[str, Any] | None, Nested("mirror_maps")] = None
    per_layer: Annotated[list[dict[str, Any]], Nested("mirror_maps")] = []
    lr: float = 0.1


def test_nested_kinds_are_the_marked_fields():
    assert nested_kinds(WithMaps) == {"mirror_map": "mirror_maps", "per_layer": "mirror_maps"}
    assert nested_kinds(DataParams) == {}


class Shapes(Params):
    one: Annotated[dict[str, Any] | None, Nested("mirror_maps")] = None
    by_name: Annotated[dict[str, dict[str, Any]], Nested("mirror_maps")] = {}
    listed: Annotated[list[dict[str, Any]], Nested("mirror_maps")] = []
    frozen: Annotated[tuple[dict[str, Any], ...], Nested("mirror_maps")] = ()


def test_nested_specs_by_the_fields_type():
    one = {"name": "quartic", "p": 4}
    assert nested_specs(Shapes, "one", None) == []
    assert nested_specs(Shapes, "one", one) == [((), one)]
    assert nested_specs(Shapes, "one", {}) == [((), {})]  # a spec without name: refused later
    assert nested_specs(Shapes, "by_name", {"w": one, "name": {"name": "l2"}}) == [
        (("w",), one), (("name",), {"name": "l2"})]  # a key called 'name' is a key
    assert nested_specs(Shapes, "listed", [one, {"name": "l2"}]) == [
        ((0,), one), ((1,), {"name": "l2"})]
    assert nested_specs(Shapes, "frozen", (one,)) == [((0,), one)]
