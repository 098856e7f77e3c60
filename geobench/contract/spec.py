"""The run-spec types: one arm's run as a suite file writes it (``RunSpec``, pydantic) and
as the engine receives it (``ArmSpec``, every component validated and typed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationInfo,
    field_validator,
    model_validator,
)

from geobench.contract.param_models import MAX_COUNT

ComponentSpec = dict[str, Any]  # {name: <registered name>, **params}
COMPONENT_KINDS = {
    "data": "datasets",
    "augment": "augmentations",
    "backbone": "backbones",
    "head": "heads",
    "objective": "objectives",
    "optimizer": "optimizers",
    "init": "inits",
}
SHARED_ACROSS_ARMS = ("data", "augment", "train")


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class TrainSpec(Strict):
    steps: StrictInt | None = Field(None, ge=1, le=MAX_COUNT, description="optimizer steps")
    epochs: StrictInt | None = Field(None, ge=1, le=MAX_COUNT,
                                     description="epochs (alternative to steps)")
    lr_schedule: Literal["constant", "warmup_cosine"] = "constant"
    warmup_steps: StrictInt = Field(0, ge=0, le=MAX_COUNT, description="at most steps")
    clip_grad: float | None = Field(None, gt=0, description="max global gradient norm")
    lr_scaling: Literal["none", "linear", "sqrt", "fourth_root"] = "none"
    base_batch_size: StrictInt = Field(256, ge=1, le=MAX_COUNT)
    device: Literal["auto", "cpu", "cuda"] = "auto"
    precision: Literal["fp32", "tf32", "bf16"] = Field(
        "fp32", description="fp32: torch's defaults (on GPUs TF32 convolutions, fp32 "
        "matmuls); tf32: TF32 matmuls too; bf16: autocast the training step to bfloat16 "
        "(metrics run in full fp32/fp64 under every setting)")
    channels_last: bool = Field(False, description="channels-last memory format for images")
    compile: bool = Field(False, description="torch.compile the forward pass and loss")
    max_loss_ratio: float | None = Field(
        1e4, gt=1, allow_inf_nan=False,
        description="divergence guard: a step whose |loss| exceeds this times the initial "
                    "|loss| ends the arm as diverged (null: only non-finite values do)")

    @field_validator("warmup_steps")
    @classmethod
    def _warmup_within(cls, warmup: int, info: ValidationInfo) -> int:
        steps = info.data.get("steps")
        if steps is not None and warmup > steps:
            raise ValueError(f"warmup_steps is at most steps ({steps})")
        return warmup

    @model_validator(mode="after")
    def _one_length(self) -> TrainSpec:
        if (self.steps is None) == (self.epochs is None):
            raise ValueError("give exactly one of 'steps' or 'epochs'")
        return self


class RunSpec(Strict):
    """One arm's fully specified run: components by name plus the training schedule."""

    data: ComponentSpec
    augment: ComponentSpec = Field(default_factory=lambda: {"name": "none"})
    backbone: ComponentSpec
    head: ComponentSpec = Field(default_factory=lambda: {"name": "identity"})
    objective: ComponentSpec
    optimizer: ComponentSpec
    init: ComponentSpec | None = None
    train: TrainSpec
    metrics: list[ComponentSpec] = Field(default_factory=list)
    tags: dict[str, str | int | float | bool] = Field(default_factory=dict)
    replicate: int = Field(
        0, ge=0, le=MAX_COUNT, description="0: the arm shares the trial seed's initial "
        "weights, batch order and views with the other arms (lockstep); k > 0: an independent "
        "replicate drawing them from its own streams (a control such as CL vs CL')")


@dataclass(frozen=True)
class Component:
    """A validated component: its registered name, its params model and (for a metric) its
    instance id. What the engine builds from; the cell's JSON record holds the same values."""

    name: str
    params: BaseModel
    id: str | None = None


@dataclass(frozen=True)
class ArmSpec:
    """One arm's run spec as the engine receives it: every component validated and typed."""

    data: Component
    augment: Component
    backbone: Component
    head: Component
    objective: Component
    optimizer: Component
    init: Component | None
    train: TrainSpec
    metrics: tuple[Component, ...]
    replicate: int = 0


