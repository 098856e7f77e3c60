"""The torch-free part of the plugin contract: parameter models and metric field docs.

Registering a component needs only these, so listing components never imports torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class Params(BaseModel):
    """Base of every component's parameter model: unknown fields are errors."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class DataParams(Params):
    """Parameters every dataset accepts."""

    n_train: int | None = Field(None, ge=1, description="training samples (None: all)")
    n_test: int | None = Field(None, ge=1, description="held-out samples (None: all)")
    classes: int | list[int] | None = Field(
        None, description="class subset: a count C' (sampled from the seed) or explicit ids"
    )
    reference_size: int = Field(256, ge=1, description="fixed reference set for metrics")
    batch_size: int = Field(128, ge=1, description="training batch size")


class MetricParams(Params):
    """Parameters every metric accepts."""

    every: int | None = Field(
        None, ge=1, description="evaluate at steps 0, every, 2*every, ...; always at the end"
    )


Direction = Literal["higher", "lower", "diagnostic"]


@dataclass(frozen=True)
class FieldDoc:
    """What one field of a metric measures: a description, its unit ("" when
    dimensionless) and which way is better (``diagnostic``: neither)."""

    description: str
    unit: str = ""
    direction: Direction = "diagnostic"
