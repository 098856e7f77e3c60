"""Every registered metric documents its fields: description, unit and direction."""

from __future__ import annotations

import json

import pytest

from geobench.cli import main
from geobench.contract.interfaces import FieldDoc
from geobench.contract.manager import registry

DIRECTIONS = {"higher", "lower", "diagnostic"}
METRICS = registry().names("metrics")


def test_there_are_metrics() -> None:
    assert len(METRICS) > 10


@pytest.mark.parametrize("name", METRICS)
def test_every_metric_documents_its_fields(name: str) -> None:
    fields = registry().get("metrics", name).fields
    assert fields, f"metric {name!r} declares no fields"
    for field, doc in fields.items():
        assert isinstance(doc, FieldDoc), (name, field)
        assert doc.description.strip(), f"{name}.{field} has no description"
        assert isinstance(doc.unit, str), (name, field)
        assert doc.direction in DIRECTIONS, f"{name}.{field}: direction {doc.direction!r}"


@pytest.mark.parametrize(("metric", "field"), [
    ("pruning_curve", "acc_50"),
    ("pruning_curve", "acc_0"),
    ("neuron_histogram", "bin_3"),
    ("balance", "q_0"),
])
def test_dynamic_field_names_resolve_through_patterns(metric: str, field: str) -> None:
    entry = registry().get("metrics", metric)
    assert field not in entry.fields
    doc = entry.field_doc(field)
    assert doc is not None and doc.description


def test_directions_as_declared() -> None:
    reg = registry()
    assert reg.get("metrics", "pruning_curve").field_doc("acc_50").direction == "higher"
    assert reg.get("metrics", "linear_probe").field_doc("accuracy").direction == "higher"
    assert reg.get("metrics", "eval_loss").field_doc("value").direction == "lower"
    assert reg.get("metrics", "kkt_residual").field_doc("residual_min").direction == "lower"
    assert reg.get("metrics", "effective_hessian").field_doc("K_lambda_min").direction == (
        "diagnostic")
    assert reg.get("metrics", "balance").field_doc("drift").direction == "diagnostic"
    assert reg.get("metrics", "balance").field_doc("nonexistent") is None


def test_list_shows_what_each_metric_field_measures(capsys):
    assert main(["list", "metrics"]) == 0
    out = capsys.readouterr().out
    assert "-> accuracy [fraction] (higher): held-out accuracy" in out
    assert main(["list", "metrics", "--json"]) == 0
    rows = {r["name"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert rows["hessian_tracking"]["fields"]["K_lambda_min"]["direction"] == "diagnostic"
