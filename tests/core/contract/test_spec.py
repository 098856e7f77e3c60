"""The run-spec types (geobench.contract.spec): TrainSpec's length and schedule rules,
RunSpec's defaults and strictness, the frozen typed forms."""

import dataclasses

import pytest
from pydantic import ValidationError

from geobench.contract.hooks import KINDS
from geobench.contract.registry import EmptyParams
from geobench.contract.spec import (
    COMPONENT_KINDS,
    SHARED_ACROSS_ARMS,
    ArmSpec,
    Component,
    RunSpec,
    TrainSpec,
)

RUN = {"data": {"name": "d"}, "backbone": {"name": "b"}, "objective": {"name": "o"},
       "optimizer": {"name": "sgd", "lr": 0.1}, "train": {"steps": 5}}


def _error(model, data) -> str:
    with pytest.raises(ValidationError) as info:
        model.model_validate(data)
    return str(info.value)


@pytest.mark.parametrize("train", [{}, {"steps": 3, "epochs": 2}])
def test_exactly_one_of_steps_or_epochs(train):
    assert "give exactly one of 'steps' or 'epochs'" in _error(TrainSpec, train)


def test_steps_and_epochs_are_strict_positive_integers():
    assert TrainSpec(steps=1).steps == 1 and TrainSpec(epochs=2).epochs == 2
    for bad in (0, -3, 2.0, "4", True):
        with pytest.raises(ValidationError):
            TrainSpec.model_validate({"steps": bad})
        with pytest.raises(ValidationError):
            TrainSpec.model_validate({"epochs": bad})


def test_warmup_is_at_most_steps():
    assert TrainSpec(steps=10, warmup_steps=10).warmup_steps == 10
    assert "warmup_steps is at most steps (10)" in _error(TrainSpec, {"steps": 10,
                                                                      "warmup_steps": 11})
    assert TrainSpec(epochs=1, warmup_steps=500).warmup_steps == 500  # steps unknown here
    with pytest.raises(ValidationError):
        TrainSpec(steps=10, warmup_steps=-1)


def test_defaults_and_bounds():
    t = TrainSpec(steps=3)
    assert (t.lr_schedule, t.warmup_steps, t.clip_grad, t.lr_scaling, t.base_batch_size,
            t.device, t.precision, t.max_loss_ratio) == ("constant", 0, None, "none", 256,
                                                          "auto", "fp32", 1e4)
    assert TrainSpec(steps=3, max_loss_ratio=None).max_loss_ratio is None
    for bad in ({"clip_grad": 0.0}, {"max_loss_ratio": 1.0}, {"max_loss_ratio": float("inf")},
                {"clip_grad": float("nan")}, {"device": "tpu"}, {"lr_schedule": "cosine"},
                {"stepz": 3}):
        with pytest.raises(ValidationError):
            TrainSpec.model_validate({"steps": 3, **bad})


def test_run_spec_defaults():
    run = RunSpec.model_validate(RUN)
    assert run.augment == {"name": "none"} and run.head == {"name": "identity"}
    assert (run.init, run.metrics, run.tags, run.replicate) == (None, [], {}, 0)
    assert run.train.steps == 5


@pytest.mark.parametrize("change", [{"replicate": -1}, {"optimiser": {"name": "sgd"}},
                                    {"tags": {"x": {"nested": 1}}}, {"train": {"steps": 0}}])
def test_run_spec_refuses(change):
    with pytest.raises(ValidationError):
        RunSpec.model_validate({**RUN, **change})


@pytest.mark.parametrize("missing", ["data", "backbone", "objective", "optimizer", "train"])
def test_run_spec_requires(missing):
    data = {k: v for k, v in RUN.items() if k != missing}
    assert "Field required" in _error(RunSpec, data)


def test_component_keys_name_registry_kinds_and_shared_keys_are_run_spec_keys():
    assert set(COMPONENT_KINDS.values()) <= set(KINDS)
    assert set(COMPONENT_KINDS) | set(SHARED_ACROSS_ARMS) <= set(RunSpec.model_fields)


def test_typed_forms_are_frozen():
    comp = Component("sgd", EmptyParams())
    with pytest.raises(dataclasses.FrozenInstanceError):
        comp.name = "adam"
    arm = ArmSpec(comp, comp, comp, comp, comp, comp, None, TrainSpec(steps=1), ())
    assert arm.replicate == 0 and comp.id is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        arm.replicate = 1
