"""Pydantic models of a run spec, a suite and its leaderboard (schema: docs/suites.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

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
    model_config = ConfigDict(extra="forbid")


class TrainSpec(Strict):
    steps: int | None = Field(None, ge=0, description="optimizer steps")
    epochs: int | None = Field(None, ge=1, description="epochs (alternative to steps)")
    lr_schedule: Literal["constant", "warmup_cosine"] = "constant"
    warmup_steps: int = Field(0, ge=0)
    clip_grad: float | None = Field(None, gt=0, description="max global gradient norm")
    lr_scaling: Literal["none", "linear", "sqrt", "fourth_root"] = "none"
    base_batch_size: int = Field(256, ge=1)
    device: Literal["auto", "cpu", "cuda"] = "auto"
    precision: Literal["fp32", "bf16"] = Field(
        "fp32", description="bf16: autocast the training step (metrics stay in fp32/fp64)")
    channels_last: bool = Field(False, description="channels-last memory format for images")
    compile: bool = Field(False, description="torch.compile the forward pass and loss")

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


class Profile(Strict):
    base: dict[str, Any] = Field(default_factory=dict)
    arms: dict[str, dict[str, Any]] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    zip: list[dict[str, list[Any]]] | None = None
    exclude: list[dict[str, Any]] | None = None
    seeds: int | list[int] | None = None


class LeaderboardMetric(Strict):
    key: str = Field(description="<metric>.<field>, or <arm>/<metric>.<field>")
    label: str | None = None
    stat: Literal["last", "first", "min", "max", "mean"] = "last"
    agg: Literal["mean", "median"] = "mean"
    better: Literal["higher", "lower"] | None = None
    fmt: str = ".4g"


class PlotSpec(Strict):
    key: str = Field(description="series to plot: <metric>.<field>")
    logy: bool = Field(False, description="logarithmic y axis")
    where: dict[str, Any] = Field(default_factory=dict,
                                  description="plot only cells with these config values")


class LeaderboardSpec(Strict):
    rows: list[str] | None = None
    columns: str | None = None
    metrics: list[LeaderboardMetric] = Field(default_factory=list)
    plots: list[str | PlotSpec] = Field(default_factory=list)


class Suite(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    description: str = ""
    base: dict[str, Any]
    arms: dict[str, dict[str, Any]] = Field(default_factory=dict)
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    zip: list[dict[str, list[Any]]] = Field(default_factory=list)
    exclude: list[dict[str, Any]] = Field(default_factory=list)
    seeds: int | list[int] = 1
    profiles: dict[str, Profile] = Field(default_factory=dict)
    leaderboard: LeaderboardSpec = Field(default_factory=LeaderboardSpec)
    executor: ComponentSpec | None = Field(
        None, description="default executor of the suite, e.g. {name: ray, num_gpus: 1}")

    @model_validator(mode="after")
    def _arms(self) -> Suite:
        if len(self.arms) == 1:
            raise ValueError("'arms' needs two or more arms (leave it out for a single arm)")
        return self
